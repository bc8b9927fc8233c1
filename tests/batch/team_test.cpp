// The team that runs OranguTAN's phases: every member runs the body once per run(), barrier(m)
// orders every member's writes before it against every member's reads after it, and run()
// returns only after every member finished. Team sizes that are and are not powers of two (the
// dissemination barrier of TeamSync::kSpread) and the central counter of kCentral, more members
// than cores included.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "batch/orangutan/team.hpp"

namespace duet::batch::orangutan {
namespace {

class TeamBoth : public testing::TestWithParam<TeamSync> {};

TEST_P(TeamBoth, BarrierOrdersEveryMembersWritesAndRunWaitsForAll) {
  for (unsigned n : {1u, 2u, 3u, 5u}) {
    Team team(n, GetParam());
    ASSERT_EQ(team.size(), n);
    // Plain (non-atomic) slots: a barrier that failed to order them is a data race (TSan) and,
    // without TSan, a stale value seen below.
    std::vector<std::uint64_t> slot(n, 0), seen_sum(n, 0);
    std::atomic<unsigned> mismatches{0};
    for (std::uint64_t it = 1; it <= 30; ++it) {
      team.run([&](unsigned m) {
        slot[m] = it * 1000 + m;
        team.barrier(m);
        std::uint64_t sum = 0;
        for (unsigned j = 0; j < n; ++j) {
          if (slot[j] != it * 1000 + j) mismatches.fetch_add(1, std::memory_order_relaxed);
          sum += slot[j];
        }
        team.barrier(m);  // every read above happens before the next run's writes
        seen_sum[m] = sum;
      });
      // run() returned: every member's last write is visible here.
      for (unsigned m = 0; m < n; ++m) {
        ASSERT_EQ(slot[m], it * 1000 + m) << "n " << n << " run " << it;
        ASSERT_EQ(seen_sum[m], it * 1000 * n + n * (n - 1) / 2) << "n " << n << " run " << it;
      }
    }
    EXPECT_EQ(mismatches.load(), 0u) << "n " << n;
  }
}

TEST_P(TeamBoth, ManyBarriersInOneRun) {
  Team team(4, GetParam());
  std::vector<std::uint32_t> v(4, 0);
  std::atomic<unsigned> bad{0};
  team.run([&](unsigned m) {
    for (std::uint32_t r = 1; r <= 50; ++r) {
      v[m] = r;
      team.barrier(m);
      for (unsigned j = 0; j < 4; ++j)
        if (v[j] != r) bad.fetch_add(1, std::memory_order_relaxed);
      team.barrier(m);
    }
  });
  EXPECT_EQ(bad.load(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Sync, TeamBoth, testing::Values(TeamSync::kSpread, TeamSync::kCentral),
                         [](const testing::TestParamInfo<TeamSync>& i) {
                           return std::string(i.param == TeamSync::kSpread ? "spread" : "central");
                         });

}  // namespace
}  // namespace duet::batch::orangutan
