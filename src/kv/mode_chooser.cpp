#include "kv/mode_chooser.hpp"

namespace duet::kv {

double ModeChooser::mean_since(const Totals& from, const Totals& to) const {
  const std::uint64_t n = to.requests - from.requests;
  if (n < s_.min_requests || n == 0) return 0;
  return static_cast<double>(to.latency_ns - from.latency_ns) / static_cast<double>(n);
}

void ModeChooser::installed(Mode m, std::uint64_t now) {
  started_ = true;
  chosen_ = m;
  quick_probes_ = kModes - 1;
  unmeasured_ = static_cast<std::uint8_t>(0b111 & ~(1u << static_cast<int>(m)));
  phase_ = Phase::kSteady;
  // The new mode is measured only after a window's time: a learned model just installed runs
  // with a Hot Cache still filling from misses, which is not what it costs once warm.
  until_ = now + s_.window_ns;
}

ModeChooser::Action ModeChooser::step(std::uint64_t now, Totals totals) {
  if (!started_) {  // the first probe after one interval: let the model learn first
    started_ = true;
    until_ = now + s_.interval_ns;
    return Action::kNone;
  }
  // A probe whose mode is already far slower than the chosen one ends early: measuring it for
  // the whole window would only cost more (all-hot on a working set far larger than the
  // cache, say).
  if (phase_ == Phase::kMeasureOther && now < until_ && totals.requests - mark_.requests >= 4 * s_.min_requests) {
    const double partial = mean_since(mark_, totals);
    if (partial > kGiveUpFactor * chosen_mean_) until_ = now;
  }
  if (now < until_) return Action::kNone;
  switch (phase_) {
    case Phase::kSteady:
      mark_ = totals;
      phase_ = Phase::kMeasureChosen;
      until_ = now + s_.window_ns;
      return Action::kNone;
    case Phase::kMeasureChosen:
      chosen_mean_ = mean_since(mark_, totals);
      last_requests_[0] = totals.requests - mark_.requests;
      last_requests_[1] = 0;
      if (chosen_mean_ == 0) {  // too little traffic to compare: nothing to gain now
        phase_ = Phase::kSteady;
        // Try again soon while probes are due right away (the window may have caught a
        // stall), else after an interval.
        until_ = now + (quick_probes_ > 0 ? s_.window_ns : s_.interval_ns);
        ++probes_;
        return Action::kNone;
      }
      measured_[static_cast<int>(chosen_)] = chosen_mean_;
      unmeasured_ &= static_cast<std::uint8_t>(~(1u << static_cast<int>(chosen_)));
      // The two modes other than the chosen one, in turn; one not measured since the last
      // install first.
      probed_ = static_cast<Mode>((static_cast<int>(chosen_) + 1 + rotation_++ % 2) % kModes);
      if (!(unmeasured_ & (1u << static_cast<int>(probed_))) && unmeasured_ != 0) {
        const Mode alt = static_cast<Mode>((static_cast<int>(chosen_) + 1 + rotation_ % 2) % kModes);
        if (unmeasured_ & (1u << static_cast<int>(alt))) {
          probed_ = alt;
          ++rotation_;
        }
      }
      phase_ = Phase::kSettleOther;
      until_ = now + s_.settle_ns;
      return install(probed_);
    case Phase::kSettleOther:
      mark_ = totals;
      phase_ = Phase::kMeasureOther;
      until_ = now + s_.window_ns;
      return Action::kNone;
    case Phase::kMeasureOther: {
      const double other_mean = mean_since(mark_, totals);
      last_requests_[1] = totals.requests - mark_.requests;
      phase_ = Phase::kSteady;
      if (quick_probes_ > 0) --quick_probes_;
      until_ = now + (quick_probes_ > 0 ? s_.settle_ns : s_.interval_ns);
      ++probes_;
      if (other_mean > 0) {
        measured_[static_cast<int>(probed_)] = other_mean;
        unmeasured_ &= static_cast<std::uint8_t>(~(1u << static_cast<int>(probed_)));
      }
      if (other_mean > 0 && other_mean < chosen_mean_ * (1.0 - s_.margin)) {
        chosen_ = probed_;  // the probe won: stay
        ++changes_;
        return Action::kNone;
      }
      return install(chosen_);  // lost, or too little traffic to tell: back
    }
  }
  return Action::kNone;
}

}  // namespace duet::kv
