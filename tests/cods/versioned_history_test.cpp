// Concurrent histories of the CODS versioned B-link tree on CPU threads, checked by
// checkers/range_checker.hpp: two writers (each the only writer of its keys, as the checker
// requires) move tokens between their keys (insert the new key, then remove the old, so each
// writer always has a key present), with a yield between each update's descent and its lock; a
// third thread takes snapshots and reads RANGEs at them, yielding between leaves. Each RANGE
// must equal the map at one instant inside [before its snapshot was taken, after it returned],
// and pages in snapshot order must see each key's states in order. The negative control reads
// the latest version instead of the snapshot's and must be caught.
//
// Sizes scale with DUET_TEST_SCALE (default 1); each history stops adding writes after 2 s.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "checkers/range_checker.hpp"
#include "index/cods/versioned_cpu.hpp"
#include "cods/test_scale.hpp"

using namespace duet;
using namespace duet::checkers;
using namespace duet::cods::ds;

namespace {

using duet::cods::test_util::scale;
int scaled(int n) { return std::max(60, static_cast<int>(n * scale())); }

constexpr unsigned kWriters = 2;
constexpr unsigned kTokens = 3;  ///< keys each writer keeps present

/// Key i of writer w: spread over the key space so tokens sit in different leaves; the top key
/// (2^64-1) and 0 take part.
std::uint64_t key_of(unsigned w, std::uint64_t i, std::uint64_t keys) {
  const std::uint64_t j = i * kWriters + w;  // 0 .. kWriters * keys - 1
  if (j + 1 == kWriters * keys) return ~std::uint64_t(0);
  return j * 1000;
}

MapOp op_of(MapOpKind kind, unsigned thread, std::uint64_t invoke, std::uint64_t key) {
  MapOp op;
  op.kind = kind;
  op.thread = thread;
  op.invoke = invoke;
  op.key = key;
  return op;
}

/// Runs one history; returns the checker's verdict.
template <unsigned K, Regime R>
RangeCheckResult run_history(const Hooks& hooks, std::uint64_t keys_per_writer, int steps, std::uint64_t seed) {
  CpuVersionedBLinkTree<K, R> t;
  RangeCheckOptions opts;
  opts.snapshot_order = true;
  std::vector<std::vector<std::uint64_t>> present(kWriters);
  {
    auto env = t.session();
    for (unsigned w = 0; w < kWriters; ++w)
      for (std::uint64_t i = 0; i < kTokens; ++i) {
        const std::uint64_t k = key_of(w, i * (keys_per_writer / kTokens), keys_per_writer);
        EXPECT_EQ(t.insert(*env, k, k + 1).status, OpStatus::kNotFound);
        opts.initial[k] = k + 1;
        present[w].push_back(k);
      }
  }
  std::atomic<std::uint64_t> clock{1};
  // On a loaded machine a yield can cost a scheduler slice: writers stop after 1 s of wall time
  // (the history so far is complete and checked as it is).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  std::atomic<unsigned> writers_left{kWriters};
  std::atomic<unsigned> started{0};  // every thread waits for the others, so they overlap
  auto start_together = [&] {
    started.fetch_add(1);
    while (started.load() < kWriters + 1) std::this_thread::yield();
  };
  std::vector<std::vector<MapOp>> logs(kWriters + 1);
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < kWriters; ++w)
    threads.emplace_back([&, w] {
      auto env = t.session(&hooks);
      std::mt19937_64 rng(seed * 31 + w);
      std::uint64_t value = (std::uint64_t(w) + 1) << 40;
      auto& log = logs[w];
      start_together();
      for (int s = 0; s < steps && std::chrono::steady_clock::now() < deadline; ++s) {
        const std::size_t which = rng() % present[w].size();
        std::uint64_t next;
        do next = key_of(w, rng() % keys_per_writer, keys_per_writer);
        while (std::find(present[w].begin(), present[w].end(), next) != present[w].end());
        MapOp ins = op_of(MapOpKind::kInsert, w, clock.fetch_add(1), next);
        ins.value = ++value;
        const TreeResult ri = t.insert(*env, next, ins.value);
        ins.response = clock.fetch_add(1);
        ins.ok = ri.status == OpStatus::kNotFound;
        log.push_back(ins);
        const std::uint64_t old = present[w][which];
        MapOp rem = op_of(MapOpKind::kRemove, w, clock.fetch_add(1), old);
        const TreeResult rr = t.remove(*env, old);
        rem.response = clock.fetch_add(1);
        rem.ok = rr.status == OpStatus::kFound;
        rem.out = rr.value;
        log.push_back(rem);
        present[w][which] = next;
      }
      writers_left.fetch_sub(1);
    });
  threads.emplace_back([&] {
    auto env = t.session(&hooks);
    std::mt19937_64 rng(seed * 77);
    auto& log = logs[kWriters];
    start_together();
    const std::uint64_t top = kWriters * keys_per_writer;
    // While the writers run, and at most one snapshot per writer step (the checker's work
    // grows with the reads; on a loaded machine the writers' yields can take long).
    // (and at least 8, so a history always holds reads).
    for (int round = 0; (writers_left.load() > 0 || round < 8) && round < steps; ++round) {
      const std::uint64_t before = clock.fetch_add(1);
      auto snap = t.snapshot();
      const int reads = 1 + static_cast<int>(rng() % 3);  // one snapshot, read 1 to 3 times
      for (int r = 0; r < reads; ++r) {
        std::uint64_t a = rng() % top, b = rng() % top;
        if (a > b) std::swap(a, b);
        if (rng() % 4 == 0) a = 0, b = top;  // the whole key space
        MapOp op = op_of(MapOpKind::kRange, kWriters, before, a * 1000);
        op.end = b >= top - 1 ? ~std::uint64_t(0) : b * 1000;
        EXPECT_TRUE(t.range(*env, snap, op.key, op.end, &op.result).ok());
        op.response = clock.fetch_add(1);
        op.snapshot = snap.ts() + 1;
        log.push_back(std::move(op));
      }
    }
  });
  for (auto& th : threads) th.join();
  std::vector<MapOp> all;
  for (auto& l : logs) all.insert(all.end(), l.begin(), l.end());
  const auto t0 = std::chrono::steady_clock::now();
  RangeCheckResult res = check_range_history(all, opts);
  if (std::getenv("DUET_TEST_VERBOSE"))
    std::printf("history: %zu ops, %zu reads, check %.3f s\n", all.size(), logs[kWriters].size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return res;
}

TEST(CodsVersionedHistory, FullyAtomicK2) {
  const Hooks hooks{true, Bug::kNone};
  const RangeCheckResult r = run_history<2, Regime::kFullyAtomic>(hooks, 24, scaled(600), 1);
  EXPECT_TRUE(r.ok) << r.explanation;
  EXPECT_GT(r.reads_checked, 0u);
}

TEST(CodsVersionedHistory, ElementwiseK4) {
  const Hooks hooks{true, Bug::kNone};
  const RangeCheckResult r = run_history<4, Regime::kElementwise>(hooks, 40, scaled(600), 2);
  EXPECT_TRUE(r.ok) << r.explanation;
}

/// Negative control: RANGE at the latest version (leaf by leaf) is not one instant.
TEST(CodsVersionedHistory, PlantedRangeAtLatestIsCaught) {
  const Hooks hooks{true, kBugRangeAtLatest};
  bool caught = false;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  for (std::uint64_t round = 0; round < 20 && !caught && std::chrono::steady_clock::now() < give_up; ++round)
    caught = !run_history<2, Regime::kFullyAtomic>(hooks, 24, scaled(600), 10 + round).ok;
  EXPECT_TRUE(caught);
}

}  // namespace
