// Helpers of the MV-RLU suites. DUET_TEST_SCALE (a positive number, default 1) multiplies the
// operation counts and durations of the long runs, as in the kv suites.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "duet/mvrlu.hpp"

namespace duet::mvrlu::testing {

inline double test_scale() {
  const char* env = std::getenv("DUET_TEST_SCALE");
  if (env == nullptr || *env == '\0') return 1.0;
  const double v = std::strtod(env, nullptr);
  return v > 0 ? v : 1.0;
}

/// n scaled, at least `floor`.
inline std::uint64_t scaled(std::uint64_t n, std::uint64_t floor = 1) {
  const auto v = static_cast<std::uint64_t>(static_cast<double>(n) * test_scale());
  return v < floor ? floor : v;
}

/// A global event counter: invoke and response times of recorded histories.
inline std::atomic<std::uint64_t>& event_clock() {
  static std::atomic<std::uint64_t> c{1};
  return c;
}
inline std::uint64_t tick() { return event_clock().fetch_add(1, std::memory_order_seq_cst); }

/// drain(), retried while it gives up for time (kResourceExhausted after the domain's
/// wait_limit_ms), for up to 30 s in all. Tests that set a small wait_limit_ms to keep blocked
/// writers short would otherwise fail whenever a loaded machine deschedules the draining thread
/// for longer than the limit (seen with two test processes on 2 cores).
inline Status drain_patiently(Domain& d) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    Status s = d.drain();
    if (s.ok() || s.code() != StatusCode::kResourceExhausted || std::chrono::steady_clock::now() > deadline) return s;
  }
}

inline std::unique_ptr<Domain> make_domain(Config cfg) {
  std::unique_ptr<Domain> d;
  Status s = Domain::create(cfg, &d);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return d;
}

inline std::unique_ptr<Thread> make_thread(Domain& d) {
  std::unique_ptr<Thread> t;
  Status s = d.register_thread(&t);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return t;
}

/// A manual-GC, counter-clock configuration: deterministic tests drive every round.
inline Config manual_config() {
  Config c;
  c.gc = GcMode::kManual;
  c.clock = ClockMode::kCounter;
  c.max_threads = 8;
  c.log_bytes = 64 * 1024;
  c.poison_reclaimed = true;
  return c;
}

/// Runs one whole grace period and round in kManual (no section may stay open), then lets
/// every log process it.
inline void manual_round(Domain& d) {
  ASSERT_TRUE(d.begin_grace_period().ok());
  ASSERT_TRUE(d.finish_grace_period());
  d.collect_lagging();
}

}  // namespace duet::mvrlu::testing
