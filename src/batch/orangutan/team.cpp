#include "batch/orangutan/team.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace duet::batch::orangutan {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}
}  // namespace

Team::Team(unsigned threads, TeamSync sync)
    : n_(threads ? threads : std::max(1u, std::thread::hardware_concurrency())) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  spin_ = n_ <= hw ? 1u << 14 : 64;
  spread_ = sync == TeamSync::kSpread || (sync == TeamSync::kAuto && n_ <= hw);
  while ((1u << rounds_) < n_) ++rounds_;
  done_ = std::make_unique<Flag[]>(n_);
  signal_ = std::make_unique<Flag[]>(std::size_t{n_} * kMaxRounds);
  epoch_ = std::make_unique<std::uint32_t[]>(n_);
  for (unsigned i = 0; i < n_; ++i) epoch_[i] = 0;
  threads_.reserve(n_ - 1);
  for (unsigned i = 1; i < n_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

Team::~Team() {
  stop_ = true;
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (auto& t : threads_) t.join();
}

template <class T>
void Team::wait_while_equal(const std::atomic<T>& a, T value) const {
  for (unsigned i = 0; i < spin_; ++i) {
    if (a.load(std::memory_order_acquire) != value) return;
    cpu_relax();
  }
  // Then give the core away a few times (a preempted member may be waiting for it) before
  // sleeping on the futex.
  for (unsigned i = 0; i < 32; ++i) {
    if (a.load(std::memory_order_acquire) != value) return;
    std::this_thread::yield();
  }
  while (a.load(std::memory_order_acquire) == value) a.wait(value, std::memory_order_acquire);
}

void Team::run_erased(void (*fn)(void*, unsigned), void* ctx) {
  if (n_ == 1) {
    fn(ctx, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  finished_.store(0, std::memory_order_relaxed);
  const std::uint32_t gen = generation_.fetch_add(1, std::memory_order_release) + 1;
  generation_.notify_all();
  fn(ctx, 0);
  if (!spread_) {
    for (;;) {
      const std::uint32_t d = finished_.load(std::memory_order_acquire);
      if (d == n_ - 1) return;
      wait_while_equal(finished_, d);
    }
  }
  // Each worker's flag moves from gen - 1 to gen when it has finished.
  for (unsigned m = 1; m < n_; ++m) {
    std::atomic<std::uint32_t>& d = done_[m].v;
    while (d.load(std::memory_order_acquire) != gen) wait_while_equal(d, gen - 1);
  }
}

void Team::worker(unsigned id) {
  std::uint32_t seen = 0;
  for (;;) {
    wait_while_equal(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    fn_(ctx_, id);
    if (!spread_) {
      if (finished_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_ - 1) finished_.notify_one();
      continue;
    }
    done_[id].v.store(seen, std::memory_order_release);
    done_[id].v.notify_one();
  }
}

void Team::barrier(unsigned m) {
  if (n_ == 1) return;
  if (!spread_) {
    const std::uint32_t ph = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(ph + 1, std::memory_order_release);
      phase_.notify_all();
      return;
    }
    wait_while_equal(phase_, ph);
    return;
  }
  const std::uint32_t e = ++epoch_[m];
  for (unsigned r = 0; r < rounds_; ++r) {
    const unsigned to = (m + (1u << r)) % n_;
    std::atomic<std::uint32_t>& out = signal_[std::size_t{to} * kMaxRounds + r].v;
    out.store(e, std::memory_order_release);
    out.notify_one();
    // The sender of this slot is at most one barrier ahead (it cannot pass barrier e + 1
    // before this member arrives at it), so "at least e" is (signed) e - value <= 0.
    std::atomic<std::uint32_t>& in = signal_[std::size_t{m} * kMaxRounds + r].v;
    for (;;) {
      const std::uint32_t v = in.load(std::memory_order_acquire);
      if (static_cast<std::int32_t>(e - v) <= 0) break;
      wait_while_equal(in, v);
    }
  }
}

}  // namespace duet::batch::orangutan
