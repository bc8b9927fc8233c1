// The GPU LIT (index/lit/gpu_lit.hpp): every operation against a reference std::map, node
// splits, range queries (empty, inverted, paged), batches mixing updates with range queries
// checked against the snapshot at the batch's start, pool recycling, the device-resident entry
// point, and agreement with the CPU LIT on the same batches. Skipped, visibly, without a GPU.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"
#include "index/lit/lit.hpp"

using namespace duet::lit;

namespace {

#define SKIP_WITHOUT_GPU() \
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason

using Ref = std::map<std::uint64_t, std::uint64_t>;

struct Req {
  GpuOp op;
  std::uint64_t key, value;
};

struct Outcome {
  std::vector<GpuStatus> status;
  std::vector<std::uint64_t> out;
  GpuRangeResults ranges;
  duet::Status s;
};

/// Runs one batch from host memory.
Outcome run(GpuMap& m, const std::vector<Req>& reqs, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& rq = {},
            std::uint64_t limit = 0) {
  std::vector<GpuOp> ops;
  std::vector<std::uint64_t> keys, values, starts, ends;
  for (const Req& r : reqs) ops.push_back(r.op), keys.push_back(r.key), values.push_back(r.value);
  for (auto [a, b] : rq) starts.push_back(a), ends.push_back(b);
  Outcome o;
  o.status.assign(reqs.size(), GpuStatus::kRetry);
  o.out.assign(reqs.size(), 0);
  GpuPointBatch pb{ops.data(), keys.data(), values.data(), reqs.size()};
  GpuRangeBatch rb{starts.data(), ends.data(), rq.size(), limit};
  o.s = m.execute(pb, {o.status.data(), o.out.data()}, rq.empty() ? nullptr : &rb, rq.empty() ? nullptr : &o.ranges);
  return o;
}

/// Applies one request to the reference and returns the outcome the map must give.
std::pair<GpuStatus, std::uint64_t> apply_ref(Ref& ref, const Req& r) {
  auto it = ref.find(r.key);
  const bool has = it != ref.end();
  switch (r.op) {
    case GpuOp::kGet: return has ? std::make_pair(GpuStatus::kOk, it->second) : std::make_pair(GpuStatus::kNotFound, 0ul);
    case GpuOp::kInsert:
      if (has) return {GpuStatus::kExists, it->second};
      ref[r.key] = r.value;
      return {GpuStatus::kOk, 0};
    case GpuOp::kRemove: {
      if (!has) return {GpuStatus::kNotFound, 0};
      const std::uint64_t v = it->second;
      ref.erase(it);
      return {GpuStatus::kOk, v};
    }
    case GpuOp::kUpsert: {
      if (!has) {
        ref[r.key] = r.value;
        return {GpuStatus::kOk, 0};
      }
      const std::uint64_t v = it->second;
      it->second = r.value;
      return {GpuStatus::kUpdated, v};
    }
  }
  return {GpuStatus::kInvalid, 0};
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> ref_range(const Ref& ref, std::uint64_t a, std::uint64_t b) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
  for (auto it = ref.lower_bound(a); it != ref.end() && it->first <= b; ++it) v.push_back(*it);
  return v;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> result_of(const GpuRangeResults& r, std::size_t q) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
  for (std::uint64_t i = r.offsets[q]; i < r.offsets[q + 1]; ++i) v.emplace_back(r.keys[i], r.values[i]);
  return v;
}

/// The whole map, by paging one range query over [lo, hi].
std::vector<std::pair<std::uint64_t, std::uint64_t>> dump(GpuMap& m, std::uint64_t lo, std::uint64_t hi) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
  std::uint64_t start = lo;
  for (;;) {
    Outcome o = run(m, {}, {{start, hi}}, 4096);
    EXPECT_TRUE(o.s.ok()) << o.s.to_string();
    if (!o.s.ok()) break;
    auto part = result_of(o.ranges, 0);
    all.insert(all.end(), part.begin(), part.end());
    if (!o.ranges.more[0]) break;
    start = o.ranges.resume[0];
  }
  return all;
}

std::unique_ptr<GpuMap> make(std::uint64_t key_range, std::uint64_t width = 10, std::uint64_t capacity = 0) {
  GpuConfig c;
  c.universe_min = 0;
  c.universe_max = key_range - 1;
  c.predicted_min = 0;
  c.predicted_max = key_range - 1;
  c.bucket_width = width;
  c.node_capacity = capacity;
  std::unique_ptr<GpuMap> m;
  const duet::Status s = GpuMap::create(c, &m);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return m;
}

