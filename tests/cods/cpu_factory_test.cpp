// The CPU twin's run-time front ends (gpu_batch.hpp: make_cpu_structure, make_cpu_list,
// make_cpu_hash_set, make_cpu_blink_tree; cpu_twin.cpp), issue 18 item 6:
//  * for each kind, regime and K the GPU builds (6, 14, 30), random batches of GET, INSERT and
//    REMOVE (and unknown op codes) give the outcomes of std::set / std::map applied in index
//    order, through execute() and execute_resident(), with and without stamps;
//  * the structure built is the one configured: node reads show K, the regime (the elementwise
//    list's keyless head) and the bucket count;
//  * bad input is InvalidArgument: a null out, every configuration the GPU driver refuses, a
//    planted bug, null arrays in a batch;
//  * where a GPU is present, the GPU structure and its CPU twin give the same outcomes for a
//    batch with one request per key (skipped where make_gpu_structure is Unavailable).
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "index/cods/gpu_batch.hpp"

using namespace duet;
using namespace duet::cods::ds;

namespace {

constexpr std::uint64_t kMax = ~std::uint64_t(0);

const char* kind_name(GpuKind k) { return k == GpuKind::kList ? "list" : k == GpuKind::kHashSet ? "hash set" : "tree"; }

/// A built (K, group) pair for each K; the twin ignores the group.
unsigned group_of(unsigned k) { return k == 6 ? 8 : k == 14 ? 16 : 32; }

GpuConfig config(GpuKind kind, unsigned k, Regime r, std::uint64_t buckets = 7) {
  GpuConfig c;
  c.kind = kind;
  c.keys_per_node = k;
  c.group = group_of(k);
  c.regime = r;
  c.buckets = buckets;
  c.pool_nodes = 1024;
  c.pool_max_nodes = 1 << 16;
  return c;
}

/// n requests over a key space of `space` keys that holds 0 and 2^64-1 (so GETs hit and
/// updates meet), a few unknown op codes among them; tree insert values unique per request.
struct Requests {
  std::vector<Op> ops;
  std::vector<std::uint64_t> keys, values, out, stamps;
  std::vector<OpStatus> status;

  Batch batch() const { return Batch{ops.data(), keys.data(), values.data(), ops.size()}; }
  BatchResult result(bool stamped) { return BatchResult{status.data(), out.data(), stamped ? stamps.data() : nullptr}; }
};

std::vector<std::uint64_t> key_space(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::uint64_t> space = {0, kMax, 1, kMax - 1};
  while (space.size() < n) space.push_back(rng());
  return space;
}

Requests random_requests(std::mt19937_64& rng, const std::vector<std::uint64_t>& space, std::size_t n,
                         std::uint64_t batch) {
  Requests q;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned x = rng() % 100;
    q.ops.push_back(x < 40 ? Op::kInsert : x < 70 ? Op::kRemove : x < 99 ? Op::kGet : static_cast<Op>(7));
    q.keys.push_back(space[rng() % space.size()]);
    q.values.push_back((batch << 32) | i);
  }
  q.out.assign(n, 12345);
  q.stamps.assign(2 * n, 0);
  q.status.assign(n, OpStatus::kRetry);
  return q;
}

/// The outcome of request i applied to `model` (a set when values are ignored: every value 0).
struct Outcome {
  OpStatus status;
  std::uint64_t value;
};
Outcome apply(std::map<std::uint64_t, std::uint64_t>& model, bool tree, Op op, std::uint64_t k, std::uint64_t v) {
  const auto it = model.find(k);
  const bool present = it != model.end();
  const std::uint64_t had = present && tree ? it->second : 0;
  switch (op) {
    case Op::kGet: return {present ? OpStatus::kFound : OpStatus::kNotFound, had};
    case Op::kInsert:
      if (!present) model.emplace(k, v);
      return {present ? OpStatus::kFound : OpStatus::kNotFound, had};
    case Op::kRemove:
      if (present) model.erase(it);
      return {present ? OpStatus::kFound : OpStatus::kNotFound, had};
  }
  return {OpStatus::kInvalid, 0};
}

