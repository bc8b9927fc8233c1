// The CODS lazy list, hash set and B-link tree on the simulated remote-memory backend
// (src/cods/remote.hpp, src/index/cods/remote_env.hpp, remote_front.hpp; docs/cods.md,
// "Remote memory"): against std::set / std::map for several K in both regimes (keys include 0
// and 2^64-1), the remote words' node ids, the round-trip counts of the search bound, the
// delay, bad input, and concurrent histories checked per key (with a planted-bug control).
//
// Sizes scale with DUET_TEST_SCALE (default 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "checkers/linearizability.hpp"
#include "checkers/set_linearizability.hpp"
#include "index/cods/remote_front.hpp"
#include "cods/test_scale.hpp"

using namespace duet;
using namespace duet::checkers;
using namespace duet::cods;
using namespace duet::cods::ds;

namespace {

constexpr Regime E = Regime::kElementwise;
constexpr Regime F = Regime::kFullyAtomic;
constexpr std::uint64_t kMax = ~std::uint64_t(0);

using duet::cods::test_util::scale;
int scaled(int n) { return std::max(50, static_cast<int>(n * scale())); }

/// Three memory nodes, so node words carry ids 0, 1 and 2; no delay.
RemoteConfig three_nodes() {
  RemoteConfig c;
  c.memory_nodes = 3;
  c.region_bytes = 16ull << 20;
  return c;
}

/// Key of draw r among `range`: half from the bottom of the key space, half from the top.
std::uint64_t key_at(std::uint64_t r) { return r % 2 ? kMax - r / 2 : r / 2; }

/// Random operations on a remote set against std::set; ends comparing the key lists.
template <class S>
void set_matches_model(S& s, std::uint64_t range, int ops, std::uint64_t seed) {
  auto env = s.session();
  std::set<std::uint64_t> model;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t k = key_at(rng() % range);
    const unsigned what = rng() % 10;
    if (what < 5) {
      const bool fresh = model.insert(k).second;
      ASSERT_EQ(s.insert(*env, k), fresh ? OpStatus::kNotFound : OpStatus::kFound) << "insert " << k;
    } else if (what < 8) {
      const bool had = model.erase(k) > 0;
      ASSERT_EQ(s.remove(*env, k), had ? OpStatus::kFound : OpStatus::kNotFound) << "remove " << k;
    } else {
      ASSERT_EQ(s.contains(*env, k), model.count(k) > 0) << "contains " << k;
    }
  }
  std::vector<std::uint64_t> keys = s.keys();
  std::sort(keys.begin(), keys.end());
  ASSERT_EQ(keys, std::vector<std::uint64_t>(model.begin(), model.end()));
  ASSERT_TRUE(s.contains(*env, 0) == (model.count(0) > 0));
  ASSERT_TRUE(s.contains(*env, kMax) == (model.count(kMax) > 0));
}

template <unsigned K, Regime R>
void list_model(std::uint64_t seed) {
  std::unique_ptr<RemoteLazyList<K, R>> l;
  ASSERT_TRUE((RemoteLazyList<K, R>::make(three_nodes(), &l).ok()));
  set_matches_model(*l, 64, scaled(3000), seed);
  const std::vector<std::uint64_t> keys = l->keys();  // list order is key order
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
}

template <unsigned K, Regime R>
void hash_model(std::uint64_t seed) {
  std::unique_ptr<RemoteHashSet<K, R>> h;
  ASSERT_TRUE((RemoteHashSet<K, R>::make(three_nodes(), 7, &h).ok()));
  set_matches_model(*h, 200, scaled(4000), seed);
}

