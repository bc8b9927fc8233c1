// The CODS versioned B-link tree on one CPU thread against a reference std::map with a history
// of snapshots: every RANGE at snapshot s must equal the reference's state when s was taken.
// Also: versions below the oldest live snapshot are freed, the CPU twin's batch semantics,
// bad input, and the planted bug (RANGE at the latest version) caught by the same comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "index/cods/versioned_cpu.hpp"
#include "cods/test_scale.hpp"

using namespace duet;
using namespace duet::cods::ds;

namespace {

constexpr std::uint64_t kMax = ~std::uint64_t(0);
using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

using duet::cods::test_util::scale;
int scaled(int n) { return std::max(100, static_cast<int>(n * scale())); }

template <unsigned K_, Regime R_>
struct Cfg {
  static constexpr unsigned K = K_;
  static constexpr Regime R = R_;
};
constexpr Regime E = Regime::kElementwise;
constexpr Regime F = Regime::kFullyAtomic;
#if defined(__SANITIZE_ADDRESS__)
// The AddressSanitizer build (scripts/test) compiles two of the six (each regime, a small and the
// largest node) to keep its compile time down; every build without sanitizers runs all six.
using Configs = ::testing::Types<Cfg<4, F>, Cfg<16, E>>;
#else
using Configs = ::testing::Types<Cfg<1, E>, Cfg<2, F>, Cfg<4, F>, Cfg<7, E>, Cfg<14, F>, Cfg<16, E>>;
#endif

/// Keys: the edges, a dense range (splits, emptied leaves), the top of the key space, any.
std::uint64_t draw_key(std::mt19937_64& rng) {
  const std::uint64_t r = rng() % 16;
  if (r == 0) {
    static constexpr std::uint64_t kEdges[] = {0, 1, kMax - 1, kMax};
    return kEdges[rng() % 4];
  }
  if (r < 12) return rng() % 400;
  if (r < 14) return kMax - rng() % 200;
  return rng();
}

Pairs slice(const std::map<std::uint64_t, std::uint64_t>& m, std::uint64_t a, std::uint64_t b) {
  Pairs out;
  for (auto it = m.lower_bound(a); it != m.end() && it->first <= b; ++it) out.push_back(*it);
  return out;
}

/// Random updates, snapshots taken and released, and RANGEs at live snapshots compared with
/// the reference state each snapshot saw. Returns the number of RANGEs that differed (0 for a
/// correct tree); stops at the first difference when `stop_at_first`.
template <unsigned K, Regime R>
int run_snapshot_model(std::uint64_t seed, int ops, const Hooks* hooks, bool stop_at_first) {
  using Tree = CpuVersionedBLinkTree<K, R>;
  Tree t;
  auto env = t.session(hooks);
  std::map<std::uint64_t, std::uint64_t> model;
  struct Snap {
    typename Tree::Snapshot handle;
    std::map<std::uint64_t, std::uint64_t> state;
  };
  std::vector<Snap> snaps;
  std::mt19937_64 rng(seed);
  int wrong = 0;
  auto check_range = [&](Snap& s, std::uint64_t a, std::uint64_t b) {
    Pairs got;
    EXPECT_TRUE(t.range(*env, s.handle, a, b, &got).ok());
    if (got != slice(s.state, a, b)) ++wrong;
  };
  for (int i = 0; i < ops && !(stop_at_first && wrong); ++i) {
    const std::uint64_t k = draw_key(rng);
    const int what = static_cast<int>(rng() % 40);
    if (what < 16) {
      const std::uint64_t v = rng();
      const TreeResult r = t.insert(*env, k, v);
      const auto it = model.find(k);
      if (it == model.end()) {
        EXPECT_EQ(r.status, OpStatus::kNotFound);
        model[k] = v;
      } else {
        EXPECT_EQ(r.status, OpStatus::kFound);
        EXPECT_EQ(r.value, it->second);
      }
    } else if (what < 28) {
      const TreeResult r = t.remove(*env, k);
      const auto it = model.find(k);
      EXPECT_EQ(r.status, it == model.end() ? OpStatus::kNotFound : OpStatus::kFound);
      if (it != model.end()) {
        EXPECT_EQ(r.value, it->second);
        model.erase(it);
      }
    } else if (what < 32) {
      const TreeResult r = t.get(*env, k);
      const auto it = model.find(k);
      EXPECT_EQ(r.status, it == model.end() ? OpStatus::kNotFound : OpStatus::kFound);
      if (it != model.end()) {
        EXPECT_EQ(r.value, it->second);
      }
    } else if (what < 34) {
      if (snaps.size() < 6) snaps.push_back({t.snapshot(), model});
    } else if (what < 35) {
      if (!snaps.empty()) snaps.erase(snaps.begin() + static_cast<std::ptrdiff_t>(rng() % snaps.size()));
    } else {
      if (snaps.empty()) continue;
      std::uint64_t a = draw_key(rng), b = draw_key(rng);
      if (a > b) std::swap(a, b);
      if (what == 39) a = 0, b = kMax;
      check_range(snaps[rng() % snaps.size()], a, b);
    }
  }
  for (Snap& s : snaps) check_range(s, 0, kMax);
  Pairs all;
  EXPECT_TRUE(t.entries(&all));
  EXPECT_EQ(all, slice(model, 0, kMax));
  return wrong;
}

template <class C>
class CodsVersionedModel : public ::testing::Test {};
TYPED_TEST_SUITE(CodsVersionedModel, Configs);

TYPED_TEST(CodsVersionedModel, RangesAtSnapshotsMatchTheReferenceHistory) {
  EXPECT_EQ((run_snapshot_model<TypeParam::K, TypeParam::R>(977, scaled(5000), nullptr, false)), 0);
}

/// Negative control: RANGE at the latest version instead of the snapshot must be caught.
TYPED_TEST(CodsVersionedModel, PlantedRangeAtLatestIsCaught) {
  Hooks hooks;
  hooks.bug = kBugRangeAtLatest;
  EXPECT_GT((run_snapshot_model<TypeParam::K, TypeParam::R>(5, scaled(5000), &hooks, true)), 0);
}

/// Versions are saved only while a snapshot can read them, and freed on the leaf's next update
/// once the snapshots that could read them are released.
TEST(CodsVersioned, VersionsBelowTheOldestSnapshotAreFreed) {
  CpuVersionedBLinkTree<4, F> t;
  auto env = t.session();
  for (std::uint64_t k = 0; k < 1000; ++k) ASSERT_EQ(t.insert(*env, k, k + 7).status, OpStatus::kNotFound);
  EXPECT_EQ(t.saved_versions(), 0u) << "no snapshot was live: nothing to save";
  auto s1 = t.snapshot();
  for (std::uint64_t k = 0; k < 1000; k += 2) ASSERT_EQ(t.remove(*env, k).status, OpStatus::kFound);
  const std::uint64_t after_one = t.saved_versions();
  EXPECT_GT(after_one, 0u);
  EXPECT_LE(after_one, 500u) << "one saved version per changed leaf (leaves hold at least 2 keys)";
  // Updates made while no newer snapshot exists save nothing more: s1 reads the saved ones.
  for (std::uint64_t k = 1; k < 1000; k += 4) ASSERT_EQ(t.remove(*env, k).status, OpStatus::kFound);
  EXPECT_EQ(t.saved_versions(), after_one);
  auto s2 = t.snapshot();
  for (std::uint64_t k = 3; k < 1000; k += 4) ASSERT_EQ(t.remove(*env, k).status, OpStatus::kFound);
  Pairs got;
  ASSERT_TRUE(t.range(*env, s1, 0, kMax, &got).ok());
  EXPECT_EQ(got.size(), 1000u);
  ASSERT_TRUE(t.range(*env, s2, 0, kMax, &got).ok());
  EXPECT_EQ(got.size(), 250u);
  ASSERT_TRUE(t.range_now(*env, 0, kMax, &got).ok());
  EXPECT_TRUE(got.empty());
  s1.release();
  s2.release();
  EXPECT_EQ(t.live_snapshots(), 0u);
  // The next update of every leaf cuts its whole chain.
  for (std::uint64_t k = 0; k < 1000; ++k) ASSERT_EQ(t.insert(*env, k, k).status, OpStatus::kNotFound);
  EXPECT_EQ(t.saved_versions(), 0u);
}

/// A page stops at its limit and says so; the pairs are the first ones in key order.
TEST(CodsVersioned, RangePagesStopAtTheirLimit) {
  CpuVersionedBLinkTree<8, E> t;
  auto env = t.session();
  for (std::uint64_t k = 0; k < 300; ++k) ASSERT_EQ(t.insert(*env, k * 3, k).status, OpStatus::kNotFound);
  auto s = t.snapshot();
  Pairs got;
  bool more = false;
  ASSERT_TRUE(t.range(*env, s, 10, 500, &got, 20, &more).ok());
  ASSERT_EQ(got.size(), 20u);
  EXPECT_TRUE(more);
  EXPECT_EQ(got.front().first, 12u);
  EXPECT_EQ(got.back().first, 12u + 19 * 3);
  ASSERT_TRUE(t.range(*env, s, 10, 40, &got, 20, &more).ok());
  EXPECT_EQ(got.size(), 10u);
  EXPECT_FALSE(more);
}

/// The CPU twin's batch: RANGEs read the state before the batch, updates apply in order.
TEST(CodsVersioned, BatchRangesReadTheStateBeforeTheBatch) {
  CpuVersionedBLinkTree<4, E> t;
  auto env = t.session();
  for (std::uint64_t k = 0; k < 50; ++k) ASSERT_EQ(t.insert(*env, k, k).status, OpStatus::kNotFound);
  const std::vector<Op> ops{Op::kRemove, kOpRange, Op::kInsert, Op::kGet, kOpRange, static_cast<Op>(9)};
  const std::vector<std::uint64_t> keys{5, 0, 100, 5, 90, 1};
  const std::vector<std::uint64_t> vals{0, 9, 1, 0, 200, 0};
  const Batch b{ops.data(), keys.data(), vals.data(), ops.size()};
  std::vector<OpStatus> st(ops.size());
  std::vector<std::uint64_t> out(ops.size()), rk(ops.size() * 16), rv(ops.size() * 16);
  VersionedBatchResult r{st.data(), out.data(), rk.data(), rv.data(), 16};
  ASSERT_TRUE(t.execute(*env, b, r).ok());
  EXPECT_EQ(st[0], OpStatus::kFound);
  EXPECT_EQ(out[1], 10u) << "key 5 is still present at the batch's snapshot";
  EXPECT_EQ(rk[16 + 5], 5u);
  EXPECT_EQ(st[3], OpStatus::kNotFound) << "GET reads the latest state";
  EXPECT_EQ(out[4], 0u) << "key 100 was inserted after the batch's snapshot";
  EXPECT_EQ(st[5], OpStatus::kInvalid);
}

/// A batch run at a snapshot held since earlier updates: its RANGEs read that snapshot (keys
/// removed since are there, keys inserted since are not) while its updates act on the latest
/// state; a released snapshot or another tree's is refused, nothing run.
TEST(CodsVersioned, BatchRangesAtAHeldSnapshot) {
  CpuVersionedBLinkTree<4, E> t;
  auto env = t.session();
  for (std::uint64_t k = 0; k < 50; ++k) ASSERT_EQ(t.insert(*env, k, k).status, OpStatus::kNotFound);
  auto held = t.snapshot();
  for (std::uint64_t k = 0; k < 10; ++k) ASSERT_EQ(t.remove(*env, k).status, OpStatus::kFound);
  ASSERT_EQ(t.insert(*env, 60, 6).status, OpStatus::kNotFound);
  const std::vector<Op> ops{kOpRange, Op::kRemove, kOpRange, Op::kGet};
  const std::vector<std::uint64_t> keys{0, 20, 55, 3};
  const std::vector<std::uint64_t> vals{9, 0, 70, 0};
  const Batch b{ops.data(), keys.data(), vals.data(), ops.size()};
  std::vector<OpStatus> st(ops.size());
  std::vector<std::uint64_t> out(ops.size()), rk(ops.size() * 16), rv(ops.size() * 16);
  VersionedBatchResult r{st.data(), out.data(), rk.data(), rv.data(), 16};
  ASSERT_TRUE(t.execute(*env, b, r, &held).ok());
  EXPECT_EQ(out[0], 10u) << "keys 0..9 were present at the held snapshot";
  EXPECT_EQ(rk[3], 3u);
  EXPECT_EQ(st[1], OpStatus::kFound) << "the batch's updates act on the latest state";
  EXPECT_EQ(out[2], 0u) << "key 60 was inserted after the held snapshot";
  EXPECT_EQ(st[3], OpStatus::kNotFound) << "GET reads the latest state";
  // Again at the same snapshot: the batch's own removal of 20 does not show there either.
  const std::vector<Op> again{kOpRange};
  const std::vector<std::uint64_t> from{20}, to{20};
  ASSERT_TRUE(t.execute(*env, Batch{again.data(), from.data(), to.data(), 1}, r, &held).ok());
  EXPECT_EQ(out[0], 1u);
  const std::vector<Op> rm{Op::kRemove};
  const std::vector<std::uint64_t> k25{25};
  const Batch remove25{rm.data(), k25.data(), nullptr, 1};
  CpuVersionedBLinkTree<4, E> other;
  auto theirs = other.snapshot();
  EXPECT_EQ(t.execute(*env, remove25, r, &theirs).code(), StatusCode::kInvalidArgument);
  held.release();
  EXPECT_EQ(t.execute(*env, remove25, r, &held).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.get(*env, 25).status, OpStatus::kFound) << "a refused batch ran nothing";
}

TEST(CodsVersioned, BadInput) {
  CpuVersionedBLinkTree<4, F> t;
  auto env = t.session();
  auto s = t.snapshot();
  Pairs got;
  const Status bad = t.range(*env, s, 9, 3, &got);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.to_string().find('9'), std::string::npos);
  EXPECT_NE(bad.to_string().find('3'), std::string::npos);
  EXPECT_FALSE(t.range(*env, s, 1, 3, nullptr).ok());
  CpuVersionedBLinkTree<4, F>::Snapshot gone;
  EXPECT_FALSE(t.range(*env, gone, 1, 3, &got).ok());
  const std::vector<Op> ops{kOpRange};
  const std::vector<std::uint64_t> keys{8}, vals{2};
  std::vector<OpStatus> st(1);
  std::vector<std::uint64_t> out(1), rk(4), rv(4);
  VersionedBatchResult r{st.data(), out.data(), rk.data(), rv.data(), 4};
  EXPECT_FALSE(t.execute(*env, Batch{ops.data(), keys.data(), vals.data(), 1}, r).ok());
  EXPECT_FALSE(t.execute(*env, Batch{ops.data(), keys.data(), nullptr, 1}, r).ok());
  EXPECT_FALSE(t.execute(*env, Batch{nullptr, keys.data(), vals.data(), 1}, r).ok());
}

}  // namespace
