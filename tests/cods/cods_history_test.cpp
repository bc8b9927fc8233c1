// Concurrent histories of the CODS list, hash set and B-link tree on CPU threads, checked for
// linearizability per key (checkers/set_linearizability.hpp, checkers/linearizability.hpp),
// with a yield between each update's search and its locks so that other threads change the
// nodes in between. Each history ends with a read of every key by one thread, so a lost node
// shows up as a read that no order explains. Negative controls plant a bug through the test
// hook and require the checker's proof that no linearization exists.
//
// Sizes scale with DUET_TEST_SCALE (default 1).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "checkers/linearizability.hpp"
#include "checkers/set_linearizability.hpp"
#include "index/cods/cpu.hpp"
#include "cods/test_scale.hpp"

using namespace duet;
using namespace duet::checkers;
using namespace duet::cods::ds;

namespace {

constexpr Regime E = Regime::kElementwise;
constexpr Regime F = Regime::kFullyAtomic;
constexpr unsigned kThreads = 3;

using duet::cods::test_util::scale;
int scaled(int n) { return std::max(50, static_cast<int>(n * scale())); }

using History = std::unordered_map<std::uint64_t, std::vector<RegisterOp>>;

/// Operations that gave up (planted bugs only; see CpuEnv::stuck).
std::atomic<std::uint64_t> gave_up{0};

/// The key of draw r: even draws from the bottom of the key space, odd ones from the top, so
/// 0 and 2^64-1 both take part.
std::uint64_t key_at(std::uint64_t r, std::uint64_t /*range*/) { return r % 2 ? ~std::uint64_t(0) - r / 2 : r / 2; }

/// One thread's operations in the order it ran them, each with its key.
using Log = std::vector<std::pair<std::uint64_t, RegisterOp>>;

/// Opens kThreads sessions of `s` into envs (kept for the caller's closing reads), runs
/// body(t, session, rng, log) on one thread each, started together (rng seeded from seed and
/// t), and returns the logs merged by key.
template <class S, class Body>
History run_threads(S& s, const Hooks& hooks, std::uint64_t seed, std::vector<std::unique_ptr<CpuEnv>>& envs,
                    Body body) {
  std::vector<Log> logs(kThreads);
  for (unsigned t = 0; t < kThreads; ++t) envs.push_back(s.session(&hooks));
  std::vector<std::thread> threads;
  std::atomic<unsigned> ready{0};
  for (unsigned t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 31 + t);
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      body(t, *envs[t], rng, logs[t]);
    });
  }
  for (auto& th : threads) th.join();
  History h;
  for (auto& log : logs)
    for (auto& [k, op] : log) h[k].push_back(op);
  return h;
}

/// kThreads threads run `ops` random set operations each on keys_range keys; returns the
/// history, closed by one read of every key.
template <class S>
History set_history(S& s, const Hooks& hooks, int ops, std::uint64_t range, std::uint64_t seed) {
  std::atomic<std::uint64_t> clock{0};
  std::vector<std::unique_ptr<CpuEnv>> envs;
  std::atomic<bool> broken{false};  // an operation gave up: the (bugged) list is stuck for good
  History h = run_threads(s, hooks, seed, envs, [&](unsigned, CpuEnv& env, std::mt19937_64& rng, Log& log) {
    for (int i = 0; i < ops && !broken.load(std::memory_order_relaxed); ++i) {
      const std::uint64_t k = key_at(rng() % range, range);
      const unsigned what = rng() % 10;
      const Op op = what < 4 ? Op::kInsert : what < 8 ? Op::kRemove : Op::kGet;
      const std::uint64_t invoke = clock.fetch_add(1);
      const OpStatus st = s.execute(env, op, k);
      const std::uint64_t response = clock.fetch_add(1);
      // Only under a planted bug: an operation that gave up changed nothing, so it is left
      // out of the history (a pending operation without effect).
      if (st == OpStatus::kRetry) {
        gave_up.fetch_add(1);
        broken.store(true);
        break;
      }
      const SetOpKind kind = op == Op::kInsert ? SetOpKind::kInsert : op == Op::kRemove ? SetOpKind::kRemove
                                                                                        : SetOpKind::kContains;
      const bool result = op == Op::kInsert ? st == OpStatus::kNotFound : st == OpStatus::kFound;
      log.emplace_back(k, set_op(kind, invoke, response, result));
    }
  });
  for (std::uint64_t r = 0; r < range; ++r) {
    const std::uint64_t k = key_at(r, range);
    const std::uint64_t invoke = clock.fetch_add(1);
    const OpStatus st = s.execute(*envs[0], Op::kGet, k);
    if (st == OpStatus::kRetry) continue;
    h[k].push_back(set_op(SetOpKind::kContains, invoke, clock.fetch_add(1), st == OpStatus::kFound));
  }
  return h;
}