/// A batch of n requests on distinct keys drawn from [0, key_range), with the given op mix.
std::vector<Req> distinct_batch(std::mt19937_64& rng, std::size_t n, std::uint64_t key_range, bool with_upsert = true) {
  std::set<std::uint64_t> used;
  std::vector<Req> b;
  while (b.size() < n) {
    const std::uint64_t k = rng() % key_range;
    if (!used.insert(k).second) continue;
    const GpuOp op = GpuOp(rng() % (with_upsert ? 4 : 3));
    b.push_back({op, k, rng() >> 1});
  }
  return b;
}

TEST(GpuLit, ConfigIsChecked) {
  GpuConfig c;
  c.bucket_width = 0;
  std::unique_ptr<GpuMap> m;
  const duet::Status s = GpuMap::create(c, &m);
  EXPECT_EQ(s.code(), duet::StatusCode::kInvalidArgument);  // with or without a GPU
  EXPECT_FALSE(m);
}

TEST(GpuLit, EachOpAgainstStdMap) {
  SKIP_WITHOUT_GPU();
  auto m = make(20000);
  ASSERT_TRUE(m);
  Ref ref;
  std::mt19937_64 rng(1);
  for (int batch = 0; batch < 40; ++batch) {
    const auto reqs = distinct_batch(rng, 3000, 20000);
    Outcome o = run(*m, reqs);
    ASSERT_TRUE(o.s.ok()) << o.s.to_string();
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const auto want = apply_ref(ref, reqs[i]);
      ASSERT_EQ(o.status[i], want.first) << "batch " << batch << " req " << i << " key " << reqs[i].key << " op "
                                         << int(reqs[i].op);
      if (want.first != GpuStatus::kNotFound && reqs[i].op != GpuOp::kInsert) ASSERT_EQ(o.out[i], want.second);
    }
  }
  const auto all = dump(*m, 0, 19999);
  EXPECT_EQ(all, ref_range(ref, 0, 19999));
}

TEST(GpuLit, BadRequestsAreInvalid) {
  SKIP_WITHOUT_GPU();
  auto m = make(1000);
  ASSERT_TRUE(m);
  std::vector<Req> reqs = {{GpuOp::kInsert, 5, 50}, {GpuOp::kInsert, 1000, 1}, {GpuOp(9), 6, 1}, {GpuOp::kGet, ~0ull, 0}};
  Outcome o = run(*m, reqs);
  ASSERT_TRUE(o.s.ok()) << o.s.to_string();
  EXPECT_EQ(o.status[0], GpuStatus::kOk);
  EXPECT_EQ(o.status[1], GpuStatus::kInvalid);
  EXPECT_EQ(o.status[2], GpuStatus::kInvalid);
  EXPECT_EQ(o.status[3], GpuStatus::kInvalid);
  // INSERT without values: invalid per request, nothing changes.
  GpuOp op = GpuOp::kInsert;
  std::uint64_t key = 7, out = 0;
  GpuStatus st = GpuStatus::kOk;
  ASSERT_TRUE(m->execute({&op, &key, nullptr, 1}, {&st, &out}, nullptr, nullptr).ok());
  EXPECT_EQ(st, GpuStatus::kInvalid);
  EXPECT_EQ(dump(*m, 0, 999), (std::vector<std::pair<std::uint64_t, std::uint64_t>>{{5, 50}}));
  // A null array is an error of the whole call.
  EXPECT_EQ(m->execute({&op, nullptr, nullptr, 1}, {&st, &out}, nullptr, nullptr).code(),
            duet::StatusCode::kInvalidArgument);
}

