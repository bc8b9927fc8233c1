// The CODS versioned B-link tree run the way the GPU batch driver runs it (gpu_versioned.cu and
// gpu_pool.cuh), on CPU threads: one-lane groups (cods::CpuThread, the code a GPU thread of a
// one-lane shape runs) share a tree whose nodes come from a pool of fixed size; every request of
// a batch is stamped with the batch's timestamp t and runs concurrently with the others; RANGEs
// read snapshot t - 1 (the live one while the batch runs); retired and discarded nodes are
// reused only after the run that retired them; requests that came back kRetry are run again,
// with the same stamp, after the pool grew. Every outcome is compared with a serial reference
// map (point requests of a batch have distinct keys, so their outcomes do not depend on order;
// a RANGE must equal the map before the batch). Also with allocations failing at random (every
// batch then reruns requests, RANGE batches included), and a negative control: a batch whose first
// updates read the previous batch's live set (t - 2), as a GPU kernel did when the driver's copy
// of the live set had not landed before it started (the copy is now ordered on the kernel's
// stream, gpu_versioned.cu): those updates save nothing for leaves stamped t - 1, and RANGEs at
// t - 1 must come out wrong (a page short or long, or a walk to an origin that never ends).
//
// Sizes scale with DUET_TEST_SCALE (default 1).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "index/cods/versioned_blink_tree.hpp"
#include "cods/test_scale.hpp"

using namespace duet;
using namespace duet::cods;
using namespace duet::cods::ds;

namespace {

using duet::cods::test_util::scale;

/// The GPU pool's semantics on the host: fresh nodes from chunks (a grow adds a chunk as large as
/// the pool), a free list taken by tickets, and a retired list that becomes free only at
/// recycle() (between runs). alloc() returns null when both are spent.
template <class PoolNode>
struct HostPool {
  static constexpr unsigned kMaxChunks = 34;
  std::vector<std::unique_ptr<PoolNode[]>> chunks;
  std::vector<std::uint64_t> chunk_end;
  std::atomic<std::uint64_t> fresh_next{0};
  std::uint64_t capacity = 0;
  std::vector<std::uint64_t> free_list;
  std::uint64_t free_count = 0;
  std::atomic<std::uint64_t> free_taken{0};
  std::vector<std::uint64_t> retired;
  std::atomic<std::uint64_t> retired_count{0};
  unsigned fail_per_16 = 0;  ///< a test's injected allocation failures (x/16 of allocs fail)

  HostPool(std::uint64_t cap, std::uint64_t taken) {
    chunks.emplace_back(new PoolNode[cap]);
    chunk_end.push_back(cap);
    capacity = cap;
    fresh_next = taken;
    free_list.assign(cap, 0);
    retired.assign(cap, 0);
  }
  PoolNode* node(std::uint64_t f) {
    std::uint64_t c = 0, begin = 0;
    while (c + 1 < chunks.size() && f >= chunk_end[c]) begin = chunk_end[c++];
    return &chunks[c][f - begin];
  }
  bool fresh_exhausted() const { return fresh_next.load() >= capacity; }
  void grow() {
    const std::uint64_t add = capacity;
    fresh_next = std::min(fresh_next.load(), capacity);  // failed allocations took no node
    chunks.emplace_back(new PoolNode[add]);
    capacity += add;
    chunk_end.push_back(capacity);
    free_list.resize(capacity, 0);
    retired.resize(capacity, 0);
  }
  void recycle() {
    const std::uint64_t base = free_count - std::min(free_taken.load(), free_count);
    const std::uint64_t n = std::min(retired_count.load(), capacity);
    for (std::uint64_t i = 0; i < n; ++i) free_list[base + i] = retired[i];
    free_count = base + n;
    retired_count = 0;
    free_taken = 0;
  }
};

/// Thrown by a RANGE that read over kHangReads nodes: it would never end (on a GPU the kernel hangs).
struct Hung {};
constexpr std::uint64_t kHangReads = 200'000;

/// The environment of one worker thread over a HostPool (the GPU's PoolEnv on CpuThread).
/// node_read() and after_search() yield now and then, so that on few cores the workers of a
/// batch interleave inside their requests as a GPU's threads do.
template <class PoolNode>
struct HostPoolEnv {
  HostPool<PoolNode>* pool;
  std::uint64_t seed;
  std::uint64_t reads = 0;  ///< node reads of the current request (a hang gives up)

