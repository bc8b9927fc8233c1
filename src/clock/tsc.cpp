#include "clock/tsc.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "common/log.hpp"

namespace duet::clock {

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

Status tsc_clock_usable() {
  if (!tsc_invariant())
    return Status::InvalidArgument("clock tsc needs an x86-64 CPU with an invariant TSC; use the counter clock");
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(cs >> source) || source != "tsc")
    return Status::InvalidArgument("clock tsc needs the kernel's clocksource to be the TSC (it is '" +
                                   (source.empty() ? std::string("unknown") : source) +
                                   "'); use the counter clock");
  return Status::Ok();
}

namespace {

/// The two words a pair's probe passes values through, on separate lines.
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

}  // namespace

namespace {

/// One end of a pair's probe: 2 x rounds turns, sending its TSC on odd turns when `sends_first`
/// (else on even ones) and receiving on the others; *best gets the least (its TSC on receipt) -
/// (the value received). Returns early when the partner stops answering (about 2^26 polls).
void probe_side(PairProbe& p, int rounds, bool sends_first, std::int64_t* best) {
  constexpr long kMaxPolls = 1l << 26;
  for (int r = 1; r <= 2 * rounds; ++r) {
    long polls = 0;
    if ((r % 2 == 1) == sends_first) {
      p.sent.store(ordered_tsc(), std::memory_order_release);
      while (p.ack.load(std::memory_order_acquire) != static_cast<std::uint64_t>(r))
        if (++polls > kMaxPolls) return;
    } else {
      std::uint64_t v;
      while ((v = p.sent.load(std::memory_order_acquire)) == 0)
        if (++polls > kMaxPolls) return;
      *best = std::min(*best, static_cast<std::int64_t>(ordered_tsc() - v));
      p.sent.store(0, std::memory_order_relaxed);
      p.ack.store(static_cast<std::uint64_t>(r), std::memory_order_release);
    }
  }
}

}  // namespace

std::vector<int> allowed_cpus(std::size_t max) {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < max; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::int64_t ordo_pair_bound(int ci, int cj, int rounds, bool* pinned) {
  PairProbe p;
  std::int64_t best_ij = INT64_MAX, best_ji = INT64_MAX;
  std::thread other([&] {
    if (cj >= 0 && !pin(cj)) *pinned = false;
    probe_side(p, rounds, false, &best_ij);
  });
  // The caller's thread is the pair's other end: pinned here, its affinity restored below.
  cpu_set_t saved;
  const bool have_saved = sched_getaffinity(0, sizeof(saved), &saved) == 0;
  if (ci >= 0 && !pin(ci)) *pinned = false;
  probe_side(p, rounds, true, &best_ji);
  other.join();
  if (ci >= 0 && have_saved) pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
  return std::max<std::int64_t>({best_ij == INT64_MAX ? 0 : best_ij, best_ji == INT64_MAX ? 0 : best_ji, 0});
}

std::uint64_t measure_ordo_boundary(std::string* detail) {
  static std::once_flag once;
  static std::uint64_t boundary = 0;
  static std::string text;
  std::call_once(once, [] {
    const std::vector<int> cpus = allowed_cpus(64);
    bool pinned = true;
    std::int64_t worst = 0;
    std::size_t pairs = 0;
    if (cpus.size() < 2) {
      worst = ordo_pair_bound(-1, -1, 300, &pinned);
      pairs = 1;
      pinned = false;
    } else {
      for (std::size_t i = 0; i < cpus.size(); ++i)
        for (std::size_t j = i + 1; j < cpus.size(); ++j) {
          worst = std::max(worst, ordo_pair_bound(cpus[i], cpus[j], 300, &pinned));
          ++pairs;
        }
    }
    boundary = static_cast<std::uint64_t>(worst);
    std::ostringstream o;
    o << "ORDO boundary " << boundary << " TSC ticks over " << pairs << " CPU pairs"
      << (pinned ? "" : " (threads could not be pinned: measured between unpinned threads)");
    text = o.str();
    log(LogLevel::kInfo, "clock: " + text);
  });
  if (detail != nullptr) *detail = text;
  return boundary;
}

}  // namespace duet::clock
