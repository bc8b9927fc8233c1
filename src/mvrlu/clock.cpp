#include "mvrlu/clock.hpp"

#include "common/log.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <thread>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace duet::mvrlu::detail {

bool tsc_invariant() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) == 0 || a < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &a, &b, &c, &d) == 0) return false;
  return (d >> 8) & 1u;
#else
  return false;
#endif
}

namespace {
/// rdtscp waits for earlier instructions and the lfence keeps later ones from starting before
/// it. 0 off x86-64.
std::uint64_t raw_tsc() {
#if defined(__x86_64__)
  unsigned aux = 0;
  const std::uint64_t t = __rdtscp(&aux);
  _mm_lfence();
  return t;
#else
  return 0;
#endif
}
}  // namespace

std::uint64_t Clock::tsc_now() {
#if defined(__x86_64__)
  // The fence orders every earlier load and store before the read (the commit protocol's
  // argument needs it: docs/mvrlu.md, "Fences").
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return raw_tsc();
#else
  return 0;
#endif
}

std::uint64_t Clock::tsc_unfenced() { return raw_tsc(); }

void Clock::init(Kind kind, std::uint64_t boundary, std::vector<std::int64_t> skew) {
  kind_ = kind;
  boundary_ = kind == Kind::kCounter ? 0 : boundary;
  skew_ = std::move(skew);
}

void Clock::wait_past(unsigned slot, std::uint64_t ts) {
  if (kind_ == Kind::kCounter) return;
  const std::uint64_t target = ts + boundary_;
  // The wait orders nothing: only the clock's value matters, so no fence per poll.
  while ((kind_ == Kind::kTsc ? tsc_unfenced() : now(slot)) < target) {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
}

namespace {

/// One ordered pair's measurement: the minimum of (j's TSC after seeing i's) - (i's TSC).
struct PairProbe {
  alignas(64) std::atomic<std::uint64_t> sent{0};
  alignas(64) std::atomic<std::uint64_t> ack{0};
};

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/// Returns max(min over rounds of t_j - t_i, min over rounds of t_i - t_j), clamped at 0.
std::int64_t probe_pair(int ci, int cj, bool* pinned) {
  constexpr int kRounds = 300;
  PairProbe p;
  std::int64_t best_ij = INT64_MAX, best_ji = INT64_MAX;
  std::thread other([&] {
    if (cj >= 0 && !pin(cj)) *pinned = false;
    for (int r = 1; r <= 2 * kRounds; ++r) {
      if (r % 2 == 1) {  // receive from i
        std::uint64_t v;
        long spins = 0;
        while ((v = p.sent.load(std::memory_order_acquire)) == 0) {
          if (++spins > (1l << 26)) return;
        }
        const std::uint64_t t = raw_tsc();
        best_ij = std::min(best_ij, static_cast<std::int64_t>(t - v));
        p.sent.store(0, std::memory_order_relaxed);
        p.ack.store(static_cast<std::uint64_t>(r), std::memory_order_release);
      } else {  // send to i
        p.sent.store(raw_tsc(), std::memory_order_release);
        long spins = 0;
        while (p.ack.load(std::memory_order_acquire) != static_cast<std::uint64_t>(r)) {
          if (++spins > (1l << 26)) return;
        }
      }
    }
  });
  if (ci >= 0 && !pin(ci)) *pinned = false;
  for (int r = 1; r <= 2 * kRounds; ++r) {
    long spins = 0;
    if (r % 2 == 1) {
      p.sent.store(raw_tsc(), std::memory_order_release);
      while (p.ack.load(std::memory_order_acquire) != static_cast<std::uint64_t>(r)) {
        if (++spins > (1l << 26)) break;
      }
    } else {
      std::uint64_t v;
      while ((v = p.sent.load(std::memory_order_acquire)) == 0) {
        if (++spins > (1l << 26)) break;
      }
      const std::uint64_t t = raw_tsc();
      best_ji = std::min(best_ji, static_cast<std::int64_t>(t - v));
      p.sent.store(0, std::memory_order_relaxed);
      p.ack.store(static_cast<std::uint64_t>(r), std::memory_order_release);
    }
  }
  other.join();
  return std::max<std::int64_t>({best_ij == INT64_MAX ? 0 : best_ij, best_ji == INT64_MAX ? 0 : best_ji, 0});
}

}  // namespace

std::uint64_t measure_ordo_boundary(std::string* detail) {
  static std::once_flag once;
  static std::uint64_t boundary = 0;
  static std::string text;
  std::call_once(once, [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int c = 0; c < CPU_SETSIZE && cpus.size() < 64; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    cpu_set_t saved = set;
    bool pinned = true;
    std::int64_t worst = 0;
    std::size_t pairs = 0;
    if (cpus.size() < 2) {
      worst = probe_pair(-1, -1, &pinned);
      pairs = 1;
      pinned = false;
    } else {
      for (std::size_t i = 0; i < cpus.size(); ++i)
        for (std::size_t j = i + 1; j < cpus.size(); ++j) {
          worst = std::max(worst, probe_pair(cpus[i], cpus[j], &pinned));
          ++pairs;
        }
      pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
    }
    boundary = static_cast<std::uint64_t>(worst);
    std::ostringstream o;
    o << "ORDO boundary " << boundary << " TSC ticks over " << pairs << " CPU pairs"
      << (pinned ? "" : " (threads could not be pinned: measured between unpinned threads)");
    text = o.str();
    log(LogLevel::kInfo, "mvrlu: " + text);
  });
  if (detail != nullptr) *detail = text;
  return boundary;
}

}  // namespace duet::mvrlu::detail