/// The tree's history: GET, INSERT-if-absent (recorded as a PUT when it inserted, as a read
/// of the present value when it did not), REMOVE. Values are unique per insert.
template <unsigned K, Regime R>
History tree_history(CpuBLinkTree<K, R>& tree, const Hooks& hooks, int ops, std::uint64_t range, std::uint64_t seed) {
  std::atomic<std::uint64_t> clock{0};
  std::vector<std::unique_ptr<CpuEnv>> envs;
  History h = run_threads(tree, hooks, seed, envs, [&](unsigned t, CpuEnv& env, std::mt19937_64& rng, Log& log) {
    for (int i = 0; i < ops; ++i) {
      const std::uint64_t k = key_at(rng() % range, range);
      const unsigned what = rng() % 10;
      RegisterOp op;
      op.invoke = clock.fetch_add(1);
      if (what < 6) {
        const std::uint64_t v = (std::uint64_t(t + 1) << 40) | std::uint64_t(i);
        const TreeResult r = tree.insert(env, k, v);
        if (r.status == OpStatus::kNotFound) {
          op.kind = RegisterOpKind::kPut;
          op.arg = v;
        } else {
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
    const std::uint64_t k = key_at(r, range);
    RegisterOp op;
    op.invoke = clock.fetch_add(1);
    const TreeResult res = tree.get(*envs[0], k);
    op.kind = RegisterOpKind::kGet;
    op.found = res.status == OpStatus::kFound;
    op.out = res.value;
    op.response = clock.fetch_add(1);
    h[k].push_back(op);
  }
  return h;
}

template <unsigned K, Regime R>
void list_history_passes(std::uint64_t range, int rounds) {
  Hooks hooks;
  hooks.yield_after_search = true;
  // Rounds after the second stop once 4 s have passed: on a loaded machine every yield can cost
  // a scheduler slice (a run was measured at 10 s per round instead of 1), and later rounds only
  // add coverage, so the suite's time stays bounded without changing what a round checks.
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < rounds; ++round) {
    if (round >= 2 && std::chrono::steady_clock::now() - start > std::chrono::seconds(4)) break;
    CpuLazyList<K, R> list;
    const auto t0 = std::chrono::steady_clock::now();
    const History h = set_history(list, hooks, scaled(5000), range, round + 1);
    const auto t1 = std::chrono::steady_clock::now();
    const CheckResult r = check_set(h);
    const auto t2 = std::chrono::steady_clock::now();
    const auto ms = [](auto d) { return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()); };
    if (ms(t2 - t0) > 1000) std::printf("round %d: run %lld ms, check %lld ms\n", round, ms(t1 - t0), ms(t2 - t1));
    ASSERT_TRUE(r.linearizable) << "round " << round << ": " << r.explanation;
    const std::vector<std::uint64_t> keys = list.keys();
    ASSERT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    ASSERT_TRUE(std::adjacent_find(keys.begin(), keys.end()) == keys.end()) << "a key appears twice";
  }
}

/// Runs bugged histories until the checker proves one wrong; fails if none is within `rounds`.
template <class Make>
void planted_bug_is_caught(Bug bug, int rounds, Make run_round) {
  Hooks hooks;
  hooks.yield_after_search = true;
  hooks.bug = bug;
  gave_up = 0;
  for (int round = 0; round < rounds; ++round) {
    const CheckResult r = run_round(hooks, round);
    if (r.refuted()) {
      std::printf("planted bug %d caught in round %d (%llu operations gave up)\n", static_cast<int>(bug), round,
                  static_cast<unsigned long long>(gave_up.load()));
      return;
    }
  }
  FAIL() << "planted bug " << static_cast<int>(bug) << " was not caught in " << rounds << " rounds";
}

}  // namespace

TEST(CodsHistory, ListElementwiseK2) { list_history_passes<2, E>(12, 8); }
TEST(CodsHistory, ListFullyAtomicK2) { list_history_passes<2, F>(12, 8); }
TEST(CodsHistory, ListElementwiseK5) { list_history_passes<5, E>(24, 4); }
TEST(CodsHistory, ListFullyAtomicK8) { list_history_passes<8, F>(24, 4); }
TEST(CodsHistory, ListK1BothRegimes) {
  list_history_passes<1, E>(8, 2);
  list_history_passes<1, F>(8, 2);
}

template <unsigned K, Regime R>
void hash_set_history_passes(std::uint64_t seed) {
  Hooks hooks;
  hooks.yield_after_search = true;
  using Set = CpuHashSet<K, R>;
  std::unique_ptr<Set> s;
  ASSERT_TRUE(Set::make(3, &s).ok());
  const CheckResult r = check_set(set_history(*s, hooks, scaled(2500), 30, seed));
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

TEST(CodsHistory, HashSetBothRegimes) {
  hash_set_history_passes<2, E>(7);
  hash_set_history_passes<4, F>(8);
}

template <unsigned K, Regime R>
void tree_history_passes(std::uint64_t range, int ops) {
  Hooks hooks;
  hooks.yield_after_search = true;
  CpuBLinkTree<K, R> tree;
  const CheckResult r = check_per_key(tree_history(tree, hooks, ops, range, K));
  ASSERT_TRUE(r.linearizable) << r.explanation;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> entries;
  EXPECT_TRUE(tree.entries(&entries));
}

// Splits run concurrently with descents (a large key range keeps inserts splitting), and a
// small range makes many operations meet on a key.
TEST(CodsHistory, TreeElementwiseK1) { tree_history_passes<1, E>(600, scaled(8000)); }
TEST(CodsHistory, TreeFullyAtomicK2) { tree_history_passes<2, F>(600, scaled(8000)); }
TEST(CodsHistory, TreeElementwiseK4SmallRange) { tree_history_passes<4, E>(16, scaled(8000)); }
TEST(CodsHistory, TreeFullyAtomicK8) { tree_history_passes<8, F>(2000, scaled(8000)); }

// ---- Negative controls: each planted bug must be caught (a proof, not a timeout).

/// A bug planted in CpuLazyList<2, R>, caught in histories of seeds seed, seed + 1, ...
template <Regime R>
void list_bug_is_caught(Bug bug, std::uint64_t seed) {
  planted_bug_is_caught(bug, 40, [seed](const Hooks& hooks, int round) {
    CpuLazyList<2, R> list;
    return check_set(set_history(list, hooks, 1500, 10, seed + round));
  });
}

TEST(CodsPlantedBug, NoRevalidationIsCaughtFullyAtomic) { list_bug_is_caught<F>(Bug::kNoRevalidation, 100); }

TEST(CodsPlantedBug, NoRevalidationIsCaughtElementwise) { list_bug_is_caught<E>(Bug::kNoRevalidation, 200); }

TEST(CodsPlantedBug, UnmarkedReplacedNodeIsCaught) { list_bug_is_caught<E>(Bug::kUnmarkedReplacedNode, 300); }

// The tree: a writer that locks the leaf its descent found but does not move right puts a key
// into a leaf that a concurrent split made stop short of it, where no GET looks.
TEST(CodsPlantedBug, TreeWithoutMoveRightIsCaught) {
  planted_bug_is_caught(Bug::kNoMoveRight, 40, [](const Hooks& hooks, int round) {
    CpuBLinkTree<2, F> tree;
    return check_per_key(tree_history(tree, hooks, 3000, 400, 400 + round));
  });
}

// The same hooks leave a correct list correct: the controls above fail only through the bug.
TEST(CodsPlantedBug, HooksWithoutBugStayLinearizable) {
  Hooks hooks;
  hooks.yield_after_search = true;
  for (int round = 0; round < 3; ++round) {
    CpuLazyList<2, E> list;
    const CheckResult r = check_set(set_history(list, hooks, 1500, 10, 300 + round));
    ASSERT_TRUE(r.linearizable) << r.explanation;
  }
}