template <unsigned K, Regime R>
void tree_model(std::uint64_t seed) {
  std::unique_ptr<RemoteBLinkTree<K, R>> t;
  ASSERT_TRUE((RemoteBLinkTree<K, R>::make(three_nodes(), &t).ok()));
  auto env = t->session();
  std::map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(seed);
  const int ops = scaled(4000);
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t k = key_at(rng() % 600);
    const std::uint64_t v = rng();
    const unsigned what = rng() % 10;
    if (what < 5) {
      auto [it, fresh] = model.emplace(k, v);
      const TreeResult r = t->insert(*env, k, v);
      ASSERT_EQ(r.status, fresh ? OpStatus::kNotFound : OpStatus::kFound) << "insert " << k;
      if (!fresh) {
        ASSERT_EQ(r.value, it->second);
      }
    } else if (what < 7) {
      auto it = model.find(k);
      const TreeResult r = t->remove(*env, k);
      ASSERT_EQ(r.status, it != model.end() ? OpStatus::kFound : OpStatus::kNotFound) << "remove " << k;
      if (it != model.end()) {
        ASSERT_EQ(r.value, it->second);
        model.erase(it);
      }
    } else {
      auto it = model.find(k);
      const TreeResult r = t->get(*env, k);
      ASSERT_EQ(r.status, it != model.end() ? OpStatus::kFound : OpStatus::kNotFound) << "get " << k;
      if (it != model.end()) {
        ASSERT_EQ(r.value, it->second);
      }
    }
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> entries;
  ASSERT_TRUE(t->entries(&entries));
  ASSERT_EQ(entries, (std::vector<std::pair<std::uint64_t, std::uint64_t>>(model.begin(), model.end())));
}

}  // namespace

// The AddressSanitizer build (scripts/test) compiles one configuration per regime of each
// structure (outside the #if blocks); every build without sanitizers runs them all.
TEST(CodsRemoteModel, ListBothRegimes) {
  list_model<1, E>(1);
  list_model<6, F>(4);  // the 64 B fully atomic node of the seed's RDMA list
#if !defined(__SANITIZE_ADDRESS__)
  list_model<1, F>(2);
  list_model<6, E>(3);
  list_model<13, E>(5);
  list_model<13, F>(6);
#endif
}

TEST(CodsRemoteModel, HashSetBothRegimes) {
  hash_model<1, E>(11);
  hash_model<6, F>(12);
#if !defined(__SANITIZE_ADDRESS__)
  hash_model<12, E>(13);
  hash_model<12, F>(14);
#endif
}

TEST(CodsRemoteModel, TreeBothRegimes) {
  tree_model<1, E>(21);
  tree_model<2, F>(22);
#if !defined(__SANITIZE_ADDRESS__)
  tree_model<6, E>(23);
  tree_model<12, F>(24);
#endif
}

// Every stored node word names the memory node whose region holds its target, and nodes are
// spread over all three memory nodes.
TEST(CodsRemoteModel, NodeWordsCarryTheirMemoryNode) {
  using L = RemoteLazyList<2, E>;
  std::unique_ptr<L> l;
  ASSERT_TRUE(L::make(three_nodes(), &l).ok());
  auto env = l->session();
  for (std::uint64_t k = 0; k < 60; ++k) ASSERT_EQ(l->insert(*env, k * 7), OpStatus::kNotFound);
  std::set<unsigned> seen;
  RemoteMemory& mem = l->memory();
  // Walk from the head (memory node 0, at the start of its region) by the raw next words.
  using Node = L::Node;
  Node* n = reinterpret_cast<Node*>(mem.base(0) + 128);
  for (int hops = 0;; ++hops) {
    ASSERT_LT(hops, 1000);
    const std::uint64_t w = n->data().elem[L::Algo::Shape::kNext];
    if (w == 0) break;
    const unsigned id = RemotePtr::node_of(w);
    ASSERT_TRUE(mem.contains(id, RemotePtr::address_of(w), sizeof(Node))) << "word " << std::hex << w;
    seen.insert(id);
    n = reinterpret_cast<Node*>(RemotePtr::address_of(w));
  }
  EXPECT_EQ(seen, (std::set<unsigned>{0, 1, 2}));
  EXPECT_EQ(RemotePtr::encode(5, 0), 0u);
  EXPECT_EQ(RemotePtr::node_of(RemotePtr::encode(5, 0x1000)), 5u);
  EXPECT_EQ(RemotePtr::address_of(RemotePtr::encode(5, 0x1000) | 1), 0x1001u);
}

