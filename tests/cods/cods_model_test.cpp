// The CODS lazy list, hash set and B-link tree on one CPU thread, against std::set / std::map:
// K from 1 to 16 in both regimes, keys including 0 and 2^64-1, the search bound of 5.4
// (ceil(n/K) node reads), the fragment operations the node updates are built from, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "index/cods/cpu.hpp"

using namespace duet;
using namespace duet::cods;
using namespace duet::cods::ds;

namespace {

constexpr std::uint64_t kMax = ~std::uint64_t(0);

template <unsigned K_, Regime R_>
struct Cfg {
  static constexpr unsigned K = K_;
  static constexpr Regime R = R_;
};
constexpr Regime E = Regime::kElementwise;
constexpr Regime F = Regime::kFullyAtomic;
#if defined(__SANITIZE_ADDRESS__)
// The AddressSanitizer build (scripts/test) compiles a representative subset: each regime, the
// one-key node, a full-line node and the largest; 16 instantiations (of 32 now) already cost
// it over two minutes of compile time, and every build without sanitizers runs all 32.
using Configs = ::testing::Types<Cfg<1, E>, Cfg<8, F>, Cfg<16, E>>;
#else
// Every K from 1 to 16 in both regimes (issue 18), K = 14 included: the 128 B node of both regimes.
using Configs = ::testing::Types<Cfg<1, E>, Cfg<1, F>, Cfg<2, E>, Cfg<2, F>, Cfg<3, E>, Cfg<3, F>, Cfg<4, E>, Cfg<4, F>,
                                 Cfg<5, E>, Cfg<5, F>, Cfg<6, E>, Cfg<6, F>, Cfg<7, E>, Cfg<7, F>, Cfg<8, E>, Cfg<8, F>,
                                 Cfg<9, E>, Cfg<9, F>, Cfg<10, E>, Cfg<10, F>, Cfg<11, E>, Cfg<11, F>, Cfg<12, E>,
                                 Cfg<12, F>, Cfg<13, E>, Cfg<13, F>, Cfg<14, E>, Cfg<14, F>, Cfg<15, E>, Cfg<15, F>,
                                 Cfg<16, E>, Cfg<16, F>>;
#endif

/// Names an instantiation by its K and regime ("K14_fa", "K3_ew").
struct CfgName {
  template <class C>
  static std::string GetName(int) {
    return "K" + std::to_string(C::K) + (C::R == F ? "_fa" : "_ew");
  }
};

/// Keys from a mix: the edges (0, 1, 2^64-2, 2^64-1), a small dense range (collisions,
/// splits and emptied nodes), and the full 64-bit range.
std::uint64_t draw_key(std::mt19937_64& rng) {
  const std::uint64_t r = rng() % 16;
  if (r == 0) {
    static constexpr std::uint64_t kEdges[] = {0, 1, kMax - 1, kMax};
    return kEdges[rng() % 4];
  }
  if (r < 12) return rng() % 300;
  if (r < 14) return kMax - rng() % 300;
  return rng();
}

template <class C>
class CodsModel : public ::testing::Test {};
TYPED_TEST_SUITE(CodsModel, Configs, CfgName);

/// Runs random operations on a set structure S against std::set; `keys_sorted` says whether
/// S::keys() comes in key order (the list) or not (the hash set).
template <class S>
void run_set_model(S& s, std::uint64_t seed, int ops, bool keys_sorted) {
  auto env = s.session();
  std::set<std::uint64_t> model;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t k = draw_key(rng);
    const int what = static_cast<int>(rng() % 10);
    // Phases: mostly inserts first, then mostly removes, so nodes fill, split and empty.
    const bool fill = (i / (ops / 4)) % 2 == 0;
    if (what < (fill ? 5 : 2)) {
      const bool inserted = model.insert(k).second;
      ASSERT_EQ(s.insert(*env, k), inserted ? OpStatus::kNotFound : OpStatus::kFound) << "insert " << k << " op " << i;
    } else if (what < 7) {
      const bool removed = model.erase(k) == 1;
      ASSERT_EQ(s.remove(*env, k), removed ? OpStatus::kFound : OpStatus::kNotFound) << "remove " << k << " op " << i;
    } else {
      ASSERT_EQ(s.contains(*env, k), model.count(k) == 1) << "contains " << k << " op " << i;
    }
  }
  std::vector<std::uint64_t> got = s.keys();
  if (!keys_sorted) std::sort(got.begin(), got.end());
  const std::vector<std::uint64_t> want(model.begin(), model.end());
  EXPECT_EQ(got, want);
  for (std::uint64_t k : {std::uint64_t(0), kMax}) EXPECT_EQ(s.contains(*env, k), model.count(k) == 1);
}

