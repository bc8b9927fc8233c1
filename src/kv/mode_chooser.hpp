// ModeChooser: the kv keyspace's adaptive routing. In the learned mode the keyspace measures
// whether routing every request to the Canonical Store (all-cold) or every request to the Hot
// Cache (all-hot: on a GPU, the CPU serves every key it has seen, and misses load from the GPU)
// would serve its callers faster than the learned model, and routes that way while it does; it
// keeps probing, so it also notices the reverse. A pure state machine over time and cumulative latency counters,
// so its decisions are testable without a store; the keyspace feeds it and carries out what
// it asks for (KvSpaceImpl::auto_switch_loop).
//
// The measure is the mean latency per request of whole batches, call to return (execute(),
// or submit() to finish()). For callers that keep the same work in flight (closed loops, a
// fixed pipeline depth), throughput is that work divided by this latency (Little's law), so
// the lower latency is also the higher throughput; for an open-loop caller below capacity it
// is the latency it sees.
#pragma once

#include <cstdint>

namespace duet::kv {

class ModeChooser {
 public:
  enum class Mode : std::uint8_t { kLearned = 0, kAllCold = 1, kAllHot = 2 };
  static constexpr int kModes = 3;
  /// What the keyspace must do after a step.
  enum class Action : std::uint8_t { kNone = 0, kInstallLearned, kInstallAllCold, kInstallAllHot };
  struct Settings {
    std::uint64_t interval_ns = 10'000'000'000;  ///< between probes of the other mode
    std::uint64_t window_ns = 100'000'000;       ///< each mode is measured this long
    std::uint64_t settle_ns = 20'000'000;        ///< after a switch, before measuring
    double margin = 0.05;                        ///< the other mode must be this much faster
    std::uint64_t min_requests = 512;            ///< fewer in a window: no decision
  };
  /// Cumulative counters (never decrease): requests finished and the sum of their latencies.
  struct Totals {
    std::uint64_t requests = 0;
    std::uint64_t latency_ns = 0;
  };

  explicit ModeChooser(Settings s) : s_(s) {}

  /// Advances to time `now` with the counters' current totals; returns what to install.
  /// Call it at least every few window_ns / 5 for accurate windows. O(1).
  Action step(std::uint64_t now, Totals totals);
  /// Records that the keyspace installed mode m outside a probe (a new learned model, an
  /// explicit switch): m becomes the choice, a probe in progress is abandoned, after one
  /// window's time (the new mode warms up meanwhile) probing resumes, and, since the
  /// comparison may have changed, both other modes are probed right away (one after the
  /// other, a settle time apart; a mode not yet measured since is probed first) before probing
  /// returns to one per interval. The keyspace's
  /// first probes, one interval after it starts, are also back to back.
  void installed(Mode m, std::uint64_t now);
  /// The mode currently chosen (during a probe, the mode the probe returns to if it loses).
  /// Each probe measures the chosen mode and one other, the two others in turn.
  Mode chosen() const { return chosen_; }
  /// True while a probe is in progress (the keyspace then installs no other model).
  bool probing() const { return phase_ != Phase::kSteady; }
  /// The last measured mean latency per request of each mode, in ns (0: not measured yet).
  double measured_ns(Mode m) const { return measured_[static_cast<int>(m)]; }
  /// How many probes ended with the other mode chosen.
  std::uint64_t changes() const { return changes_; }
  /// Probes completed (decided either way) and probes abandoned for too few requests.
  std::uint64_t probes() const { return probes_; }
  /// Requests finished in the last probe's windows: the chosen mode's, then the other's (0:
  /// not reached), for logs.
  std::uint64_t last_requests(int window) const { return last_requests_[window & 1]; }
  /// The mode the last probe measured against the chosen one.
  Mode last_probed() const { return probed_; }
  /// A probed mode whose mean latency exceeds the chosen one's by this factor, over at least
  /// 4 * min_requests requests, ends its window early.
  static constexpr double kGiveUpFactor = 2.0;

  static const char* name(Mode m) {
    return m == Mode::kLearned ? "learned" : m == Mode::kAllCold ? "all-cold" : "all-hot";
  }

 private:
  enum class Phase : std::uint8_t { kSteady, kMeasureChosen, kSettleOther, kMeasureOther };
  static Action install(Mode m) {
    return m == Mode::kLearned ? Action::kInstallLearned : m == Mode::kAllCold ? Action::kInstallAllCold : Action::kInstallAllHot;
  }
  /// Mean latency per request since `from`, or 0 with fewer than min_requests requests.
  double mean_since(const Totals& from, const Totals& to) const;

  Settings s_;
  Mode chosen_ = Mode::kLearned;
  Mode probed_ = Mode::kAllCold;  ///< the other mode of the current probe
  std::uint64_t rotation_ = 0;    ///< which of the two others the next probe measures
  int quick_probes_ = kModes - 1;  ///< probes still to run a settle time apart, not an interval
  std::uint8_t unmeasured_ = 0b110;  ///< modes (bits) not measured since the last install
  Phase phase_ = Phase::kSteady;
  bool started_ = false;
  std::uint64_t until_ = 0;  ///< steady: next probe; other phases: end of the phase
  Totals mark_;              ///< counters at the start of the window being measured
  double chosen_mean_ = 0;   ///< the chosen mode's mean in this probe
  double measured_[kModes] = {0, 0, 0};
  std::uint64_t changes_ = 0, probes_ = 0;
  std::uint64_t last_requests_[2] = {0, 0};
};

}  // namespace duet::kv