// 5.4's bound in round trips: a search through n keys in full nodes reads ceil(n/K) nodes
// (and the keyless head, elementwise), one read each (two for a fully atomic node above 64 B), and makes no write
// or CAS. Keys inserted in ascending order fill every node but the last.
template <unsigned K, Regime R>
void list_search_bound(std::uint64_t n) {
  using L = RemoteLazyList<K, R>;
  std::unique_ptr<L> l;
  ASSERT_TRUE(L::make(three_nodes(), &l).ok());
  auto env = l->session();
  for (std::uint64_t k = 0; k < n; ++k) ASSERT_EQ(l->insert(*env, k), OpStatus::kNotFound);
  const RemoteCounters before = env->counters();
  ASSERT_FALSE(l->contains(*env, kMax));  // END: every node
  const RemoteCounters& after = env->counters();
  const std::uint64_t nodes = (L::Algo::kKeyedHead ? 0 : 1) + (n + K - 1) / K;
  const unsigned per_get = get_trips(R == F, L::Algo::kDataBytes);
  EXPECT_EQ(after.node_reads - before.node_reads, nodes) << "K=" << K << " n=" << n;
  EXPECT_EQ(after.reads - before.reads, nodes * per_get) << "K=" << K << " n=" << n;
  EXPECT_EQ(after.writes, before.writes);
  EXPECT_EQ(after.cases, before.cases);
}

TEST(CodsRemoteBound, ListSearchReadsCeilNOverKNodes) {
  list_search_bound<1, E>(100);
  list_search_bound<1, F>(100);
  list_search_bound<6, F>(1000);  // 64 B of data: one read per node
  list_search_bound<8, E>(1000);
  list_search_bound<8, F>(1000);  // above 64 B: a version re-check per node
  list_search_bound<13, E>(999);
}

// The same bound through the hash set (one bucket) and the tree's: a GET reads the root word
// and two words per level; an insert into a leaf with room takes one CAS and two writes (the
// node, the release).
TEST(CodsRemoteBound, HashSetAndTreeRoundTrips) {
  std::unique_ptr<RemoteHashSet<4, E>> h;
  ASSERT_TRUE((RemoteHashSet<4, E>::make(three_nodes(), 1, &h).ok()));
  auto he = h->session();
  for (std::uint64_t k = 0; k < 400; ++k) ASSERT_EQ(h->insert(*he, k), OpStatus::kNotFound);
  std::uint64_t r0 = he->counters().node_reads;
  ASSERT_FALSE(h->contains(*he, kMax));
  EXPECT_EQ(he->counters().node_reads - r0, 1u + 400 / 4);

  std::unique_ptr<RemoteBLinkTree<8, F>> t;
  ASSERT_TRUE((RemoteBLinkTree<8, F>::make(three_nodes(), &t).ok()));
  auto te = t->session();
  for (std::uint64_t k = 0; k < 2000; k += 2) ASSERT_EQ(t->insert(*te, k, k).status, OpStatus::kNotFound);
  const unsigned height = t->height();
  RemoteCounters b = te->counters();
  ASSERT_EQ(t->get(*te, 1000).status, OpStatus::kFound);
  RemoteCounters a = te->counters();
  EXPECT_EQ(a.node_reads - b.node_reads, height);
  EXPECT_EQ(a.reads - b.reads, 1 + 2 * height);
  // An odd key goes into a leaf that has room after the even keys' splits, or splits it.
  for (std::uint64_t k = 1;; k += 2) {
    b = te->counters();
    ASSERT_EQ(t->insert(*te, k, k).status, OpStatus::kNotFound);
    a = te->counters();
    if (a.writes - b.writes == 2) {  // no split
      EXPECT_EQ(a.cases - b.cases, 1u);
      EXPECT_EQ(a.reads - b.reads, 2 + 2 * height);  // the descent, then the leaf under its lock
      break;
    }
    ASSERT_LT(k, 2000u) << "every insert split";
  }
}

// Each round trip costs the configured delay (a lower bound: the machine may add to it).
TEST(CodsRemoteBound, DelayIsPaidPerRoundTrip) {
  RemoteConfig c = three_nodes();
  c.delay_ns = 20'000;
  std::unique_ptr<RemoteLazyList<4, E>> l;
  ASSERT_TRUE((RemoteLazyList<4, E>::make(c, &l).ok()));
  auto env = l->session();
  for (std::uint64_t k = 0; k < 20; ++k) ASSERT_EQ(l->insert(*env, k), OpStatus::kNotFound);
  const std::uint64_t trips0 = env->counters().round_trips();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_FALSE(l->contains(*env, kMax));
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  const std::uint64_t trips = env->counters().round_trips() - trips0;
  EXPECT_EQ(trips, 5u * (1 + 5));
  EXPECT_GE(static_cast<std::uint64_t>(ns), trips * c.delay_ns);
}