  template <class Node>
  Node* alloc(const CpuThread&) {
    static_assert(sizeof(Node) <= sizeof(PoolNode) && alignof(PoolNode) % alignof(Node) == 0, "a node fits a slot");
    std::uint64_t at = 0;
    if (pool->fail_per_16 && (next_random() >> 60) < pool->fail_per_16) return nullptr;
    const std::uint64_t c = pool->free_count;
    if (c > 0 && pool->free_taken.load(std::memory_order_relaxed) < c) {
      const std::uint64_t t = pool->free_taken.fetch_add(1);
      if (t < c) at = pool->free_list[c - 1 - t];
    }
    if (at == 0) {
      const std::uint64_t f = pool->fresh_next.fetch_add(1);
      if (f < pool->capacity) at = reinterpret_cast<std::uint64_t>(pool->node(f));
    }
    if (at == 0) return nullptr;
    auto* w = reinterpret_cast<std::uint64_t*>(at);
    for (std::size_t i = 0; i < sizeof(PoolNode) / 8; ++i) atomic_store(&w[i], 0, Order::relaxed);
    fence(Order::release);
    return reinterpret_cast<Node*>(at);
  }
  template <class Node>
  void discard(const CpuThread& g, Node* n) {
    retire(g, n);
  }
  template <class Node>
  void retire(const CpuThread&, Node* n) {
    const std::uint64_t i = pool->retired_count.fetch_add(1);
    if (i < pool->capacity) pool->retired[i] = reinterpret_cast<std::uint64_t>(n);
  }
  bool in_range = false;  ///< the current request is a RANGE (it holds no lock: it may give up)
  void node_read() {
    if (++reads > kHangReads && in_range) throw Hung{};
    maybe_yield();
  }
  void after_search() { maybe_yield(); }
  bool planted(Bug) const { return false; }
  bool stuck() const { return false; }
  std::uint64_t next_random() {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed;
  }
  void maybe_yield() {
    if ((next_random() >> 60) < 3) std::this_thread::yield();
  }
};

/// The batch clock of gpu_versioned.cu: stamp t; the live snapshots (sorted) are t - 1 when the
/// batch holds RANGEs, none otherwise (then nothing is saved).
/// Negative control: while *stale_budget > 0, an update reads `stale` (the previous batch's live
/// set) instead of `current`.
struct HostBatchClock {
  std::uint64_t t;
  const std::vector<std::uint64_t>* live;
  const std::vector<std::uint64_t>* stale = nullptr;
  std::atomic<int>* stale_budget = nullptr;
  const std::vector<std::uint64_t>* current = nullptr;
  std::uint64_t stamp(const CpuThread&) {
    if (stale_budget) live = stale_budget->fetch_sub(1) > 0 ? stale : current;
    return t;
  }
  std::uint64_t oldest(const CpuThread&) const { return live->empty() ? t : live->front(); }
  bool needed(const CpuThread&, std::uint64_t c, std::uint64_t stamp) const {
    if (live->empty()) return false;
    auto it = std::lower_bound(live->begin(), live->end(), c);
    return it != live->end() && *it < stamp;
  }
};

constexpr std::uint64_t kLimit = 24;

struct Request {
  Op op;
  std::uint64_t key, value;  // value: an insert's value, a RANGE's last key
};

template <unsigned K, Regime R>
struct PoolBatchRig {
  using Tree = VersionedBLinkTree<K, CpuThread, R>;
  using Leaf = typename Tree::Leaf;
  using Env = HostPoolEnv<Leaf>;

  HostPool<Leaf> pool;
  VersionedRoot root{};
  std::uint64_t stamp = 0;
  unsigned threads;
  std::uint64_t reruns = 0;  ///< runs of retried requests (a RANGE batch's among them)
  int stale_updates = 0;  ///< negative control: updates per RANGE batch that read the previous live set

  PoolBatchRig(std::uint64_t pool_nodes, unsigned threads_) : pool(pool_nodes, 2), threads(threads_) {
    std::memset(static_cast<void*>(pool.node(0)), 0, sizeof(Leaf) * 2);
    Tree::init(&root, reinterpret_cast<typename Tree::Node*>(pool.node(0)), pool.node(1));
  }