/// Random GET, INSERT and REMOVE on a tree of K keys per node against std::map.
template <unsigned K, Regime R>
void run_tree_model(std::uint64_t seed, int ops) {
  SCOPED_TRACE("K = " + std::to_string(K));
  CpuBLinkTree<K, R> tree;
  auto env = tree.session();
  std::map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    // Wider dense range than the sets so the tree grows several levels.
    std::uint64_t k = draw_key(rng);
    if (rng() % 2) k = rng() % 5000;
    const int what = static_cast<int>(rng() % 10);
    const bool fill = i < ops / 2;
    if (what < (fill ? 6 : 2)) {
      const std::uint64_t v = rng();
      const auto [it, inserted] = model.emplace(k, v);
      const TreeResult r = tree.insert(*env, k, v);
      ASSERT_EQ(r.status, inserted ? OpStatus::kNotFound : OpStatus::kFound) << "insert " << k << " op " << i;
      if (!inserted) {
        ASSERT_EQ(r.value, it->second);
      }
    } else if (what < 7) {
      const auto it = model.find(k);
      const TreeResult r = tree.remove(*env, k);
      ASSERT_EQ(r.status, it != model.end() ? OpStatus::kFound : OpStatus::kNotFound) << "remove " << k << " op " << i;
      if (it != model.end()) {
        ASSERT_EQ(r.value, it->second);
        model.erase(it);
      }
    } else {
      const auto it = model.find(k);
      const TreeResult r = tree.get(*env, k);
      ASSERT_EQ(r.status, it != model.end() ? OpStatus::kFound : OpStatus::kNotFound) << "get " << k << " op " << i;
      if (it != model.end()) {
        ASSERT_EQ(r.value, it->second);
      }
    }
    if (i == ops / 2) {
      EXPECT_GE(tree.height(), 2u);
    }
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
  EXPECT_TRUE(tree.entries(&got)) << "a leaf is out of order or holds a key beyond its high key";
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> want(model.begin(), model.end());
  EXPECT_EQ(got, want);
}

}  // namespace

TYPED_TEST(CodsModel, ListAgainstStdSet) {
  CpuLazyList<TypeParam::K, TypeParam::R> list;
  run_set_model(list, 11 + TypeParam::K, 12000, true);
}

TYPED_TEST(CodsModel, HashSetAgainstStdSet) {
  using Set = CpuHashSet<TypeParam::K, TypeParam::R>;
  std::unique_ptr<Set> set;
  ASSERT_TRUE(Set::make(7, &set).ok());
  run_set_model(*set, 23 + TypeParam::K, 12000, false);
}

TYPED_TEST(CodsModel, TreeAgainstStdMap) { run_tree_model<TypeParam::K, TypeParam::R>(37 + TypeParam::K, 30000); }

// The largest K a tree node takes (TreeShape: the meta word's bitset below its level field at
// bit 48), both regimes: one more key is a compile error (ctest CodsTreeK49CompileCheck).
TEST(CodsModelLargestK, TreeAtK48AgainstStdMap) {
  run_tree_model<48, E>(48, 20000);
  run_tree_model<48, F>(49, 20000);
}