TEST(CodsRemoteBadInput, ConfigurationAndBuckets) {
  std::unique_ptr<RemoteLazyList<4, E>> l;
  RemoteConfig c;
  c.memory_nodes = 0;
  EXPECT_TRUE((RemoteLazyList<4, E>::make(c, &l).code() == StatusCode::kInvalidArgument));
  c.memory_nodes = 65;
  EXPECT_TRUE((RemoteLazyList<4, E>::make(c, &l).code() == StatusCode::kInvalidArgument));
  c = RemoteConfig{};
  c.region_bytes = 1000;
  EXPECT_TRUE((RemoteLazyList<4, E>::make(c, &l).code() == StatusCode::kInvalidArgument));
  EXPECT_TRUE((RemoteLazyList<4, E>::make(RemoteConfig{}, nullptr).code() == StatusCode::kInvalidArgument));
  std::unique_ptr<RemoteHashSet<4, E>> h;
  EXPECT_TRUE((RemoteHashSet<4, E>::make(RemoteConfig{}, 0, &h).code() == StatusCode::kInvalidArgument));
  c = RemoteConfig{};
  c.region_bytes = 1 << 20;
  EXPECT_TRUE((RemoteHashSet<4, E>::make(c, 1'000'000, &h).code() == StatusCode::kResourceExhausted));

  ASSERT_TRUE((RemoteLazyList<4, E>::make(RemoteConfig{}, &l).ok()));
  auto env = l->session();
  EXPECT_EQ(l->execute(*env, static_cast<Op>(9), 1), OpStatus::kInvalid);
  Batch b;
  b.n = 1;
  BatchResult r;
  EXPECT_TRUE(l->execute(*env, b, r).code() == StatusCode::kInvalidArgument);
}

// A full region: inserts return kRetry and change nothing; the set stays correct.
template <Regime R>
void region_full_changes_nothing() {
  RemoteConfig c;
  c.region_bytes = 64 * 1024;
  std::unique_ptr<RemoteLazyList<2, R>> l;
  ASSERT_TRUE((RemoteLazyList<2, R>::make(c, &l).ok()));
  auto env = l->session();
  std::set<std::uint64_t> model;
  std::uint64_t k = 0;
  int retries = 0;
  for (; k < 100'000 && retries < 10; ++k) {
    const OpStatus st = l->insert(*env, k * 3);
    if (st == OpStatus::kRetry) {
      ++retries;
      continue;
    }
    ASSERT_EQ(st, OpStatus::kNotFound);
    model.insert(k * 3);
  }
  ASSERT_EQ(retries, 10);
  EXPECT_EQ(l->keys(), std::vector<std::uint64_t>(model.begin(), model.end()));
  for (std::uint64_t x : model) ASSERT_TRUE(l->contains(*env, x));
  // A batch on the full region: ResourceExhausted, as the GPU driver answers; the inserts that
  // found no node stay kRetry and change nothing, the GET beside them is answered.
  const Op ops[3] = {Op::kInsert, Op::kGet, Op::kInsert};
  const std::uint64_t keys[3] = {k * 3 + 1, *model.begin(), k * 3 + 2};
  OpStatus st[3];
  std::uint64_t vals[3];
  BatchResult r{st, vals};
  const Status bs = l->execute(*env, Batch{ops, keys, nullptr, 3}, r);
  EXPECT_EQ(bs.code(), StatusCode::kResourceExhausted) << bs.to_string();
  EXPECT_EQ(st[0], OpStatus::kRetry);
  EXPECT_EQ(st[1], OpStatus::kFound);
  EXPECT_EQ(st[2], OpStatus::kRetry);
  EXPECT_EQ(l->keys(), std::vector<std::uint64_t>(model.begin(), model.end()));
}

TEST(CodsRemoteBadInput, RegionFullChangesNothing) {
  region_full_changes_nothing<E>();
  region_full_changes_nothing<F>();
}