  /// Runs the requests idx of reqs with stamp t (one run of the driver), writing outcomes; returns
  /// how many came back kRetry. hung: a RANGE read over kHangReads nodes (it would never end).
  std::uint64_t run_once(std::uint64_t t, const std::vector<Request>& reqs, const std::vector<std::size_t>& idx,
                         std::vector<TreeResult>& res, std::vector<std::vector<std::uint64_t>>& pages,
                         std::atomic<bool>& hung) {
    bool ranges = false;
    for (std::size_t i : idx) ranges = ranges || reqs[i].op == kOpRange;
    std::vector<std::uint64_t> live;
    if (ranges) live.push_back(t - 1);
    const std::vector<std::uint64_t> stale{t - 2};
    std::atomic<int> budget{stale_updates};
    HostBatchClock clock{t, &live};
    if (ranges && t >= 3 && stale_updates > 0) {
      clock.stale = &stale;
      clock.stale_budget = &budget;
      clock.current = &live;
    }
    std::atomic<std::size_t> next{0};
    std::atomic<std::uint64_t> retries{0};
    auto work = [&](unsigned w) {
      Env env{&pool, 0x9e3779b97f4a7c15ull * (w + 1) + t * 7919 + reruns, 0};  // a rerun draws anew
      HostBatchClock c = clock;
      for (std::size_t j; (j = next.fetch_add(1)) < idx.size();) {
        const std::size_t i = idx[j];
        const Request& q = reqs[i];
        env.reads = 0;
        TreeResult r{OpStatus::kInvalid, 0};
        const CpuThread g{};
        if (q.op == Op::kGet) r = Tree::get(g, env, &root, q.key);
        else if (q.op == Op::kInsert) r = Tree::insert(g, env, c, &root, q.key, q.value);
        else if (q.op == Op::kRemove) r = Tree::remove(g, env, c, &root, q.key);
        else {
          pages[i].clear();
          std::vector<std::uint64_t>& page = pages[i];
          env.in_range = true;
          try {
            const std::uint64_t n = Tree::range(g, env, &root, t - 1, q.key, q.value, kLimit,
                                                [&](std::uint64_t at, std::uint64_t k, std::uint64_t) {
                                                  if (page.size() <= at) page.resize(at + 1);
                                                  page[at] = k;
                                                });
            r = {OpStatus::kFound, n};
          } catch (const Hung&) {
            hung = true;
            r = {OpStatus::kInvalid, kHangReads};
          }
          env.in_range = false;
        }
        res[i] = r;
        if (r.status == OpStatus::kRetry) retries.fetch_add(1);
      }
    };
    std::vector<std::thread> ts;
    const unsigned n = static_cast<unsigned>(std::min<std::size_t>(threads, (idx.size() + 15) / 16));
    for (unsigned w = 0; w < std::max(1u, n); ++w) ts.emplace_back(work, w);
    for (auto& th : ts) th.join();
    pool.recycle();
    return retries.load();
  }

