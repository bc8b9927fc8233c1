// The adaptive engine's choice between the team and serial execution (path_chooser.hpp), fed
// with made-up costs: team first, then serial once, then the cheaper, with a probe of the other
// every kProbeEvery blocks; size classes apart; a change in costs is followed.
#include <gtest/gtest.h>

#include "batch/orangutan/path_chooser.hpp"

namespace duet::batch::orangutan {
namespace {

/// Runs `blocks` blocks of n through the chooser with the given costs (ns per transfer);
/// returns how many ran serially.
int drive(PathChooser& c, std::size_t n, double team_ns, double serial_ns, int blocks) {
  int serial = 0;
  for (int b = 0; b < blocks; ++b) {
    const bool s = c.serial(n);
    serial += s;
    c.record(s, n, static_cast<std::uint64_t>((s ? serial_ns : team_ns) * n));
  }
  return serial;
}

TEST(PathChooser, TeamThenSerialOnceThenTheCheaperWithProbes) {
  PathChooser c;
  EXPECT_FALSE(c.serial(1000));  // nothing measured: the team
  c.record(false, 1000, 1000 * 100);
  EXPECT_TRUE(c.serial(1000));  // the team measured: serial once
  c.record(true, 1000, 1000 * 30);
  // Serial is cheaper: serial from now on, with probes of the team after 16, 32, 64, ...
  // blocks while they lose.
  const int serial = drive(c, 1000, 100, 30, 16 + 32 + 64);
  EXPECT_EQ(serial, 16 + 32 + 64 - 3);
  EXPECT_NEAR(c.serial_ns_per_tx(1000), 30, 1e-9);
}

TEST(PathChooser, TheTeamWinsWhenCheaperAndClassesAreApart) {
  PathChooser c;
  drive(c, 1000, 10, 30, 2);  // team, then serial once
  EXPECT_EQ(drive(c, 1000, 10, 30, 16 + 32 + 64 + 128), 4);
  // Another size class starts from nothing.
  EXPECT_FALSE(c.serial(100000));
  EXPECT_EQ(c.team_ns_per_tx(100000), 0);
}

TEST(PathChooser, FollowsAChangeInTheMachine) {
  PathChooser c;
  drive(c, 1000, 10, 30, 40);  // the team is cheaper
  // The team starts stalling (descheduled members): its first stalled block moves to serial.
  EXPECT_EQ(drive(c, 1000, 2000, 30, 1), 0);
  EXPECT_GT(c.team_ns_per_tx(1000), c.serial_ns_per_tx(1000));
  EXPECT_TRUE(c.serial(1000));
  // Probes go on, further apart while they lose: few team blocks in 2000.
  EXPECT_LE(2000 - drive(c, 1000, 2000, 30, 2000), 8);
  // And back, at the first clean probe (at most kMaxProbeEvery blocks later).
  drive(c, 1000, 10, 30, PathChooser::kMaxProbeEvery + 1);
  EXPECT_LT(c.team_ns_per_tx(1000), c.serial_ns_per_tx(1000));
  EXPECT_FALSE(c.serial(1000));
}

}  // namespace
}  // namespace duet::batch::orangutan
