// MV-RLU's clock: ORDO on an invariant TSC, a global counter, or a logical test clock with
// per-thread skew. One interface, so the commit protocol and the GC are written once.
//
// ORDO (Kashyap et al., EuroSys'18): clocks of two cores differ by at most the boundary B.
//   local-ts  = now()                   (section start)
//   commit-ts = now() + B               (new_time: later than every clock at that instant)
//   gc-ts     = now() - B               (earlier than every clock at that instant)
//   commit wait: spin until now() >= commit-ts + B; then every clock has passed commit-ts,
//   so a section that starts after the commit returned has local-ts >= commit-ts.
// The counter has B = 0: now() is a load, commit-ts a fetch_add, and the wait is empty.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "clock/tsc.hpp"
#include "duet/mvrlu.hpp"

namespace duet::mvrlu::detail {

// The invariant-TSC check and ORDO's boundary measurement (once per process) are shared with
// the txn keyspace's TSC clock: src/clock/tsc.hpp.
using clock::measure_ordo_boundary;
using clock::tsc_invariant;

class Clock {
 public:
  enum class Kind { kTsc, kCounter, kTest };

  void init(Kind kind, std::uint64_t boundary, std::vector<std::int64_t> skew);
  Kind kind() const { return kind_; }
  std::uint64_t boundary() const { return boundary_; }

  /// A timestamp read after every earlier memory access of the caller (full fence first).
  std::uint64_t now(unsigned slot) {
    switch (kind_) {
      case Kind::kCounter: return counter_.load(std::memory_order_seq_cst);
      case Kind::kTest: return test_now(slot);
      case Kind::kTsc: break;
    }
    return tsc_now();
  }
  /// now() without the fence before it, for a caller that ordered its earlier accesses
  /// otherwise (a locked read-modify-write just before, or the detector's membarrier).
  std::uint64_t now_unfenced(unsigned slot) {
    switch (kind_) {
      case Kind::kCounter: return counter_.load(std::memory_order_seq_cst);
      case Kind::kTest: return test_now(slot);
      case Kind::kTsc: break;
    }
    return tsc_unfenced();
  }
  std::uint64_t commit_ts(unsigned slot) {
    if (kind_ == Kind::kCounter) return counter_.fetch_add(1, std::memory_order_seq_cst) + 1;
    return now(slot) + boundary_;
  }
  std::uint64_t gc_ts(unsigned slot) {
    const std::uint64_t t = now(slot);
    return t > boundary_ ? t - boundary_ : 0;
  }
  /// Spins until every clock has passed `ts` (ORDO); immediate for the counter.
  void wait_past(unsigned slot, std::uint64_t ts);
  /// The slot the detector's clock reads use (skew 0 on the test clock).
  static constexpr unsigned kDetectorSlot = ~0u;

 private:
  static std::uint64_t tsc_now();
  /// rdtscp then lfence: the read waits for earlier instructions to execute (not for earlier
  /// stores to drain) and later instructions wait for it.
  static std::uint64_t tsc_unfenced();
  std::uint64_t test_now(unsigned slot) {
    const std::int64_t s = slot < skew_.size() ? skew_[slot] : 0;
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(ticks_.fetch_add(1, std::memory_order_seq_cst)) + s);
  }

  Kind kind_ = Kind::kCounter;
  std::uint64_t boundary_ = 0;
  std::vector<std::int64_t> skew_;
  alignas(64) std::atomic<std::uint64_t> counter_{1};
  alignas(64) std::atomic<std::uint64_t> ticks_{std::uint64_t{1} << 40};
};

}  // namespace duet::mvrlu::detail

namespace duet::mvrlu {

/// MV-RLU's clock, exported for other components that order events across threads (Hydralist's
/// search-layer logs). Its guarantees are detail::Clock's: commit_ts() then wait_past() gives a
/// stamp that every clock passes before the call returns; gc_ts() is a time every clock passed.
using GlobalClock = detail::Clock;

/// Initializes `clock` as ORDO on an invariant TSC (boundary measured once per process) or, when
/// the TSC is not invariant or `force_counter` is set, as the global counter. Returns whether
/// ORDO was chosen.
inline bool init_global_clock(GlobalClock* clock, bool force_counter) {
  if (!force_counter && detail::tsc_invariant()) {
    std::string why;
    clock->init(GlobalClock::Kind::kTsc, detail::measure_ordo_boundary(&why), {});
    return true;
  }
  clock->init(GlobalClock::Kind::kCounter, 0, {});
  return false;
}

}  // namespace duet::mvrlu