TEST(GpuLit, NodeSplitsKeepOrder) {
  SKIP_WITHOUT_GPU();
  // Buckets 5000 keys wide: one bucket gets hundreds of keys, so its node splits many times.
  auto m = make(10000, 5000);
  ASSERT_TRUE(m);
  ASSERT_EQ(m->bucket_of(0), m->bucket_of(4999));
  Ref ref;
  std::mt19937_64 rng(2);
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 5000; k += 3) keys.push_back(k);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (std::size_t i = 0; i < keys.size(); i += 256) {  // concurrent inserts into one bucket
    std::vector<Req> b;
    for (std::size_t j = i; j < std::min(keys.size(), i + 256); ++j) b.push_back({GpuOp::kInsert, keys[j], keys[j] * 7});
    Outcome o = run(*m, b);
    ASSERT_TRUE(o.s.ok()) << o.s.to_string();
    for (std::size_t j = 0; j < b.size(); ++j) ASSERT_EQ(o.status[j], apply_ref(ref, b[j]).first);
  }
  EXPECT_EQ(dump(*m, 0, 9999), ref_range(ref, 0, 9999));
  // Every key is found, absent neighbours are not.
  std::vector<Req> gets;
  for (std::uint64_t k = 0; k < 5000; ++k) gets.push_back({GpuOp::kGet, k, 0});
  Outcome g = run(*m, gets);
  for (std::uint64_t k = 0; k < 5000; ++k) {
    ASSERT_EQ(g.status[k], k % 3 == 0 ? GpuStatus::kOk : GpuStatus::kNotFound) << k;
    if (k % 3 == 0) ASSERT_EQ(g.out[k], k * 7);
  }
  // Remove most of them again (nodes shrink and drop out), concurrently.
  std::vector<Req> rem;
  for (std::uint64_t k : keys)
    if (k % 2 == 0 || k < 300) rem.push_back({GpuOp::kRemove, k, 0});
  Outcome r = run(*m, rem);
  ASSERT_TRUE(r.s.ok());
  for (std::size_t j = 0; j < rem.size(); ++j) ASSERT_EQ(r.status[j], apply_ref(ref, rem[j]).first);
  EXPECT_EQ(dump(*m, 0, 9999), ref_range(ref, 0, 9999));
}

TEST(GpuLit, RangeEdgeCasesAndPaging) {
  SKIP_WITHOUT_GPU();
  auto m = make(100000);
  ASSERT_TRUE(m);
  Ref ref;
  std::vector<Req> b;
  for (std::uint64_t k = 1000; k < 3000; k += 2) b.push_back({GpuOp::kInsert, k, k + 1});
  Outcome o = run(*m, b);
  ASSERT_TRUE(o.s.ok());
  for (const Req& r : b) apply_ref(ref, r);
  // Empty, single, inverted, out of universe, normal, whole.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rq = {
      {0, 999}, {1000, 1000}, {1001, 1001}, {2000, 1000}, {0, 100000}, {1500, 1600}, {0, 99999}, {2999, 2999}};
  Outcome q = run(*m, {}, rq);
  ASSERT_TRUE(q.s.ok()) << q.s.to_string();
  ASSERT_EQ(q.ranges.offsets.size(), rq.size() + 1);
  for (std::size_t i = 0; i < rq.size(); ++i) {
    const bool invalid = rq[i].first > rq[i].second || rq[i].second >= 100000;
    ASSERT_EQ(q.ranges.status[i], invalid ? GpuStatus::kInvalid : GpuStatus::kOk) << i;
    if (invalid) {
      EXPECT_EQ(q.ranges.offsets[i], q.ranges.offsets[i + 1]);
      continue;
    }
    EXPECT_EQ(result_of(q.ranges, i), ref_range(ref, rq[i].first, rq[i].second)) << i;
    EXPECT_EQ(q.ranges.more[i], 0);
  }
  // Over the limit: pages of 7 in key order, each flagged `more` until the last.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> got;
  std::uint64_t start = 1100;
  int pages = 0;
  for (;; ++pages) {
    Outcome p = run(*m, {}, {{start, 1299}}, 7);
    ASSERT_TRUE(p.s.ok());
    auto part = result_of(p.ranges, 0);
    ASSERT_LE(part.size(), 7u);
    got.insert(got.end(), part.begin(), part.end());
    if (!p.ranges.more[0]) break;
    ASSERT_EQ(part.size(), 7u);
    ASSERT_GT(p.ranges.resume[0], part.back().first);
    start = p.ranges.resume[0];
  }
  EXPECT_EQ(got, ref_range(ref, 1100, 1299));
  EXPECT_EQ(pages, 14);  // 100 keys: 14 full pages and a last one of 2
  // Exactly `limit` entries: more is 0.
  Outcome exact = run(*m, {}, {{1000, 1012}}, 7);
  EXPECT_EQ(exact.ranges.more[0], 0);
  EXPECT_EQ(result_of(exact.ranges, 0).size(), 7u);
}

