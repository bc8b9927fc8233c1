// Chooses, block by block, between the team's fast path and serial execution on the calling
// thread, by measured cost per transfer. Both give the serial result (serial execution is the
// definition), so the choice is only about time. It matters on machines where the team's
// synchronisation is unreliable: a team of 2 on a shared 2-core machine, or 16 members on 16
// vCPUs of a VM whose host deschedules them, waits milliseconds at a barrier for a member that is
// not running, while one thread runs a 1000-transfer block in 20-40 µs (docs/batch.md).
//
// Costs are kept per block-size class (powers of two): a lower cost replaces the estimate, a
// higher one moves it by kAlpha. A class runs the team first, then serially once, then whichever
// is cheaper, trying the other one every kProbeEvery blocks so that a change in the machine is
// noticed; the interval doubles (up to kMaxProbeEvery) while probes lose. Not thread-safe (the engine runs
// one block at a time).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace duet::batch::orangutan {

class PathChooser {
 public:
  static constexpr unsigned kProbeEvery = 16;   ///< first probe interval, in blocks
  static constexpr unsigned kMaxProbeEvery = 1024;  ///< the interval doubles while probes lose
  static constexpr double kAlpha = 0.25;  ///< weight of the newest block in the average

  /// Whether the next block of n transfers should run serially.
  bool serial(std::size_t n) {
    Class& c = cls(n);
    if (c.team_ns <= 0) return false;  // measure the team first
    if (c.serial_ns <= 0) return true;  // then serial execution once
    const bool better = c.serial_ns < c.team_ns;
    if (++c.since_probe >= c.probe_every) {
      c.since_probe = 0;
      c.probing = true;
      return !better;  // the other one, to refresh its cost
    }
    return better;
  }

  /// Records that a block of n transfers took ns on the chosen path.
  void record(bool serial, std::size_t n, std::uint64_t ns) {
    Class& c = cls(n);
    const double per = static_cast<double>(ns) / static_cast<double>(std::max<std::size_t>(n, 1));
    double& v = serial ? c.serial_ns : c.team_ns;
    // Down at once, up by kAlpha: one stalled team block (a descheduled member) moves the
    // choice to serial, and one clean probe moves it back.
    v = v <= 0 || per < v ? per : v + (per - v) * kAlpha;
    if (c.probing) {
      // A probe that lost waits twice as long for the next (a stalled team costs milliseconds
      // per probe); one that won resets the interval.
      c.probing = false;
      const bool lost = serial ? c.serial_ns >= c.team_ns : c.team_ns > c.serial_ns;
      c.probe_every = lost ? std::min(kMaxProbeEvery, c.probe_every * 2) : kProbeEvery;
    }
  }

  /// The averages of n's class (0: not measured yet), for tests and statistics.
  double team_ns_per_tx(std::size_t n) { return cls(n).team_ns; }
  double serial_ns_per_tx(std::size_t n) { return cls(n).serial_ns; }

 private:
  struct Class {
    double team_ns = 0, serial_ns = 0;
    unsigned since_probe = 0;
    unsigned probe_every = kProbeEvery;
    bool probing = false;
  };
  Class& cls(std::size_t n) {
    unsigned k = 0;
    while (k + 1 < kClasses && (std::size_t{2} << k) <= n) ++k;
    return c_[k];
  }
  static constexpr unsigned kClasses = 22;
  Class c_[kClasses];
};

}  // namespace duet::batch::orangutan