/// Runs `batches` random batches through `s` and the model, alternating execute() and
/// execute_resident(), stamps on every other batch; then GETs the whole key space.
void expect_model(GpuStructure& s, bool tree, std::uint64_t seed, const std::string& what) {
  std::mt19937_64 rng(seed);
  const std::vector<std::uint64_t> space = key_space(rng, 400);
  std::map<std::uint64_t, std::uint64_t> model;
  std::uint64_t last_ticket = 0;
  for (std::uint64_t b = 0; b <= 4; ++b) {
    Requests q = random_requests(rng, space, 1500, b);
    if (b == 4) {  // every key once, GET only
      q = random_requests(rng, space, space.size(), b);
      for (std::size_t i = 0; i < space.size(); ++i) {
        q.ops[i] = Op::kGet;
        q.keys[i] = space[i];
      }
    }
    const bool stamped = b % 2 == 1;
    BatchResult r = q.result(stamped);
    const Status st = b % 2 == 0 ? s.execute(q.batch(), r) : s.execute_resident(q.batch(), r);
    ASSERT_TRUE(st.ok()) << what << " batch " << b << ": " << st.to_string();
    for (std::size_t i = 0; i < q.ops.size(); ++i) {
      const Outcome want = apply(model, tree, q.ops[i], q.keys[i], q.values[i]);
      ASSERT_EQ(q.status[i], want.status) << what << " batch " << b << " request " << i << " key " << q.keys[i];
      ASSERT_EQ(q.out[i], want.value) << what << " batch " << b << " request " << i << " key " << q.keys[i];
      if (!stamped) continue;
      // Index order on one thread: each request's interval follows the one before it.
      ASSERT_LT(q.stamps[2 * i], q.stamps[2 * i + 1]) << what << " request " << i;
      if (i > 0 || b > 1) {
        ASSERT_GT(q.stamps[2 * i], last_ticket) << what << " request " << i;
      }
      last_ticket = q.stamps[2 * i + 1];
    }
  }
}

struct Case {
  GpuKind kind;
  unsigned k;
  Regime regime;
};

std::vector<Case> every_case() {
  std::vector<Case> out;
  for (const GpuKind kind : {GpuKind::kList, GpuKind::kHashSet, GpuKind::kTree})
    for (const unsigned k : {6u, 14u, 30u})
      for (const Regime r : {Regime::kElementwise, Regime::kFullyAtomic}) out.push_back({kind, k, r});
  return out;
}

std::string name(const Case& c) {
  return std::string(kind_name(c.kind)) + " K=" + std::to_string(c.k) +
         (c.regime == Regime::kFullyAtomic ? " fully atomic" : " elementwise");
}

std::uint64_t reads_of(const GpuStructure& s) {
  std::uint64_t r = 0;
  const Status st = cpu_node_reads(s, &r);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return r;
}

/// One batch of n requests of one op over keys[0..n).
Status run_one_op(GpuStructure& s, Op op, const std::vector<std::uint64_t>& keys) {
  std::vector<Op> ops(keys.size(), op);
  std::vector<std::uint64_t> values(keys.size(), 1), out(keys.size());
  std::vector<OpStatus> status(keys.size());
  BatchResult r{status.data(), out.data(), nullptr};
  return s.execute(Batch{ops.data(), keys.data(), values.data(), keys.size()}, r);
}

}  // namespace

TEST(CodsCpuFactory, EveryKindRegimeAndKAgainstTheStdModel) {
  std::uint64_t seed = 1;
  for (const Case& c : every_case()) {
    std::unique_ptr<GpuStructure> s;
    const Status st = make_cpu_structure(config(c.kind, c.k, c.regime), &s);
    ASSERT_TRUE(st.ok()) << name(c) << ": " << st.to_string();
    ASSERT_NE(s, nullptr);
    expect_model(*s, c.kind == GpuKind::kTree, seed++, name(c));
    EXPECT_EQ(s->nodes_used(), 0u);  // no pool (gpu_batch.hpp)
    EXPECT_EQ(s->pool_capacity(), 0u);
  }
}