// 5.4's bound: without removals a search reads ceil(n/K) nodes when the nodes are full
// (ascending inserts fill them), plus the keyless head in the elementwise regime (the fully
// atomic head holds keys), and at most 2 + ceil((n-1) / floor((K+1)/2)) when they came from
// splits (every node but the last keeps at least floor((K+1)/2) keys).
TYPED_TEST(CodsModel, ListSearchReadsCeilNOverKNodes) {
  constexpr unsigned K = TypeParam::K;
  for (const std::uint64_t n : {std::uint64_t(1), std::uint64_t(K), std::uint64_t(K + 1), std::uint64_t(1000)}) {
    CpuLazyList<K, TypeParam::R> list;
    auto env = list.session();
    for (std::uint64_t k = 0; k < n; ++k) ASSERT_EQ(list.insert(*env, k * 3), OpStatus::kNotFound);
    for (const std::uint64_t probe : {3 * (n - 1), 3 * n, kMax}) {
      env->counters().node_reads = 0;
      (void)list.contains(*env, probe);
      const std::uint64_t head = CpuLazyList<K, TypeParam::R>::Algo::kKeyedHead ? 0 : 1;
      EXPECT_EQ(env->counters().node_reads, head + (n + K - 1) / K) << "n=" << n << " probe=" << probe;
    }
  }
  CpuLazyList<K, TypeParam::R> list;
  auto env = list.session();
  std::vector<std::uint64_t> keys(1000);
  for (std::uint64_t i = 0; i < keys.size(); ++i) keys[i] = i;
  std::shuffle(keys.begin(), keys.end(), std::mt19937_64(5));
  for (std::uint64_t k : keys) ASSERT_EQ(list.insert(*env, k), OpStatus::kNotFound);
  env->counters().node_reads = 0;
  (void)list.contains(*env, kMax);
  const std::uint64_t half = (K + 1) / 2;
  EXPECT_LE(env->counters().node_reads, 2 + (keys.size() - 1 + half - 1) / half);
}

// The fully atomic head holds keys: up to K keys are one node read; a full head splits into a
// new node after it; emptied, it stays linked in front of its successors and takes keys again.
// The elementwise head stays a keyless sentinel (one read more).
TYPED_TEST(CodsModel, HeadHoldsKeysInTheFullyAtomicRegime) {
  constexpr unsigned K = TypeParam::K;
  using L = CpuLazyList<K, TypeParam::R>;
  constexpr std::uint64_t head = L::Algo::kKeyedHead ? 0 : 1;
  static_assert(L::Algo::kKeyedHead == (TypeParam::R == F));
  L list;
  auto env = list.session();
  std::set<std::uint64_t> model;
  for (std::uint64_t k = 0; k < K; ++k) {  // descending: every insert is GT in the first node
    ASSERT_EQ(list.insert(*env, 1000 - 2 * k), OpStatus::kNotFound);
    model.insert(1000 - 2 * k);
  }
  env->counters().node_reads = 0;
  EXPECT_TRUE(list.contains(*env, 1000));
  EXPECT_EQ(env->counters().node_reads, head + 1);
  ASSERT_EQ(list.insert(*env, 1), OpStatus::kNotFound);  // the first node splits
  model.insert(1);
  EXPECT_EQ(list.keys(), std::vector<std::uint64_t>(model.begin(), model.end()));
  env->counters().node_reads = 0;
  EXPECT_TRUE(list.contains(*env, 1));
  EXPECT_EQ(env->counters().node_reads, head + 1);
  // Empty the first node's keys (the lower half after the split); the rest stay reachable.
  const std::uint64_t lower = (K + 2) / 2;
  std::vector<std::uint64_t> first(model.begin(), std::next(model.begin(), static_cast<long>(lower)));
  for (std::uint64_t k : first) {
    ASSERT_EQ(list.remove(*env, k), OpStatus::kFound);
    model.erase(k);
  }
  for (std::uint64_t k : model) EXPECT_TRUE(list.contains(*env, k)) << k;
  for (std::uint64_t k : first) EXPECT_FALSE(list.contains(*env, k)) << k;
  EXPECT_EQ(list.keys(), std::vector<std::uint64_t>(model.begin(), model.end()));
  ASSERT_EQ(list.insert(*env, 0), OpStatus::kNotFound);  // into the emptied head (fully atomic)
  model.insert(0);
  env->counters().node_reads = 0;
  EXPECT_TRUE(list.contains(*env, 0));
  EXPECT_EQ(env->counters().node_reads, 1u + head);
  EXPECT_EQ(list.keys(), std::vector<std::uint64_t>(model.begin(), model.end()));
}

// A tree GET reads one node per level when nothing moves (no right moves in a quiet tree).
TYPED_TEST(CodsModel, TreeGetReadsOneNodePerLevel) {
  CpuBLinkTree<TypeParam::K, TypeParam::R> tree;
  auto env = tree.session();
  for (std::uint64_t k = 0; k < 3000; ++k) ASSERT_EQ(tree.insert(*env, (k * 7919) % 3001, k).status, OpStatus::kNotFound);
  for (std::uint64_t k : {std::uint64_t(0), std::uint64_t(1500), std::uint64_t(3000), kMax}) {
    env->counters().node_reads = 0;
    (void)tree.get(*env, k);
    // Parent entries are inserted eagerly in a single-threaded run, so a GET takes no right link.
    EXPECT_EQ(env->counters().node_reads, tree.height()) << "key " << k;
  }
}