TEST(GpuLit, RangesReadTheSnapshotAtBatchStart) {
  SKIP_WITHOUT_GPU();
  auto m = make(50000);
  ASSERT_TRUE(m);
  Ref ref;
  std::mt19937_64 rng(3);
  for (int batch = 0; batch < 30; ++batch) {
    // Updates concentrated on a few thousand keys, ranges over the same region, one kernel.
    auto reqs = distinct_batch(rng, 4000, 8000);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> rq;
    for (int i = 0; i < 500; ++i) {
      const std::uint64_t a = rng() % 8000;
      rq.emplace_back(a, a + rng() % 200);
    }
    const Ref before = ref;
    Outcome o = run(*m, reqs, rq);
    ASSERT_TRUE(o.s.ok()) << o.s.to_string();
    for (std::size_t i = 0; i < reqs.size(); ++i) ASSERT_EQ(o.status[i], apply_ref(ref, reqs[i]).first);
    for (std::size_t i = 0; i < rq.size(); ++i)
      ASSERT_EQ(result_of(o.ranges, i), ref_range(before, rq[i].first, rq[i].second))
          << "batch " << batch << " range " << rq[i].first << ".." << rq[i].second;
  }
  EXPECT_EQ(dump(*m, 0, 49999), ref_range(ref, 0, 49999));
}

TEST(GpuLit, SameKeyRequestsInOneBatchSerialise) {
  SKIP_WITHOUT_GPU();
  auto m = make(1000);
  ASSERT_TRUE(m);
  // 64 INSERTs of one key: exactly one succeeds. 64 UPSERTs: the values returned form a chain.
  std::vector<Req> ins;
  for (int i = 0; i < 64; ++i) ins.push_back({GpuOp::kInsert, 42, std::uint64_t(i)});
  Outcome o = run(*m, ins);
  ASSERT_TRUE(o.s.ok());
  EXPECT_EQ(std::count(o.status.begin(), o.status.end(), GpuStatus::kOk), 1);
  std::vector<Req> ups;
  for (int i = 0; i < 64; ++i) ups.push_back({GpuOp::kUpsert, 42, std::uint64_t(1000 + i)});
  Outcome u = run(*m, ups);
  ASSERT_TRUE(u.s.ok());
  std::set<std::uint64_t> prev(u.out.begin(), u.out.end());
  EXPECT_EQ(prev.size(), 64u);  // every UPSERT saw a distinct predecessor: a serial order
  EXPECT_EQ(std::count(u.status.begin(), u.status.end(), GpuStatus::kUpdated), 64);
}

TEST(GpuLit, ReplacedNodesAreRecycled) {
  SKIP_WITHOUT_GPU();
  // A pool barely above the live set: without recycling the updates would exhaust it.
  auto m = make(10000, 10, 3000);
  ASSERT_TRUE(m);
  std::mt19937_64 rng(4);
  Ref ref;
  for (int batch = 0; batch < 200; ++batch) {
    auto reqs = distinct_batch(rng, 500, 10000, false);
    Outcome o = run(*m, reqs);
    ASSERT_TRUE(o.s.ok()) << "batch " << batch << ": " << o.s.to_string();
    for (std::size_t i = 0; i < reqs.size(); ++i) ASSERT_EQ(o.status[i], apply_ref(ref, reqs[i]).first);
  }
  const GpuStats s = m->stats();
  EXPECT_LE(s.nodes_touched, 3000u);
  EXPECT_GT(s.nodes_recycled, 10000u);
  EXPECT_EQ(dump(*m, 0, 9999), ref_range(ref, 0, 9999));
}

TEST(GpuLit, PoolExhaustionReportsRetry) {
  SKIP_WITHOUT_GPU();
  auto m = make(100000, 10, 100);
  ASSERT_TRUE(m);
  std::vector<Req> b;
  for (std::uint64_t k = 0; k < 2000; ++k) b.push_back({GpuOp::kInsert, k * 40, k});
  Outcome o = run(*m, b);
  EXPECT_EQ(o.s.code(), duet::StatusCode::kResourceExhausted);
  Ref ref;
  for (std::size_t i = 0; i < b.size(); ++i) {
    ASSERT_TRUE(o.status[i] == GpuStatus::kOk || o.status[i] == GpuStatus::kRetry);
    if (o.status[i] == GpuStatus::kOk) apply_ref(ref, b[i]);
  }
  EXPECT_EQ(dump(*m, 0, 99999), ref_range(ref, 0, 99999));
}