  /// One batch as the driver runs it: stamp, run, then while requests came back kRetry, run those
  /// again with the same stamp, first growing the pool when its fresh nodes ran out and fewer
  /// than half of the round's requests were applied (gpu_pool::grow_before_rerun).
  void execute(const std::vector<Request>& reqs, std::vector<TreeResult>& res,
               std::vector<std::vector<std::uint64_t>>& pages, std::atomic<bool>& hung) {
    const std::uint64_t t = ++stamp;
    std::vector<std::size_t> idx(reqs.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::uint64_t retries = run_once(t, reqs, idx, res, pages, hung);
    while (retries > 0) {
      if (pool.fresh_exhausted() && retries * 2 > idx.size()) pool.grow();
      std::vector<std::size_t> again;
      for (std::size_t i : idx)
        if (res[i].status == OpStatus::kRetry) again.push_back(i);
      idx = again;
      retries = run_once(t, reqs, idx, res, pages, hung);
      ++reruns;
    }
  }
};

/// A batch of n requests over keys 7i+3 (i < range): point requests on distinct keys,
/// range_pct% RANGEs spanning up to 600 (the GPU twin test's batches).
std::vector<Request> make_batch(std::mt19937_64& rng, std::uint64_t n, std::uint64_t range, unsigned range_pct,
                                bool inserts_only) {
  std::vector<std::uint64_t> keys(range);
  for (std::uint64_t i = 0; i < range; ++i) keys[i] = i * 7 + 3;
  std::shuffle(keys.begin(), keys.end(), rng);
  std::vector<Request> w;
  for (std::uint64_t i = 0; i < n; ++i) {
    const unsigned what = static_cast<unsigned>(rng() % 100);
    if (what < range_pct) {
      const std::uint64_t a = rng() % (range * 7), b = a + rng() % 600;
      w.push_back({kOpRange, a, b});
      continue;
    }
    if (inserts_only || what < range_pct + 45) w.push_back({Op::kInsert, keys[i], rng()});
    else if (what < range_pct + 70) w.push_back({Op::kRemove, keys[i], 0});
    else w.push_back({Op::kGet, keys[i], 0});
  }
  return w;
}

/// How a scenario runs: allocations that fail at random (x/16), updates per RANGE batch that read
/// the previous batch's live set (negative control), and whether differences are test failures.
struct Options {
  unsigned fail_per_16 = 0;
  int stale_updates = 0;
  bool report = true;
};

/// Runs the GPU twin test's pool-growth scenario (pool of 16, 100 inserts, then `batches`
/// batches of n requests with 15% RANGEs) on `threads` threads; returns the number of outcomes
/// that differ from the reference (reports the first few when o.report). *hung_out: a RANGE
/// gave up (it would never have ended).
template <unsigned K, Regime R>
int run_scenario(std::uint64_t seed, unsigned threads, int batches, std::uint64_t n, const Options& o,
                 bool* hung_out = nullptr, std::uint64_t* reruns = nullptr) {
  PoolBatchRig<K, R> rig(16, threads);
  rig.pool.fail_per_16 = o.fail_per_16;
  rig.stale_updates = o.stale_updates;
  std::map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(seed);
  std::atomic<bool> hung{false};
  int wrong = 0;
  for (int b = 0; b <= batches && wrong == 0; ++b) {
    const std::vector<Request> reqs = make_batch(rng, b == 0 ? 100 : n, 4000, b == 0 ? 0 : 15, b == 0);
    std::vector<TreeResult> res(reqs.size(), TreeResult{OpStatus::kInvalid, 0});
    std::vector<std::vector<std::uint64_t>> pages(reqs.size());
    rig.execute(reqs, res, pages, hung);
    const std::map<std::uint64_t, std::uint64_t> before = model;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const Request& q = reqs[i];
      TreeResult want{OpStatus::kInvalid, 0};
      std::vector<std::uint64_t> page;
      const auto it = model.find(q.key);
      const TreeResult present =
          it == model.end() ? TreeResult{OpStatus::kNotFound, 0} : TreeResult{OpStatus::kFound, it->second};
      if (q.op == kOpRange) {
        std::uint64_t count = 0;
        for (auto r = before.lower_bound(q.key); r != before.end() && r->first <= q.value; ++r) {
          if (count < kLimit) page.push_back(r->first);
          if (++count > kLimit) break;
        }
        want = {OpStatus::kFound, count};
      } else {
        want = present;
        if (q.op == Op::kInsert && it == model.end()) model[q.key] = q.value;
        if (q.op == Op::kRemove && it != model.end()) model.erase(it);
      }
      const bool same = res[i].status == want.status && res[i].value == want.value &&
                        (q.op != kOpRange || pages[i] == page);
      if (!same && ++wrong <= 5 && o.report)
        ADD_FAILURE() << "seed " << seed << " batch " << b << " request " << i << " op " << int(q.op) << " key "
                      << q.key << ": got " << int(res[i].status) << "/" << res[i].value << ", want "
                      << int(want.status) << "/" << want.value;
    }
  }
  if (hung_out) *hung_out = hung;
  if (reruns) *reruns = rig.reruns;
  return wrong;
}

/// Runs scenarios with fresh seeds for about `ms` of wall time (at least one); stops at the first
/// that differs.
template <unsigned K, Regime R>
void repeat_scenario(int ms, const Options& o) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(ms * scale()));
  int runs = 0;
  std::uint64_t reruns = 0;
  for (std::uint64_t seed = 1; runs == 0 || std::chrono::steady_clock::now() < deadline; ++seed) {
    ++runs;
    std::uint64_t r = 0;
    if (run_scenario<K, R>(seed, 4, 11, 3000, o, nullptr, &r) != 0) break;
    reruns += r;
  }
  EXPECT_GT(reruns, 0u) << "the pool never ran out";
  ::testing::Test::RecordProperty("runs", runs);
}

/// The GPU twin test's PoolGrowsAndEveryRequestAppliesOnce, shape fa_k14_g1: a pool of 16 nodes
/// that grows during the first RANGE batch.
TEST(CodsVersionedPoolBatch, FullyAtomicK14OneLaneRangesReadTheStateBeforeTheBatch) {
  repeat_scenario<14, Regime::kFullyAtomic>(2000, Options{});
}
/// The same, shape ew_k30_g1.
TEST(CodsVersionedPoolBatch, ElementwiseK30OneLaneRangesReadTheStateBeforeTheBatch) {
  repeat_scenario<30, Regime::kElementwise>(1500, Options{});
}
/// A quarter of the allocations fail: every batch reruns requests with its own stamp, RANGE
/// batches included, and nothing is applied twice or lost.
TEST(CodsVersionedPoolBatch, RerunsAfterFailedAllocationsApplyEveryRequestOnce) {
  Options o;
  o.fail_per_16 = 4;
  repeat_scenario<14, Regime::kFullyAtomic>(1000, o);
}
/// Negative control: the first two updates of each RANGE batch read the previous batch's live set
/// (what the GPU kernel read when its copy had not landed). The comparison must catch it.
TEST(CodsVersionedPoolBatch, UpdatesReadingAStaleLiveSetAreCaught) {
  Options o;
  o.stale_updates = 2;
  o.report = false;
  bool caught = false, hung = false;
  for (std::uint64_t seed = 1; seed <= 3 && !caught; ++seed) caught = run_scenario<14, Regime::kFullyAtomic>(seed, 4, 11, 3000, o, &hung) > 0;
  EXPECT_TRUE(caught) << "RANGEs at t - 1 should miss versions that were not saved";
}

}  // namespace