// ---- Concurrent histories: 3 threads, a yield between each update's search and its locks.

namespace {

using History = std::unordered_map<std::uint64_t, std::vector<RegisterOp>>;
using Log = std::vector<std::pair<std::uint64_t, RegisterOp>>;
constexpr unsigned kThreads = 3;

/// Runs body(t, env, rng, log) on kThreads threads started together; returns the merged logs
/// (envs stay open for the caller's closing reads).
template <class S, class Body>
History run_threads(S& s, const Hooks& hooks, std::uint64_t seed, std::vector<std::unique_ptr<RemoteEnv>>& envs,
                    Body body) {
  std::vector<Log> logs(kThreads);
  for (unsigned t = 0; t < kThreads; ++t) envs.push_back(s.session(&hooks));
  std::atomic<unsigned> ready{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + t);
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      body(t, *envs[t], rng, logs[t]);
    });
  }
  for (auto& th : threads) th.join();
  History h;
  for (auto& log : logs)
    for (auto& [k, op] : log) h[k].push_back(op);
  return h;
}

template <class S>
History set_history(S& s, const Hooks& hooks, int ops, std::uint64_t range, std::uint64_t seed) {
  std::atomic<std::uint64_t> clock{0};
  std::atomic<bool> broken{false};  // planted bugs only: an operation gave up
  std::vector<std::unique_ptr<RemoteEnv>> envs;
  History h = run_threads(s, hooks, seed, envs, [&](unsigned, RemoteEnv& env, std::mt19937_64& rng, Log& log) {
    for (int i = 0; i < ops && !broken.load(std::memory_order_relaxed); ++i) {
      const std::uint64_t k = key_at(rng() % range);
      const unsigned what = rng() % 10;
      const Op op = what < 4 ? Op::kInsert : what < 8 ? Op::kRemove : Op::kGet;
      const std::uint64_t invoke = clock.fetch_add(1);
      const OpStatus st = s.execute(env, op, k);
      const std::uint64_t response = clock.fetch_add(1);
      if (st == OpStatus::kRetry) {  // gave up, changing nothing: left out
        broken.store(true);
        break;
      }
      const SetOpKind kind = op == Op::kInsert ? SetOpKind::kInsert : op == Op::kRemove ? SetOpKind::kRemove
                                                                                        : SetOpKind::kContains;
      log.emplace_back(k, set_op(kind, invoke, response, op == Op::kInsert ? st == OpStatus::kNotFound
                                                                           : st == OpStatus::kFound));
    }
  });
  for (std::uint64_t r = 0; r < range; ++r) {
    const std::uint64_t k = key_at(r);
    const std::uint64_t invoke = clock.fetch_add(1);
    const OpStatus st = s.execute(*envs[0], Op::kGet, k);
    if (st == OpStatus::kRetry) continue;
    h[k].push_back(set_op(SetOpKind::kContains, invoke, clock.fetch_add(1), st == OpStatus::kFound));
  }
  return h;
}

template <unsigned K, Regime R>
History tree_history(RemoteBLinkTree<K, R>& tree, const Hooks& hooks, int ops, std::uint64_t range, std::uint64_t seed) {
  std::atomic<std::uint64_t> clock{0};
  std::vector<std::unique_ptr<RemoteEnv>> envs;
  History h = run_threads(tree, hooks, seed, envs, [&](unsigned t, RemoteEnv& env, std::mt19937_64& rng, Log& log) {
    for (int i = 0; i < ops; ++i) {
      const std::uint64_t k = key_at(rng() % range);
      const unsigned what = rng() % 10;
      RegisterOp op;
      op.invoke = clock.fetch_add(1);
      if (what < 6) {
        const std::uint64_t v = (std::uint64_t(t + 1) << 40) | std::uint64_t(i);
        const TreeResult r = tree.insert(env, k, v);
        if (r.status == OpStatus::kNotFound) {
          op.kind = RegisterOpKind::kPut;
          op.arg = v;
        } else {  // present: a read of the present value
          op.kind = RegisterOpKind::kGet;
          op.found = true;
          op.out = r.value;
        }
      } else if (what < 8) {
        const TreeResult r = tree.remove(env, k);
        op.kind = RegisterOpKind::kDelete;
        op.found = r.status == OpStatus::kFound;
        op.out = r.value;
      } else {
        const TreeResult r = tree.get(env, k);
        op.kind = RegisterOpKind::kGet;
        op.found = r.status == OpStatus::kFound;
        op.out = r.value;
      }
      op.response = clock.fetch_add(1);
      log.emplace_back(k, op);
    }
  });
  for (std::uint64_t r = 0; r < range; ++r) {
    RegisterOp op;
    op.invoke = clock.fetch_add(1);
    const TreeResult res = tree.get(*envs[0], key_at(r));
    op.kind = RegisterOpKind::kGet;
    op.found = res.status == OpStatus::kFound;
    op.out = res.value;
    op.response = clock.fetch_add(1);
    h[key_at(r)].push_back(op);
  }
  return h;
}