TEST(GpuLit, ResidentEntryPoint) {
  SKIP_WITHOUT_GPU();
  auto m = make(10000);
  ASSERT_TRUE(m);
  const std::size_t n = 1000;
  std::vector<GpuOp> ops(n, GpuOp::kInsert);
  std::vector<std::uint64_t> keys(n), values(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i * 3, values[i] = i;
  GpuOp* d_ops;
  std::uint64_t *d_keys, *d_values, *d_out, *d_se;
  GpuStatus* d_status;
  ASSERT_EQ(cudaMalloc(&d_ops, n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_keys, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_values, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, n * 8), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_status, n), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_se, 16), cudaSuccess);
  cudaMemcpy(d_ops, ops.data(), n, cudaMemcpyHostToDevice);
  cudaMemcpy(d_keys, keys.data(), n * 8, cudaMemcpyHostToDevice);
  cudaMemcpy(d_values, values.data(), n * 8, cudaMemcpyHostToDevice);
  const std::uint64_t se[2] = {30, 59};
  cudaMemcpy(d_se, se, 16, cudaMemcpyHostToDevice);
  GpuRangeBatch rb{d_se, d_se + 1, 1, 0};
  GpuRangeDeviceResults rr;
  ASSERT_TRUE(m->execute_resident({d_ops, d_keys, d_values, n}, {d_status, d_out}, &rb, &rr).ok());
  EXPECT_EQ(rr.total, 0u);  // the snapshot precedes the batch's inserts
  ASSERT_TRUE(m->execute_resident({}, {}, &rb, &rr).ok());
  ASSERT_EQ(rr.total, 10u);
  std::vector<std::uint64_t> got(10);
  cudaMemcpy(got.data(), rr.keys, 80, cudaMemcpyDeviceToHost);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(got[i], 30u + 3 * i);
  std::vector<GpuStatus> st(n);
  cudaMemcpy(st.data(), d_status, n, cudaMemcpyDeviceToHost);
  EXPECT_EQ(std::count(st.begin(), st.end(), GpuStatus::kOk), std::ptrdiff_t(n));
  cudaFree(d_ops), cudaFree(d_keys), cudaFree(d_values), cudaFree(d_out), cudaFree(d_status), cudaFree(d_se);
}

/// The CPU LIT's outcome in the GPU map's terms.
GpuStatus cpu_status(GpuOp op, Result r, bool existed) {
  if (r == Result::kOutOfUniverse) return GpuStatus::kInvalid;
  if (op == GpuOp::kUpsert) return existed ? GpuStatus::kUpdated : GpuStatus::kOk;
  switch (r) {
    case Result::kOk: return GpuStatus::kOk;
    case Result::kNotFound: return GpuStatus::kNotFound;
    case Result::kExists: return GpuStatus::kExists;
    default: return GpuStatus::kInvalid;
  }
}