TEST(CodsCpuFactory, ByNameFrontEndsAndGroupOrModeChangeNothing) {
  // The by-name front ends set the kind (a list: one bucket, whatever buckets says); group 1 and
  // mixed mode are accepted as on the GPU and give the same outcomes.
  GpuConfig c = config(GpuKind::kHashSet, 14, Regime::kFullyAtomic);
  c.buckets = 0;  // not read for a list or a tree
  std::unique_ptr<GpuStructure> s;
  ASSERT_TRUE(make_cpu_list(c, &s).ok());
  expect_model(*s, false, 101, "make_cpu_list");
  ASSERT_TRUE(make_cpu_blink_tree(c, &s).ok());
  expect_model(*s, true, 102, "make_cpu_blink_tree");
  EXPECT_EQ(make_cpu_hash_set(c, &s).code(), StatusCode::kInvalidArgument);
  c.buckets = 3;
  ASSERT_TRUE(make_cpu_hash_set(c, &s).ok());
  expect_model(*s, false, 103, "make_cpu_hash_set");
  c.group = 1;
  ASSERT_TRUE(make_cpu_hash_set(c, &s).ok());
  expect_model(*s, false, 104, "group 1");
  c.group = 8;
  c.mode = GpuMode::kMixed;
  ASSERT_TRUE(make_cpu_blink_tree(c, &s).ok());
  expect_model(*s, true, 105, "mixed mode");
}

