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

Team::Team(unsigned threads) : n_(threads ? threads : std::max(1u, std::thread::hardware_concurrency())) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  spin_ = n_ <= hw ? 1u << 14 : 64;
  threads_.reserve(n_ - 1);
  for (unsigned i = 1; i < n_; ++i) threads_.emplace_back([this, i] { worker(i); });
}

Team::~Team() {
  stop_ = true;
  done_.store(0, std::memory_order_relaxed);
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
  done_.store(0, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0);
  for (;;) {
    const std::uint32_t d = done_.load(std::memory_order_acquire);
    if (d == n_ - 1) break;
    wait_while_equal(done_, d);
  }
}

void Team::worker(unsigned id) {
  std::uint32_t seen = 0;
  for (;;) {
    wait_while_equal(generation_, seen);
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    fn_(ctx_, id);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_ - 1) done_.notify_one();
  }
}

void Team::barrier() {
  if (n_ == 1) return;
  const std::uint32_t ph = phase_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
    arrived_.store(0, std::memory_order_relaxed);
    phase_.store(ph + 1, std::memory_order_release);
    phase_.notify_all();
    return;
  }
  wait_while_equal(phase_, ph);
}

}  // namespace duet::batch::orangutan