TEST(GpuLit, AgreesWithCpuLit) {
  SKIP_WITHOUT_GPU();
  constexpr std::uint64_t kRange = 30000;
  auto g = make(kRange);
  ASSERT_TRUE(g);
  Config cc;
  cc.universe_min = 0;
  cc.universe_max = kRange - 1;
  cc.predicted_min = 0;
  cc.predicted_max = kRange - 1;
  cc.buckets = 1000;
  std::unique_ptr<Map> cpu;
  ASSERT_TRUE(Map::create(cc, &cpu).ok());
  std::unique_ptr<Session> sess;
  ASSERT_TRUE(cpu->open_session(&sess).ok());
  std::mt19937_64 rng(5);
  for (int batch = 0; batch < 25; ++batch) {
    auto reqs = distinct_batch(rng, 2000, kRange);
    reqs.push_back({GpuOp::kGet, kRange + 5, 0});  // out of the universe on both
    std::vector<std::pair<std::uint64_t, std::uint64_t>> rq;
    for (int i = 0; i < 200; ++i) {
      const std::uint64_t a = rng() % kRange;
      rq.emplace_back(a, std::min(kRange - 1, a + rng() % 300));
    }
    rq.emplace_back(500, 400);  // inverted
    // The CPU runs the ranges first (the GPU reads them at the batch's start), then the points.
    std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> cpu_ranges(rq.size());
    std::vector<bool> cpu_range_ok(rq.size());
    for (std::size_t i = 0; i < rq.size(); ++i) {
      RangePage page;
      cpu_range_ok[i] = sess->range(rq[i].first, rq[i].second, &cpu_ranges[i], &page, 0).ok();
    }
    Outcome o = run(*g, reqs, rq);
    ASSERT_TRUE(o.s.ok()) << o.s.to_string();
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      const Req& r = reqs[i];
      std::uint64_t v = 0;
      bool existed = false;
      Result res = Result::kOk;
      switch (r.op) {
        case GpuOp::kGet: res = sess->get(r.key, &v); break;
        case GpuOp::kInsert: res = sess->insert(r.key, r.value); break;
        case GpuOp::kRemove: res = sess->remove(r.key, &v); break;
        case GpuOp::kUpsert: res = sess->upsert(r.key, r.value, &v, &existed); break;
      }
      const GpuStatus want = cpu_status(r.op, res, existed);
      ASSERT_EQ(o.status[i], want) << "batch " << batch << " key " << r.key << " op " << int(r.op);
      if (r.op != GpuOp::kInsert && (want == GpuStatus::kOk || want == GpuStatus::kUpdated) &&
          r.op != GpuOp::kUpsert)
        ASSERT_EQ(o.out[i], v);
      if (want == GpuStatus::kUpdated) ASSERT_EQ(o.out[i], v);
    }
    for (std::size_t i = 0; i < rq.size(); ++i) {
      ASSERT_EQ(o.ranges.status[i] == GpuStatus::kOk, cpu_range_ok[i]) << i;
      if (cpu_range_ok[i]) ASSERT_EQ(result_of(o.ranges, i), cpu_ranges[i]) << "batch " << batch << " range " << i;
    }
  }
}

}  // namespace

namespace duet::lit {
namespace {

/// Random ranges from one key to a few hundred buckets long, over buckets of every shape
/// (empty, a few pairs, chains of several full nodes), with limits that cut pages inside a
/// packed round, inside a chain, and on a bucket edge: the packed range walk against std::map.
TEST(GpuLit, RandomRangesOverMixedBuckets) {
  SKIP_WITHOUT_GPU();
  auto m = make(100000, 100);
  ASSERT_TRUE(m);
  Ref ref;
  std::mt19937_64 rng(21);
  std::vector<Req> reqs;
  for (std::uint64_t k = 0; k < 100000; ++k) {
    const std::uint64_t region = (k / 1000) % 4;  // 0: empty, 1: sparse, 2: dense (chains), 3: medium
    const bool put = region == 1 ? rng() % 20 == 0 : region == 2 ? true : region == 3 ? rng() % 3 == 0 : false;
    if (put) reqs.push_back({GpuOp::kInsert, k, k * 7 + 1});
  }
  for (std::size_t i = 0; i < reqs.size(); i += 1 << 16) {
    std::vector<Req> part(reqs.begin() + i, reqs.begin() + std::min(reqs.size(), i + (1 << 16)));
    Outcome o = run(*m, part);
    ASSERT_TRUE(o.s.ok()) << o.s.to_string();
    for (const Req& r : part) ref[r.key] = r.value;
  }
  for (int round = 0; round < 20; ++round) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> rq;
    for (int q = 0; q < 200; ++q) {
      const std::uint64_t a = rng() % 100000;
      const std::uint64_t len = rng() % 4 == 0 ? rng() % 30000 : rng() % 300;
      rq.push_back({a, std::min<std::uint64_t>(99999, a + len)});
    }
    const std::uint64_t limit = round % 2 ? 1 + rng() % 200 : 0;
    Outcome o = run(*m, {}, rq, limit);
    ASSERT_TRUE(o.s.ok()) << o.s.to_string();
    for (std::size_t q = 0; q < rq.size(); ++q) {
      auto want = ref_range(ref, rq[q].first, rq[q].second);
      const bool cut = limit && want.size() > limit;
      if (cut) {
        ASSERT_EQ(o.ranges.more[q], 1) << q;
        ASSERT_EQ(o.ranges.resume[q], want[limit].first) << q;
        want.resize(limit);
      } else {
        ASSERT_EQ(o.ranges.more[q], 0) << q;
      }
      ASSERT_EQ(result_of(o.ranges, q), want) << "range " << rq[q].first << ".." << rq[q].second << " limit " << limit;
    }
  }
}

}  // namespace
}  // namespace duet::lit
