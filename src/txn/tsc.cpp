#include "txn/tsc.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace duet::txn {

Status tsc_clock_usable() {
#if !defined(__x86_64__)
  return Status::InvalidArgument("clock tsc needs an x86-64 CPU; use the counter clock");
#else
  std::ifstream cs("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string source;
  if (!(cs >> source) || source != "tsc")
    return Status::InvalidArgument("clock tsc needs the kernel's clocksource to be the TSC (it is '" +
                                   (source.empty() ? std::string("unknown") : source) +
                                   "'); use the counter clock");
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line);
      bool constant = false, nonstop = false;
      for (std::string w; words >> w;) constant |= w == "constant_tsc", nonstop |= w == "nonstop_tsc";
      if (constant && nonstop) return Status::Ok();
      return Status::InvalidArgument("clock tsc needs an invariant TSC (constant_tsc and nonstop_tsc); use the counter clock");
    }
  return Status::InvalidArgument("clock tsc: cannot read the CPU flags from /proc/cpuinfo; use the counter clock");
#endif
}

std::vector<TscPair> measure_tsc_pairs(int rounds, std::size_t max_cpus) {
  std::vector<TscPair> out;
#if defined(__x86_64__)
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return out;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < max_cpus; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  auto pin = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  };
  for (int a : cpus)
    for (int b : cpus) {
      if (a == b) continue;
      alignas(64) std::atomic<std::uint64_t> word{0};
      std::int64_t best = INT64_MAX;
      std::thread receiver([&] {
        pin(b);
        for (int r = 0; r < rounds; ++r) {
          std::uint64_t v;
          while ((v = word.load(std::memory_order_acquire)) == 0) _mm_pause();
          best = std::min(best, static_cast<std::int64_t>(fenced_tsc() - v));
          word.store(0, std::memory_order_release);
        }
      });
      std::thread sender([&] {
        pin(a);
        for (int r = 0; r < rounds; ++r) {
          while (word.load(std::memory_order_acquire) != 0) _mm_pause();
          word.store(fenced_tsc(), std::memory_order_release);
        }
      });
      sender.join();
      receiver.join();
      out.push_back(TscPair{a, b, best});
    }
#else
  (void)rounds;
  (void)max_cpus;
#endif
  return out;
}

std::uint64_t measured_tsc_boundary() {
  static std::once_flag once;
  static std::uint64_t boundary = 0;
  std::call_once(once, [] {
#if defined(__x86_64__)
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
      boundary = std::uint64_t{1} << 20;  // cannot measure: the largest boundary allowed
      return;
    }
    std::int64_t worst = 0;
    for (const TscPair& p : measure_tsc_pairs(100, CPU_SETSIZE)) worst = std::max(worst, p.least);
    boundary = std::min<std::uint64_t>(static_cast<std::uint64_t>(worst), std::uint64_t{1} << 20);
#endif
  });
  return boundary;
}

}  // namespace duet::txn