// ---- Fragment operations (common.hpp) on the CPU group.

TEST(CodsFragments, InsertRemoveSplitKeepOrder) {
  using F = Fragment<8, CpuThread>;
  const CpuThread g;
  F f;
  for (unsigned i = 0; i < 8; ++i) f.e[i] = 10 * (i + 1);  // 10..80; slots 5.. play "meta"
  insert_at(g, f, 5, 2, 25);
  EXPECT_EQ(std::vector<std::uint64_t>(f.e, f.e + 8), (std::vector<std::uint64_t>{10, 20, 25, 30, 40, 50, 70, 80}));
  remove_at(g, f, 6, 0);
  EXPECT_EQ(std::vector<std::uint64_t>(f.e, f.e + 8), (std::vector<std::uint64_t>{20, 25, 30, 40, 50, 0, 70, 80}));
  F upper = split_off(g, f, 5, 3);
  EXPECT_EQ(std::vector<std::uint64_t>(f.e, f.e + 8), (std::vector<std::uint64_t>{20, 25, 30, 0, 0, 0, 70, 80}));
  EXPECT_EQ(std::vector<std::uint64_t>(upper.e, upper.e + 8), (std::vector<std::uint64_t>{40, 50, 0, 0, 0, 0, 0, 0}));
  const F down = pulled(g, upper, -3);
  EXPECT_EQ(std::vector<std::uint64_t>(down.e, down.e + 8), (std::vector<std::uint64_t>{0, 0, 0, 40, 50, 0, 0, 0}));
}

// ---- Bad input.

TEST(CodsBadInput, HashSetBucketCount) {
  using Set = CpuHashSet<8, E>;
  std::unique_ptr<Set> s;
  Status st = Set::make(0, &s);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("bucket count 0"), std::string::npos) << st.message();
  EXPECT_EQ(Set::make((std::uint64_t(1) << 32) + 1, &s).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Set::make(4, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Set::make(1, &s).ok());
}

TEST(CodsBadInput, NullArraysAndUnknownOps) {
  using List = CpuLazyList<4, F>;
  List list;
  auto env = list.session();
  const Op ops[3] = {Op::kInsert, static_cast<Op>(7), Op::kGet};
  const std::uint64_t keys[3] = {kMax, 5, kMax};
  OpStatus status[3];
  std::uint64_t out[3];
  BatchResult res{status, out};
  EXPECT_EQ(list.execute(*env, Batch{nullptr, keys, nullptr, 3}, res).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(list.execute(*env, Batch{ops, nullptr, nullptr, 3}, res).code(), StatusCode::kInvalidArgument);
  BatchResult no_status{nullptr, out};
  EXPECT_EQ(list.execute(*env, Batch{ops, keys, nullptr, 3}, no_status).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(list.contains(*env, kMax) == false);  // nothing ran
  ASSERT_TRUE(list.execute(*env, Batch{ops, keys, nullptr, 3}, res).ok());
  EXPECT_EQ(status[0], OpStatus::kNotFound);  // inserted
  EXPECT_EQ(status[1], OpStatus::kInvalid);
  EXPECT_EQ(status[2], OpStatus::kFound);
  EXPECT_EQ(list.keys(), std::vector<std::uint64_t>{kMax});

  using Tree = CpuBLinkTree<4, E>;
  Tree tree;
  auto tenv = tree.session();
  EXPECT_EQ(tree.execute(*tenv, Batch{ops, keys, nullptr, 3}, res).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tree.get(*tenv, kMax).status, OpStatus::kNotFound);  // nothing ran
  const std::uint64_t vals[3] = {42, 0, 0};
  ASSERT_TRUE(tree.execute(*tenv, Batch{ops, keys, vals, 3}, res).ok());
  EXPECT_EQ(status[1], OpStatus::kInvalid);
  EXPECT_EQ(status[2], OpStatus::kFound);
  EXPECT_EQ(out[2], 42u);
  EXPECT_TRUE(list.execute(*env, Batch{nullptr, nullptr, nullptr, 0}, res).ok());  // empty batch: no-op
}