// 5.4's search bound through the twin: after ascending inserts fill the nodes, a GET past the
// last of n keys in a list reads ceil(n/K) nodes, plus the keyless head in the elementwise
// regime; a hash set of 1024 buckets holding 600 keys reads about one node per GET (its chains
// hold a key or two), where one bucket would read dozens. So the twin is built with the
// configured K, regime and bucket count, which the outcomes alone cannot show.
TEST(CodsCpuFactory, NodeReadsShowKRegimeAndBuckets) {
  for (const Case& c : every_case()) {
    if (c.kind == GpuKind::kTree) continue;
    std::unique_ptr<GpuStructure> s;
    const bool list = c.kind == GpuKind::kList;
    ASSERT_TRUE(make_cpu_structure(config(c.kind, c.k, c.regime, 1024), &s).ok()) << name(c);
    const std::uint64_t n = list ? 10 * c.k + 1 : 600;
    std::vector<std::uint64_t> keys(n);
    for (std::uint64_t i = 0; i < n; ++i) keys[i] = 3 * i + 1;
    ASSERT_TRUE(run_one_op(*s, Op::kInsert, keys).ok()) << name(c);
    const std::uint64_t head = c.regime == Regime::kElementwise ? 1 : 0;
    const std::uint64_t before = reads_of(*s);
    if (list) {
      ASSERT_TRUE(run_one_op(*s, Op::kGet, {kMax}).ok());
      EXPECT_EQ(reads_of(*s) - before, head + (n + c.k - 1) / c.k) << name(c);
    } else {
      ASSERT_TRUE(run_one_op(*s, Op::kGet, keys).ok());
      EXPECT_LE(reads_of(*s) - before, n * (head + 2)) << name(c);
    }
  }
  // Only a twin counts node reads.
  struct NotATwin final : GpuStructure {
    Status execute(const Batch&, BatchResult&) override { return Status::Ok(); }
    Status execute_resident(const Batch&, BatchResult&) override { return Status::Ok(); }
    std::uint64_t nodes_used() const override { return 0; }
    std::uint64_t pool_capacity() const override { return 0; }
  } other;
  std::uint64_t r = 0;
  EXPECT_EQ(cpu_node_reads(other, &r).code(), StatusCode::kInvalidArgument);
  std::unique_ptr<GpuStructure> twin;
  ASSERT_TRUE(make_cpu_list(config(GpuKind::kList, 6, Regime::kFullyAtomic), &twin).ok());
  EXPECT_EQ(cpu_node_reads(*twin, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(CodsCpuFactory, BadInputIsInvalidArgument) {
  std::unique_ptr<GpuStructure> s;
  const GpuConfig good = config(GpuKind::kHashSet, 14, Regime::kFullyAtomic);
  EXPECT_EQ(make_cpu_structure(good, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_cpu_list(good, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_cpu_hash_set(good, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_cpu_blink_tree(good, nullptr).code(), StatusCode::kInvalidArgument);
  // The GPU driver's refusals, with its messages (check_gpu_config).
  struct Bad {
    const char* what;
    void (*spoil)(GpuConfig&);
  };
  const Bad bad[] = {
      {"unknown kind", [](GpuConfig& c) { c.kind = static_cast<GpuKind>(9); }},
      {"unknown regime", [](GpuConfig& c) { c.regime = static_cast<Regime>(5); }},
      {"unknown mode", [](GpuConfig& c) { c.mode = static_cast<GpuMode>(7); }},
      {"unknown order", [](GpuConfig& c) { c.order = static_cast<GpuOrder>(7); }},
      {"no buckets", [](GpuConfig& c) { c.buckets = 0; }},
      {"buckets above 2^32", [](GpuConfig& c) { c.buckets = (std::uint64_t(1) << 32) + 1; }},
      {"empty pool", [](GpuConfig& c) { c.pool_nodes = 0; }},
      {"maximum below the first size", [](GpuConfig& c) { c.pool_max_nodes = c.pool_nodes - 1; }},
      {"K not built", [](GpuConfig& c) { c.keys_per_node = 5; }},
      {"K not built for its group", [](GpuConfig& c) { c.keys_per_node = 30; }},
      {"one lane in mixed mode",
       [](GpuConfig& c) {
         c.group = 1;
         c.mode = GpuMode::kMixed;
       }},
  };
  for (const Bad& b : bad) {
    GpuConfig c = good;
    b.spoil(c);
    const Status want = check_gpu_config(c);
    ASSERT_EQ(want.code(), StatusCode::kInvalidArgument) << b.what;
    const Status got = make_cpu_structure(c, &s);
    EXPECT_EQ(got.code(), StatusCode::kInvalidArgument) << b.what;
    EXPECT_EQ(got.message(), want.message()) << b.what;
    EXPECT_EQ(s, nullptr) << b.what;
  }
  // A planted bug: accepted by the GPU driver in group mode, refused by the twin, naming why.
  GpuConfig planted = good;
  planted.planted = Bug::kNoRevalidation;
  ASSERT_TRUE(check_gpu_config(planted).ok());
  const Status p = make_cpu_structure(planted, &s);
  EXPECT_EQ(p.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.message().find("planted bug"), std::string::npos) << p.to_string();
  EXPECT_EQ(s, nullptr);

  // Null arrays in a batch: InvalidArgument, nothing runs (a later GET finds nothing inserted).
  for (const GpuKind kind : {GpuKind::kList, GpuKind::kHashSet, GpuKind::kTree}) {
    ASSERT_TRUE(make_cpu_structure(config(kind, 6, Regime::kElementwise), &s).ok());
    const Op ops[2] = {Op::kInsert, Op::kInsert};
    const std::uint64_t keys[2] = {0, kMax}, values[2] = {5, 6};
    OpStatus status[2];
    std::uint64_t out[2];
    BatchResult r{status, out, nullptr};
    const char* k = kind_name(kind);
    EXPECT_EQ(s->execute(Batch{nullptr, keys, values, 2}, r).code(), StatusCode::kInvalidArgument) << k;
    EXPECT_EQ(s->execute(Batch{ops, nullptr, values, 2}, r).code(), StatusCode::kInvalidArgument) << k;
    EXPECT_EQ(s->execute_resident(Batch{ops, nullptr, values, 2}, r).code(), StatusCode::kInvalidArgument) << k;
    BatchResult no_status{nullptr, out, nullptr}, no_values{status, nullptr, nullptr};
    EXPECT_EQ(s->execute(Batch{ops, keys, values, 2}, no_status).code(), StatusCode::kInvalidArgument) << k;
    EXPECT_EQ(s->execute(Batch{ops, keys, values, 2}, no_values).code(), StatusCode::kInvalidArgument) << k;
    std::uint64_t stamps[4];
    BatchResult stamped_no_status{nullptr, out, stamps};
    EXPECT_EQ(s->execute(Batch{ops, keys, values, 2}, stamped_no_status).code(), StatusCode::kInvalidArgument) << k;
    const Status tree_values = s->execute(Batch{ops, keys, nullptr, 2}, r);  // a tree's inserts need values
    EXPECT_EQ(tree_values.code(), kind == GpuKind::kTree ? StatusCode::kInvalidArgument : StatusCode::kOk) << k;
    if (kind == GpuKind::kTree) {
      const Op gets[2] = {Op::kGet, Op::kGet};
      ASSERT_TRUE(s->execute(Batch{gets, keys, nullptr, 2}, r).ok()) << k;  // no inserts: values not needed
      EXPECT_EQ(status[0], OpStatus::kNotFound);
      EXPECT_EQ(status[1], OpStatus::kNotFound);
    }
    BatchResult empty{nullptr, nullptr, nullptr};
    EXPECT_TRUE(s->execute(Batch{nullptr, nullptr, nullptr, 0}, empty).ok()) << k;  // n = 0: a no-op
  }
}

// Where a GPU is present: the GPU structure and the CPU twin of one configuration give the same
// outcomes for a batch with one request per key (so the GPU's order among requests cannot
// matter), over a few batches. Skipped where make_gpu_structure is Unavailable (no GPU, or a
// build without CUDA).
TEST(CodsCpuFactory, GpuAndCpuTwinAgreeOnDistinctKeys) {
  std::unique_ptr<GpuStructure> probe;
  const Status gpu_status = make_gpu_structure(config(GpuKind::kHashSet, 14, Regime::kFullyAtomic), &probe);
  if (gpu_status.code() == StatusCode::kUnavailable) GTEST_SKIP() << gpu_status.to_string();
  ASSERT_TRUE(gpu_status.ok()) << gpu_status.to_string();
  std::uint64_t seed = 1000;
  for (const Case& c : every_case()) {
    std::unique_ptr<GpuStructure> gpu, cpu;
    const GpuConfig cfg = config(c.kind, c.k, c.regime, 61);
    ASSERT_TRUE(make_gpu_structure(cfg, &gpu).ok()) << name(c);
    ASSERT_TRUE(make_cpu_structure(cfg, &cpu).ok()) << name(c);
    std::mt19937_64 rng(seed++);
    const std::vector<std::uint64_t> space = key_space(rng, 3000);
    for (std::uint64_t b = 0; b < 4; ++b) {
      Requests q = random_requests(rng, space, space.size(), b);
      for (std::size_t i = 0; i < space.size(); ++i) q.keys[i] = space[i];  // one request per key
      Requests g = q;
      BatchResult rc = q.result(false), rg = g.result(false);
      ASSERT_TRUE(cpu->execute(q.batch(), rc).ok()) << name(c);
      ASSERT_TRUE(gpu->execute(g.batch(), rg).ok()) << name(c);
      for (std::size_t i = 0; i < space.size(); ++i) {
        ASSERT_EQ(g.status[i], q.status[i]) << name(c) << " batch " << b << " key " << q.keys[i];
        ASSERT_EQ(g.out[i], q.out[i]) << name(c) << " batch " << b << " key " << q.keys[i];
      }
    }
  }
}