template <unsigned K, Regime R>
void list_history_passes(std::uint64_t range, std::uint64_t seed) {
  Hooks hooks;
  hooks.yield_after_search = true;
  std::unique_ptr<RemoteLazyList<K, R>> l;
  ASSERT_TRUE((RemoteLazyList<K, R>::make(three_nodes(), &l).ok()));
  const CheckResult r = check_set(set_history(*l, hooks, scaled(3000), range, seed));
  ASSERT_TRUE(r.linearizable) << r.explanation;
  const std::vector<std::uint64_t> keys = l->keys();
  ASSERT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  ASSERT_TRUE(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}

}  // namespace

TEST(CodsRemoteHistory, ListBothRegimes) {
  list_history_passes<2, E>(12, 1);
  list_history_passes<2, F>(12, 2);
  list_history_passes<6, F>(30, 3);
}

TEST(CodsRemoteHistory, HashSetBothRegimes) {
  Hooks hooks;
  hooks.yield_after_search = true;
  std::unique_ptr<RemoteHashSet<2, E>> h;
  ASSERT_TRUE((RemoteHashSet<2, E>::make(three_nodes(), 3, &h).ok()));
  CheckResult r = check_set(set_history(*h, hooks, scaled(2000), 30, 7));
  EXPECT_TRUE(r.linearizable) << r.explanation;
  std::unique_ptr<RemoteHashSet<4, F>> f;
  ASSERT_TRUE((RemoteHashSet<4, F>::make(three_nodes(), 3, &f).ok()));
  r = check_set(set_history(*f, hooks, scaled(2000), 30, 8));
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

TEST(CodsRemoteHistory, TreeBothRegimes) {
  Hooks hooks;
  hooks.yield_after_search = true;
  std::unique_ptr<RemoteBLinkTree<2, E>> t;
  ASSERT_TRUE((RemoteBLinkTree<2, E>::make(three_nodes(), &t).ok()));
  CheckResult r = check_per_key(tree_history(*t, hooks, scaled(5000), 400, 1));
  ASSERT_TRUE(r.linearizable) << r.explanation;
  std::unique_ptr<RemoteBLinkTree<4, F>> f;
  ASSERT_TRUE((RemoteBLinkTree<4, F>::make(three_nodes(), &f).ok()));
  r = check_per_key(tree_history(*f, hooks, scaled(5000), 16, 2));
  ASSERT_TRUE(r.linearizable) << r.explanation;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> entries;
  EXPECT_TRUE(t->entries(&entries));
  EXPECT_TRUE(f->entries(&entries));
}

// Negative control: the remote backend does not hide a broken list. With the replaced node
// left unmarked, the checker must prove some history wrong.
TEST(CodsRemotePlantedBug, UnmarkedReplacedNodeIsCaught) {
  Hooks hooks;
  hooks.yield_after_search = true;
  hooks.bug = Bug::kUnmarkedReplacedNode;
  for (int round = 0; round < 40; ++round) {
    std::unique_ptr<RemoteLazyList<2, E>> l;
    ASSERT_TRUE((RemoteLazyList<2, E>::make(three_nodes(), &l).ok()));
    if (check_set(set_history(*l, hooks, 1500, 10, 300 + round)).refuted()) return;
  }
  FAIL() << "the planted bug was not caught in 40 rounds";
}
