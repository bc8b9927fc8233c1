// Adaptive routing's decisions (kv/mode_chooser.hpp): a state machine over time and cumulative
// latency counters, driven here with a synthetic clock and synthetic latencies.
#include "kv/mode_chooser.hpp"

#include <gtest/gtest.h>

namespace duet::kv {
namespace {

using Mode = ModeChooser::Mode;
using Action = ModeChooser::Action;

constexpr std::uint64_t kMs = 1'000'000;

ModeChooser::Settings settings() {
  ModeChooser::Settings s;
  s.interval_ns = 1000 * kMs;
  s.window_ns = 100 * kMs;
  s.settle_ns = 20 * kMs;
  s.margin = 0.05;
  s.min_requests = 512;
  return s;
}

/// Drives a chooser in 1 ms ticks over a workload whose mean latency per request depends on
/// the installed mode, and records the installs it asks for.
struct Driver {
  ModeChooser c{settings()};
  std::uint64_t now = 0;
  ModeChooser::Totals totals;
  Mode installed = Mode::kLearned;
  double ns_per_request[ModeChooser::kModes] = {1000, 1000, 1000};
  std::uint64_t requests_per_ms = 10000;
  int installs = 0;

  void run_ms(std::uint64_t ms) {
    for (std::uint64_t k = 0; k < ms; ++k) {
      now += kMs;
      totals.requests += requests_per_ms;
      totals.latency_ns += static_cast<std::uint64_t>(ns_per_request[static_cast<int>(installed)] * requests_per_ms);
      const Action a = c.step(now, totals);
      if (a == Action::kInstallLearned) installed = Mode::kLearned, ++installs;
      if (a == Action::kInstallAllCold) installed = Mode::kAllCold, ++installs;
      if (a == Action::kInstallAllHot) installed = Mode::kAllHot, ++installs;
    }
  }
};

TEST(ModeChooser, NoProbeBeforeTheFirstInterval) {
  Driver d;
  d.ns_per_request[1] = 100;  // all-cold far faster, but nothing is measured yet
  d.run_ms(900);
  EXPECT_EQ(d.installs, 0);
  EXPECT_EQ(d.c.probes(), 0u);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
}

TEST(ModeChooser, MovesToTheFasterModeAndStays) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kLearned)] = 2000;
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 1000;
  d.ns_per_request[static_cast<int>(Mode::kAllHot)] = 3000;
  d.run_ms(1300);  // the first probe (of all-cold): 1000 ms, measure 100, settle 20, measure 100
  EXPECT_EQ(d.c.probes(), 1u);
  EXPECT_EQ(d.c.chosen(), Mode::kAllCold);
  EXPECT_EQ(d.installed, Mode::kAllCold);
  EXPECT_EQ(d.installs, 1);
  EXPECT_EQ(d.c.changes(), 1u);
  EXPECT_NEAR(d.c.measured_ns(Mode::kLearned), 2000, 1);
  EXPECT_NEAR(d.c.measured_ns(Mode::kAllCold), 1000, 1);
  // A second probe follows at once (of learned, which loses), then one per interval; at
  // 5800 ms the last has ended (at 5120) and the next starts at 6120.
  d.run_ms(4500);
  EXPECT_EQ(d.c.chosen(), Mode::kAllCold);
  EXPECT_EQ(d.installed, Mode::kAllCold);
  EXPECT_GE(d.c.probes(), 4u);
  EXPECT_EQ(d.c.changes(), 1u);
}

TEST(ModeChooser, ReturnsWhenTheOtherModeIsSlower) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 1500;  // slower, but not enough to end early
  d.run_ms(1230);  // the probe's windows: 1000-1100, then 1120-1220; the next starts at 1240
  EXPECT_EQ(d.c.probes(), 1u);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
  EXPECT_EQ(d.installed, Mode::kLearned);
  EXPECT_EQ(d.installs, 2);  // all-cold for the probe, then learned again
  EXPECT_EQ(d.c.changes(), 0u);
}

TEST(ModeChooser, KeepsTheChoiceWithinTheMargin) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 970;  // 3% faster: not enough
  d.run_ms(1300);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
  EXPECT_EQ(d.installed, Mode::kLearned);
}

