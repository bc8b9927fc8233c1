// The range-query checker must accept histories some instant explains and reject the others,
// with an explanation; otherwise the LIT concurrency tests that rely on it prove nothing.
#include "checkers/range_checker.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

using duet::checkers::check_range_history;
using duet::checkers::MapOp;
using duet::checkers::MapOpKind;
using duet::checkers::RangeCheckOptions;
using duet::checkers::RangeCheckResult;
using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

namespace {

MapOp ins(std::uint64_t inv, std::uint64_t resp, std::uint64_t key, std::uint64_t value, bool ok = true) {
  MapOp op;
  op.kind = MapOpKind::kInsert;
  op.invoke = inv, op.response = resp, op.key = key, op.value = value, op.ok = ok;
  return op;
}
MapOp rem(std::uint64_t inv, std::uint64_t resp, std::uint64_t key, bool ok, std::uint64_t previous = 0) {
  MapOp op;
  op.kind = MapOpKind::kRemove;
  op.invoke = inv, op.response = resp, op.key = key, op.ok = ok, op.out = previous;
  return op;
}
MapOp ups(std::uint64_t inv, std::uint64_t resp, std::uint64_t key, std::uint64_t value, bool existed,
          std::uint64_t previous = 0) {
  MapOp op;
  op.kind = MapOpKind::kUpsert;
  op.invoke = inv, op.response = resp, op.key = key, op.value = value, op.ok = existed, op.out = previous;
  return op;
}
MapOp get(std::uint64_t inv, std::uint64_t resp, std::uint64_t key, bool found, std::uint64_t value = 0) {
  MapOp op;
  op.kind = MapOpKind::kGet;
  op.invoke = inv, op.response = resp, op.key = key, op.ok = found, op.out = value;
  return op;
}
MapOp range(std::uint64_t inv, std::uint64_t resp, std::uint64_t start, std::uint64_t end, Pairs result,
            std::uint64_t snapshot = 0, bool more = false) {
  MapOp op;
  op.kind = MapOpKind::kRange;
  op.invoke = inv, op.response = resp, op.key = start, op.end = end, op.result = std::move(result);
  op.snapshot = snapshot, op.more = more;
  return op;
}

RangeCheckOptions initial(std::map<std::uint64_t, std::uint64_t> m, bool snapshot_order = false) {
  RangeCheckOptions o;
  o.initial = std::move(m);
  o.snapshot_order = snapshot_order;
  return o;
}

::testing::AssertionResult accepted(const std::vector<MapOp>& h, const RangeCheckOptions& o = {}) {
  const RangeCheckResult r = check_range_history(h, o);
  if (r.ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "rejected:\n" << r.explanation;
}

/// Rejected, with an explanation that contains `needle`.
::testing::AssertionResult rejected(const std::vector<MapOp>& h, const std::string& needle,
                                    const RangeCheckOptions& o = {}) {
  const RangeCheckResult r = check_range_history(h, o);
  if (r.ok) return ::testing::AssertionFailure() << "accepted";
  if (r.explanation.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << "explanation lacks \"" << needle << "\":\n" << r.explanation;
  return ::testing::AssertionSuccess() << r.explanation;
}

}  // namespace

TEST(RangeChecker, SequentialHistory) {
  std::vector<MapOp> h = {ins(1, 2, 10, 100),        range(3, 4, 0, 50, {{10, 100}}),
                          ups(5, 6, 10, 101, true, 100), range(7, 8, 0, 50, {{10, 101}}),
                          get(9, 10, 10, true, 101), rem(11, 12, 10, true, 101),
                          range(13, 14, 0, 50, {}),   get(15, 16, 10, false),
                          ins(17, 18, 10, 102),       ins(19, 20, 10, 103, false),
                          rem(21, 22, 10, true, 102), rem(23, 24, 10, false)};
  EXPECT_TRUE(accepted(h));
}

TEST(RangeChecker, OverlappingUpdateMayBeSeenEitherWay) {
  // Key 1 changes 10 -> 11 during [20, 30]; queries overlapping it may see either value.
  const auto o = initial({{1, 10}, {2, 20}});
  for (std::uint64_t v : {10, 11}) {
    EXPECT_TRUE(accepted({ups(20, 30, 1, 11, true, 10), range(25, 35, 0, 9, {{1, v}, {2, 20}})}, o)) << v;
    EXPECT_TRUE(accepted({ups(20, 30, 1, 11, true, 10), range(15, 25, 0, 9, {{1, v}, {2, 20}})}, o)) << v;
    EXPECT_TRUE(accepted({ups(20, 30, 1, 11, true, 10), get(21, 22, 1, true, v)}, o)) << v;
  }
  // An insert and a remove overlapping the query: present or absent both fine.
  EXPECT_TRUE(accepted({ins(20, 30, 5, 50), range(25, 26, 0, 9, {{1, 10}, {2, 20}})}, o));
  EXPECT_TRUE(accepted({ins(20, 30, 5, 50), range(25, 26, 0, 9, {{1, 10}, {2, 20}, {5, 50}})}, o));
  EXPECT_TRUE(accepted({rem(20, 30, 2, true, 20), range(25, 26, 0, 9, {{1, 10}})}, o));
  // Two updates both overlapping the query, seen as new/old: t between them works.
  EXPECT_TRUE(accepted({ups(10, 20, 1, 11, true, 10), ups(30, 40, 2, 21, true, 20),
                        range(5, 50, 0, 9, {{1, 11}, {2, 20}})},
                       o));
  // The state between two updates of one key, each overlapping the query.
  EXPECT_TRUE(accepted({ups(10, 20, 1, 11, true, 10), ups(21, 40, 1, 12, true, 11), range(15, 30, 1, 1, {{1, 11}})}, o));
}

TEST(RangeChecker, RejectsMissingKeyPresentThroughout) {
  const auto o = initial({{1, 10}, {2, 20}, {3, 30}});
  EXPECT_TRUE(rejected({range(5, 6, 0, 9, {{1, 10}, {3, 30}})}, "key 2: seen absent", o));
  // Inserted before the query began: must be seen.
  EXPECT_TRUE(rejected({ins(1, 2, 7, 70), range(3, 4, 0, 9, {{1, 10}, {2, 20}, {3, 30}})}, "key 7: seen absent", o));
  // Removed long before: must not be seen.
  EXPECT_TRUE(rejected({rem(1, 2, 2, true, 20), range(3, 4, 0, 9, {{1, 10}, {2, 20}, {3, 30}})},
                       "key 2: seen present=20", o));
  // A GET that misses a key present throughout.
  EXPECT_TRUE(rejected({get(3, 4, 3, false)}, "seen absent", o));
}

TEST(RangeChecker, RejectsMixOfOldAndNewWithNoCommonInstant) {
  const auto o = initial({{1, 10}, {2, 20}});
  // Key 1 becomes 11 during [10, 20]; key 2 becomes 21 during [30, 40]. Key 1 old needs t < 20,
  // key 2 new needs t > 30: no instant had both.
  const auto r = check_range_history(
      {ups(10, 20, 1, 11, true, 10), ups(30, 40, 2, 21, true, 20), range(5, 50, 0, 9, {{1, 10}, {2, 21}})}, o);
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.explanation.find("key 2: seen present=21"), std::string::npos) << r.explanation;
  EXPECT_NE(r.explanation.find("but key 1 was seen present=10"), std::string::npos) << r.explanation;
  // The same values with the updates overlapping: fine.
  EXPECT_TRUE(accepted(
      {ups(10, 35, 1, 11, true, 10), ups(30, 40, 2, 21, true, 20), range(5, 50, 0, 9, {{1, 10}, {2, 21}})}, o));
  // Three keys where every pair is possible but not all three at once.
  const auto o3 = initial({{1, 10}, {2, 20}, {3, 30}});
  // Key 1 new needs t > 10; key 2 old needs t < 30; key 3: 30 -> 31 [20, 25] -> 32 [26, 28],
  // seen 30 needs t < 25 ... 31 needs (20, 28): with key 1 new (t > 10) and key 2 old (t < 30)
  // fine. Use key 3 = 32 needing t > 26 and key 4 (inserted [5,8], removed [12,14]) seen present
  // needing t < 14: no instant.
  EXPECT_TRUE(rejected({ups(5, 10, 1, 11, true, 10), ups(29, 30, 2, 21, true, 20), ups(20, 25, 3, 31, true, 30),
                        ups(26, 28, 3, 32, true, 31), ins(5, 8, 4, 40), rem(12, 14, 4, true, 40),
                        range(1, 50, 0, 9, {{1, 11}, {2, 20}, {3, 32}, {4, 40}})},
                       "key 4: seen present=40", o3));
}

TEST(RangeChecker, RejectsValueNeverWritten) {
  const auto o = initial({{1, 10}});
  EXPECT_TRUE(rejected({range(5, 6, 0, 9, {{1, 10}, {4, 999}})}, "no operation wrote it", o));
  EXPECT_TRUE(rejected({range(5, 6, 0, 9, {{1, 999}})}, "value 999 was never the value of key 1", o));
  // A value written to another key.
  EXPECT_TRUE(rejected({ins(1, 2, 3, 30), range(5, 6, 0, 9, {{1, 30}, {3, 30}})}, "written to key 3", o));
  // A value offered by an insert that failed.
  EXPECT_TRUE(rejected({ins(1, 2, 1, 11, false), get(3, 4, 1, true, 11)}, "offered by the failed", o));
}

TEST(RangeChecker, ChecksUpdatesAgainstTheWritersView) {
  const auto o = initial({{1, 10}});
  EXPECT_TRUE(rejected({ins(1, 2, 1, 11, true)}, "contradicts its writer", o));
  EXPECT_TRUE(rejected({ins(1, 2, 2, 20, false)}, "contradicts its writer", o));
  EXPECT_TRUE(rejected({rem(1, 2, 1, true, 11)}, "contradicts its writer", o));
  EXPECT_TRUE(rejected({rem(1, 2, 2, true, 0)}, "contradicts its writer", o));
  EXPECT_TRUE(rejected({ups(1, 2, 1, 11, false)}, "contradicts its writer", o));
  EXPECT_TRUE(rejected({ups(1, 2, 1, 11, true, 10), ups(3, 4, 1, 12, true, 10)}, "contradicts its writer", o));
  EXPECT_TRUE(accepted({ups(1, 2, 1, 11, true, 10), ups(3, 4, 1, 12, true, 11), rem(5, 6, 1, true, 12)}, o));
}

TEST(RangeChecker, RefusesMalformedHistories) {
  EXPECT_TRUE(rejected({ins(1, 5, 1, 10), rem(4, 6, 1, true, 10)}, "overlap in time"));
  EXPECT_TRUE(rejected({range(1, 2, 0, 9, {{3, 1}, {2, 1}})}, "not strictly increasing"));
  EXPECT_TRUE(rejected({range(1, 2, 0, 9, {{3, 1}, {3, 1}})}, "not strictly increasing"));
  EXPECT_TRUE(rejected({range(1, 2, 5, 9, {{3, 1}})}, "outside the range"));
  EXPECT_TRUE(rejected({get(2, 2, 1, false)}, "response stamp"));
}

TEST(RangeChecker, PageCutAtItsLimitCoversOnlyWhatItReturned) {
  const auto o = initial({{1, 10}, {2, 20}, {3, 30}});
  EXPECT_TRUE(accepted({range(1, 2, 0, 9, {{1, 10}}, 0, /*more=*/true)}, o));
  EXPECT_TRUE(rejected({range(1, 2, 0, 9, {{1, 10}})}, "key 2: seen absent", o));
  EXPECT_TRUE(rejected({range(1, 2, 0, 9, {{1, 10}, {3, 30}}, 0, true)}, "key 2: seen absent", o));
}

TEST(RangeChecker, SnapshotOrder) {
  const auto plain = initial({{1, 10}});
  const auto ordered = initial({{1, 10}}, true);
  // Both pages overlap the update; the later snapshot saw the older value.
  const std::vector<MapOp> h = {ups(10, 20, 1, 11, true, 10), range(11, 12, 0, 9, {{1, 11}}, 5),
                                range(13, 14, 0, 9, {{1, 10}}, 6)};
  EXPECT_TRUE(accepted(h, plain));
  EXPECT_TRUE(rejected(h, "snapshot order violated at key 1", ordered));
  // In order: fine.
  EXPECT_TRUE(accepted({ups(10, 20, 1, 11, true, 10), range(11, 12, 0, 9, {{1, 10}}, 5),
                        range(13, 14, 0, 9, {{1, 11}}, 6)},
                       ordered));
  // Equal snapshots must agree, also absent versus present.
  EXPECT_TRUE(rejected({ups(10, 20, 1, 11, true, 10), range(11, 12, 0, 9, {{1, 11}}, 5),
                        range(13, 14, 0, 9, {{1, 10}}, 5)},
                       "snapshot order violated", ordered));
  EXPECT_TRUE(rejected({rem(10, 20, 1, true, 10), range(11, 12, 0, 9, {}, 7), range(13, 14, 1, 1, {{1, 10}}, 7)},
                       "snapshot order violated", ordered));
  EXPECT_TRUE(accepted({rem(10, 20, 1, true, 10), range(11, 12, 0, 9, {}, 7), range(13, 14, 1, 1, {}, 7)},
                       ordered));
  // Absent seen before and after a re-insert (absent states 0 and 2): the floor moves to 2.
  const auto none = RangeCheckOptions{{}, true};
  EXPECT_TRUE(accepted({ins(10, 20, 1, 1), rem(21, 30, 1, true, 1), range(5, 25, 0, 9, {{1, 1}}, 3),
                        range(22, 35, 0, 9, {}, 4)},
                       none));
  // Absent at snapshot 3 during (22, 35) can only be state 2 (after the remove began); present
  // at snapshot 4 is state 1: out of order.
  EXPECT_TRUE(rejected({ins(10, 20, 1, 1), rem(21, 30, 1, true, 1), range(22, 35, 0, 9, {}, 3),
                        range(5, 25, 0, 9, {{1, 1}}, 4)},
                       "snapshot order violated", none));
}

// A simulated linearizable map: each operation takes effect at a random instant inside its
// interval. Every history must be accepted; corrupting one range result (a value never
// written, a key dropped while present throughout) must be rejected.
TEST(RangeChecker, RandomLinearizableHistoriesAndCorruptions) {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const int writers = 3, readers = 2, keys = 24;
    std::map<std::uint64_t, std::uint64_t> state;
    std::vector<MapOp> h;
    // Events are generated in lin order; intervals are stretched around the lin point, but a
    // writer's next op starts after its previous one ended (keys partitioned by writer).
    std::vector<std::uint64_t> busy_until(writers + readers, 0);
    std::uint64_t now = 100, next_value = 1000;
    for (int step = 0; step < 400; ++step) {
      now += 1 + rng() % 3;
      const int t = static_cast<int>(rng() % (writers + readers));
      if (busy_until[t] >= now) continue;
      const std::uint64_t inv = std::max(busy_until[t] + 1, now - rng() % 8);
      const std::uint64_t resp = now + 1 + rng() % 8;
      busy_until[t] = resp;
      MapOp op;
      if (t < writers) {
        const std::uint64_t key = 2 * (t + writers * (rng() % (keys / writers)));
        auto it = state.find(key);
        const int r = static_cast<int>(rng() % 3);
        if (r == 0) {
          op = ins(inv, resp, key, ++next_value, it == state.end());
          if (it == state.end()) state[key] = op.value;
        } else if (r == 1) {
          op = rem(inv, resp, key, it != state.end(), it != state.end() ? it->second : 0);
          if (it != state.end()) state.erase(it);
        } else {
          op = ups(inv, resp, key, ++next_value, it != state.end(), it != state.end() ? it->second : 0);
          state[key] = op.value;
        }
      } else if (rng() % 4 == 0) {
        const std::uint64_t key = 2 * (rng() % keys);
        auto it = state.find(key);
        op = get(inv, resp, key, it != state.end(), it != state.end() ? it->second : 0);
      } else {
        const std::uint64_t a = rng() % (2 * keys), b = a + rng() % (2 * keys);
        Pairs res(state.lower_bound(a), state.upper_bound(b));
        op = range(inv, resp, a, b, std::move(res), /*snapshot=*/now);
      }
      op.thread = static_cast<std::uint32_t>(t);
      h.push_back(op);
    }
    RangeCheckOptions o;
    o.snapshot_order = true;
    const RangeCheckResult ok = check_range_history(h, o);
    ASSERT_TRUE(ok.ok) << ok.explanation;
    EXPECT_GT(ok.reads_checked, 0u);

    // Corruption 1: a value never written, in some nonempty range result.
    for (auto& op : h)
      if (op.kind == MapOpKind::kRange && !op.result.empty()) {
        auto copy = h;
        copy[&op - h.data()].result[rng() % op.result.size()].second = 77;
        EXPECT_TRUE(rejected(copy, "value 77 was never the value"));
        break;
      }
    // Corruption 2: a key present throughout a query (present at its invocation, not updated
    // until after its response) dropped from its result. Find such a query and key.
    bool dropped = false;
    for (std::size_t i = 0; i < h.size() && !dropped; ++i) {
      if (h[i].kind != MapOpKind::kRange) continue;
      for (std::size_t r = 0; r < h[i].result.size() && !dropped; ++r) {
        const std::uint64_t key = h[i].result[r].first;
        bool stable = true;
        for (const auto& u : h)
          if (u.kind != MapOpKind::kGet && u.kind != MapOpKind::kRange && u.key == key && u.response >= h[i].invoke - 10 &&
              u.invoke <= h[i].response + 10)
            stable = false;
        if (!stable) continue;
        auto copy = h;
        copy[i].result.erase(copy[i].result.begin() + static_cast<std::ptrdiff_t>(r));
        EXPECT_TRUE(rejected(copy, "seen absent"));
        dropped = true;
      }
    }
  }
}