TEST(ModeChooser, NoticesTheReverse) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kLearned)] = 2000;
  d.run_ms(1300);
  ASSERT_EQ(d.c.chosen(), Mode::kAllCold);
  // The workload changes: the learned model now wins, in the first probe of it. The probe that
  // follows the change at once measures all-hot (never measured; ties), the next one, an
  // interval later (2460-2680), learned.
  d.ns_per_request[static_cast<int>(Mode::kLearned)] = 400;
  d.run_ms(1500);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
  EXPECT_EQ(d.installed, Mode::kLearned);
  EXPECT_EQ(d.c.changes(), 2u);
}

TEST(ModeChooser, ProbesBothOtherModesInTurn) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 2000;
  d.ns_per_request[static_cast<int>(Mode::kAllHot)] = 500;
  d.run_ms(1300);  // the first probe measures all-cold, which loses
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
  EXPECT_EQ(d.c.measured_ns(Mode::kAllHot), 0);
  d.run_ms(1100);  // the second, right after, measures all-hot, which wins (at 1460)
  EXPECT_EQ(d.c.chosen(), Mode::kAllHot);
  EXPECT_EQ(d.installed, Mode::kAllHot);
  EXPECT_NEAR(d.c.measured_ns(Mode::kAllHot), 500, 1);
  EXPECT_NEAR(d.c.measured_ns(Mode::kAllCold), 2000, 1);
  d.run_ms(5900);  // from all-hot, learned and all-cold in turn: both lose (8300: between probes)
  EXPECT_EQ(d.c.chosen(), Mode::kAllHot);
  EXPECT_EQ(d.installed, Mode::kAllHot);
  EXPECT_EQ(d.c.changes(), 1u);
}

TEST(ModeChooser, AfterAChangeTheUnmeasuredModeIsProbedNext) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kLearned)] = 2000;
  d.ns_per_request[static_cast<int>(Mode::kAllHot)] = 300;
  d.run_ms(1300);  // the first probe measures all-cold, which wins over learned
  ASSERT_EQ(d.c.chosen(), Mode::kAllCold);
  ASSERT_EQ(d.c.measured_ns(Mode::kAllHot), 0);
  // The probe that follows at once measures all-hot (never measured), not learned again.
  d.run_ms(200);
  EXPECT_EQ(d.c.chosen(), Mode::kAllHot);
  EXPECT_NEAR(d.c.measured_ns(Mode::kAllHot), 300, 1);
}

TEST(ModeChooser, AFarSlowerProbeEndsEarly) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 5000;
  d.run_ms(1120);  // measured learned (1000-1100), installed all-cold, settled
  ASSERT_EQ(d.installed, Mode::kAllCold);
  d.run_ms(2);  // 4 * min_requests requests in: five times slower, so back at once
  EXPECT_EQ(d.installed, Mode::kLearned);
  EXPECT_EQ(d.c.probes(), 1u);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
  EXPECT_NEAR(d.c.measured_ns(Mode::kAllCold), 5000, 1);
}

TEST(ModeChooser, IdleKeyspaceIsNotProbed) {
  Driver d;
  d.requests_per_ms = 1;  // 100 requests per window: below min_requests
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 10;
  d.run_ms(3500);
  EXPECT_EQ(d.installs, 0);
  EXPECT_GE(d.c.probes(), 3u);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
}

TEST(ModeChooser, TooLittleTrafficInTheProbeGoesBack) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kAllCold)] = 10;
  d.run_ms(1121);  // the probe installed all-cold and is measuring it
  ASSERT_EQ(d.installed, Mode::kAllCold);
  d.requests_per_ms = 1;  // the traffic stops
  d.run_ms(200);
  EXPECT_EQ(d.installed, Mode::kLearned);
  EXPECT_EQ(d.c.chosen(), Mode::kLearned);
}

TEST(ModeChooser, AnInstallOutsideTheProbeAbandonsItAndProbesSoon) {
  Driver d;
  d.ns_per_request[static_cast<int>(Mode::kLearned)] = 2000;
  d.run_ms(1050);  // measuring learned
  ASSERT_TRUE(d.c.probing());
  d.c.installed(Mode::kLearned, d.now);  // a new learned model
  EXPECT_FALSE(d.c.probing());
  d.run_ms(99);  // the new model warms up for a window's time first
  EXPECT_EQ(d.installs, 0);
  d.run_ms(250);  // measure, settle, measure: the probe decides
  EXPECT_EQ(d.c.chosen(), Mode::kAllCold);
  EXPECT_EQ(d.installed, Mode::kAllCold);
}

}  // namespace
}  // namespace duet::kv
