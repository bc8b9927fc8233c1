// The batched LIT's CPU twin (make_cpu_batch_map): every batch against a std::map model of the
// contract (batch_model.hpp), including several requests on one key in one batch, node splits,
// chained buckets, paging, bad requests, recycling and pool exhaustion; agreement with the
// lock-free LIT (lit.hpp) on the same batch sequences; one outcome whatever the thread count;
// and the configuration rule and outcome names both LITs share.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "index/lit/batch.hpp"
#include "index/lit/gpu_lit.hpp"
#include "index/lit/lit.hpp"
#include "lit/batch_model.hpp"

namespace duet::lit {
namespace {

using testing::Batch;
using testing::LockFreeBatches;
using testing::Mix;
using testing::Model;
using testing::Outcome;
using testing::Pairs;
using testing::Req;

std::unique_ptr<BatchMap> cpu_map(const BatchConfig& c) {
  std::unique_ptr<BatchMap> m;
  const Status s = make_cpu_batch_map(c, &m);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return m;
}

/// Runs `batches` random batches of mix `m` on a CPU twin with configuration c and on the
/// model, comparing every outcome; limits alternate between none and small ones.
void against_model(const BatchConfig& c, const Mix& m, int batches, std::uint64_t seed) {
  auto map = cpu_map(c);
  ASSERT_TRUE(map);
  EXPECT_STREQ(map->backend(), "cpu");
  Model model(c.universe_min, c.universe_max, c.max_range_results);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < batches; ++i) {
    const Batch b = testing::random_batch(rng, m, i % 3 == 1 ? 1 + rng() % 40 : 0);
    const Outcome got = testing::run(*map, b);
    const Outcome want = model.run(b);
    ASSERT_TRUE(testing::same_outcome(got, want)) << "seed " << seed << " batch " << i;
    EXPECT_EQ(got.ranges.snapshot, std::uint64_t(i)) << "batch " << i;  // one epoch per batch
  }
  EXPECT_EQ(testing::dump(*map, c.universe_min, c.universe_max), model.range(c.universe_min, c.universe_max));
}

TEST(LitBatch, EachBatchAgainstTheModel) {
  Mix m;
  m.key_hi = 20000;
  m.outside = 20000;
  against_model(testing::config_for(20000, 10, 0, 2), m, 40, 1);
}

TEST(LitBatch, ChainedBucketsAndNodeSplits) {
  // Buckets 2500 keys wide: hundreds of keys per bucket, so nodes split and chains form, and
  // updates go one by one through the copy-on-write path.
  Mix m;
  m.key_hi = 10000;
  m.points = 1500;
  m.insert = 50, m.remove = 10, m.upsert = 10, m.get = 30;
  m.max_len = 3000;
  against_model(testing::config_for(10000, 2500, 0, 2), m, 25, 2);
}

TEST(LitBatch, HotKeysRepeatedInOneBatch) {
  // Few keys, many requests each: runs of one bucket longer than anything, combined in order.
  Mix m;
  m.key_hi = 64;
  m.points = 2000;
  m.duplicates = 50;
  m.ranges = 20;
  m.max_len = 64;
  against_model(testing::config_for(64, 8, 0, 2), m, 30, 3);
}

TEST(LitBatch, KeysBeyondThePrediction) {
  // The prediction covers a tenth of the universe: the first and last buckets take the rest.
  BatchConfig c = testing::config_for(50000, 10, 0, 2);
  c.predicted_min = 20000;
  c.predicted_max = 24999;
  Mix m;
  m.key_hi = 50000;
  m.points = 1200;
  m.insert = 45;
  m.max_len = 2000;
  against_model(c, m, 20, 4);
}

TEST(LitBatch, SameOutcomesOnOneAndTwoThreads) {
  Mix m;
  m.key_hi = 30000;
  m.points = 5000;  // above the pool's grain, so two threads split every pass
  m.ranges = 1500;
  m.duplicates = 20;
  auto one = cpu_map(testing::config_for(30000, 10, 0, 1));
  auto two = cpu_map(testing::config_for(30000, 10, 0, 2));
  ASSERT_TRUE(one && two);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 12; ++i) {
    const Batch b = testing::random_batch(rng, m, i % 2 ? 25 : 0);
    ASSERT_TRUE(testing::same_outcome(testing::run(*two, b), testing::run(*one, b), true)) << "batch " << i;
  }
}

TEST(LitBatch, AgreesWithTheLockFreeLit) {
  const BatchConfig c = testing::config_for(30000, 10, 0, 2);
  auto batched = cpu_map(c);
  ASSERT_TRUE(batched);
  LockFreeBatches lock_free(c);
  ASSERT_TRUE(lock_free.status().ok()) << lock_free.status().to_string();
  Mix m;
  m.key_hi = 30000;
  m.outside = 30000;
  m.points = 1500;
  m.ranges = 150;
  std::mt19937_64 rng(6);
  for (int i = 0; i < 25; ++i) {
    const Batch b = testing::random_batch(rng, m, i % 4 == 3 ? 1 + rng() % 60 : 0);
    ASSERT_TRUE(testing::same_outcome(testing::run(*batched, b), lock_free.run(b))) << "batch " << i;
  }
}

TEST(LitBatch, RangePagesAndEdges) {
  auto map = cpu_map(testing::config_for(100000, 10, 0, 1));
  ASSERT_TRUE(map);
  Batch fill;
  for (std::uint64_t k = 1000; k < 3000; k += 2) fill.points.push_back({BatchOp::kInsert, k, k + 1});
  ASSERT_TRUE(testing::run(*map, fill).s.ok());
  Batch q;
  q.ranges = {{0, 999}, {1000, 1000}, {1001, 1001}, {2000, 1000}, {0, 100000}, {1500, 1600}, {0, 99999}, {2999, 2999}};
  const Outcome o = testing::run(*map, q);
  ASSERT_TRUE(o.s.ok()) << o.s.to_string();
  EXPECT_EQ(o.ranges.status[3], BatchStatus::kInvalid);  // inverted
  EXPECT_EQ(o.ranges.status[4], BatchStatus::kInvalid);  // outside the universe
  EXPECT_EQ(testing::entries(o.ranges, 6).size(), 1000u);
  EXPECT_EQ(testing::entries(o.ranges, 1), (Pairs{{1000, 1001}}));
  EXPECT_TRUE(testing::entries(o.ranges, 2).empty());
  // Pages of 7 in key order, resuming where the last one stopped.
  Pairs got;
  std::uint64_t start = 1100;
  int pages = 0;
  for (;; ++pages) {
    Batch p;
    p.ranges = {{start, 1299}};
    p.limit = 7;
    const Outcome po = testing::run(*map, p);
    ASSERT_TRUE(po.s.ok());
    const Pairs part = testing::entries(po.ranges, 0);
    got.insert(got.end(), part.begin(), part.end());
    if (!po.ranges.more[0]) break;
    ASSERT_EQ(part.size(), 7u);
    start = po.ranges.resume[0];
  }
  EXPECT_EQ(pages, 14);
  EXPECT_EQ(got.size(), 100u);
}

TEST(LitBatch, BadRequestsAndArguments) {
  auto map = cpu_map(testing::config_for(1000, 10, 0, 1));
  ASSERT_TRUE(map);
  Batch b;
  b.points = {{BatchOp::kInsert, 5, 50}, {BatchOp::kInsert, 1000, 1}, {BatchOp(9), 6, 1}, {BatchOp::kGet, ~0ull, 0}};
  Outcome o = testing::run(*map, b);
  ASSERT_TRUE(o.s.ok());
  EXPECT_EQ(o.status, (std::vector<BatchStatus>{BatchStatus::kOk, BatchStatus::kInvalid, BatchStatus::kInvalid,
                                                BatchStatus::kInvalid}));
  Batch no_values;  // INSERT and UPSERT without values: invalid each; REMOVE still runs
  no_values.with_values = false;
  no_values.points = {{BatchOp::kInsert, 7, 1}, {BatchOp::kUpsert, 8, 1}, {BatchOp::kRemove, 5, 0}};
  o = testing::run(*map, no_values);
  ASSERT_TRUE(o.s.ok());
  EXPECT_EQ(o.status, (std::vector<BatchStatus>{BatchStatus::kInvalid, BatchStatus::kInvalid, BatchStatus::kOk}));
  EXPECT_EQ(o.out[2], 50u);
  // Null arrays fail the call and run nothing.
  BatchOp op = BatchOp::kInsert;
  std::uint64_t key = 9, value = 1, out = 0;
  BatchStatus st = BatchStatus::kRetry;
  EXPECT_EQ(map->execute({&op, nullptr, &value, 1}, {&st, &out}, nullptr, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(map->execute({&op, &key, &value, 1}, {nullptr, &out}, nullptr, nullptr).code(),
            StatusCode::kInvalidArgument);
  RangeBatch rb{nullptr, nullptr, 1, 0};
  RangeResults rr;
  EXPECT_EQ(map->execute({}, {}, &rb, &rr).code(), StatusCode::kInvalidArgument);
  RangeBatch empty{};
  EXPECT_EQ(map->execute({}, {}, &empty, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st, BatchStatus::kRetry);  // untouched
  EXPECT_TRUE(testing::dump(*map, 0, 999).empty());
}

TEST(LitBatch, ReplacedNodesAreRecycled) {
  // A pool barely above the live set: without recycling the updates would exhaust it.
  auto map = cpu_map(testing::config_for(10000, 10, 3000, 2));
  ASSERT_TRUE(map);
  Model model(0, 9999, BatchConfig{}.max_range_results);
  Mix m;
  m.key_hi = 10000;
  m.points = 500;
  m.ranges = 0;
  m.get = 0, m.upsert = 0, m.insert = 50, m.remove = 50;
  m.duplicates = 0;
  m.bad = 0;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    const Batch b = testing::random_batch(rng, m);
    ASSERT_TRUE(testing::same_outcome(testing::run(*map, b), model.run(b))) << "batch " << i;
  }
  const BatchStats s = map->stats();
  EXPECT_LE(s.nodes_touched, 3000u);
  EXPECT_GT(s.nodes_recycled, 10000u);
  EXPECT_EQ(s.epoch, 200u);
  EXPECT_EQ(testing::dump(*map, 0, 9999), model.range(0, 9999));
}

TEST(LitBatch, PoolExhaustionReportsRetry) {
  auto map = cpu_map(testing::config_for(100000, 10, 100, 2));
  ASSERT_TRUE(map);
  Batch b;
  for (std::uint64_t k = 0; k < 2000; ++k) b.points.push_back({BatchOp::kInsert, k * 40, k});
  const Outcome o = testing::run(*map, b);
  EXPECT_EQ(o.s.code(), StatusCode::kResourceExhausted);
  Model model(0, 99999, BatchConfig{}.max_range_results);
  std::size_t retried = 0;
  for (std::size_t i = 0; i < b.points.size(); ++i) {
    ASSERT_TRUE(o.status[i] == BatchStatus::kOk || o.status[i] == BatchStatus::kRetry) << i;
    if (o.status[i] == BatchStatus::kOk) {
      model.apply_one(b.points[i]);
    } else {
      ++retried;
      EXPECT_EQ(o.out[i], 0u);
    }
  }
  EXPECT_GT(retried, 0u);
  EXPECT_EQ(testing::dump(*map, 0, 99999), model.range(0, 99999));
}

TEST(LitBatch, ResidentEntryPointKeepsResultsInTheMap) {
  auto map = cpu_map(testing::config_for(10000, 10, 0, 1));
  ASSERT_TRUE(map);
  const std::size_t n = 1000;
  std::vector<BatchOp> ops(n, BatchOp::kInsert);
  std::vector<std::uint64_t> keys(n), values(n), out(n);
  std::vector<BatchStatus> status(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = i * 3, values[i] = i;
  const std::uint64_t se[2] = {30, 59};
  RangeBatch rb{se, se + 1, 1, 0};
  RangeResidentResults rr;
  ASSERT_TRUE(map->execute_resident({ops.data(), keys.data(), values.data(), n}, {status.data(), out.data()}, &rb, &rr).ok());
  EXPECT_EQ(rr.total, 0u);  // the snapshot precedes the batch's inserts
  EXPECT_EQ(std::count(status.begin(), status.end(), BatchStatus::kOk), std::ptrdiff_t(n));
  ASSERT_TRUE(map->execute_resident({}, {}, &rb, &rr).ok());
  ASSERT_EQ(rr.total, 10u);
  ASSERT_EQ(rr.offsets[1], 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(rr.keys[i], 30u + 3 * i);
  EXPECT_EQ(rr.snapshot, 1u);
}

// ----------------------------------------------------------------- what both LITs share

// The fields both configurations have follow one rule: each case is refused (or accepted) by
// lit::Map::create and by check_config alike, with the same message.
TEST(LitConfig, SharedFieldsFollowOneRule) {
  struct Case {
    const char* what;
    std::uint64_t umin, umax, pmin, pmax, max_range;
    bool ok;
  };
  const std::uint64_t top = ~std::uint64_t{0};
  const Case cases[] = {
      {"defaults", 0, top, 0, 1 << 20, 1 << 20, true},
      {"one-key prediction", 0, top, 5, 5, 10, true},
      {"one-key universe", 7, 7, 7, 7, 1, true},
      {"inverted universe", 10, 5, 7, 7, 10, false},
      {"inverted prediction", 0, top, 100, 99, 10, false},
      {"prediction below the universe", 50, top, 0, 100, 10, false},
      {"prediction above the universe", 0, 1000, 0, 2000, 10, false},
      {"no range results", 0, top, 0, 100, 0, false},
  };
  for (const Case& k : cases) {
    Config cpu;
    cpu.universe_min = k.umin, cpu.universe_max = k.umax, cpu.predicted_min = k.pmin, cpu.predicted_max = k.pmax;
    cpu.max_range_results = k.max_range;
    BatchConfig batched;
    batched.universe_min = k.umin, batched.universe_max = k.umax, batched.predicted_min = k.pmin;
    batched.predicted_max = k.pmax, batched.max_range_results = k.max_range;
    std::unique_ptr<Map> m;
    const Status a = Map::create(cpu, &m);
    const Status b = check_config(batched);
    EXPECT_EQ(a.ok(), k.ok) << k.what << ": " << a.to_string();
    EXPECT_EQ(a.code(), b.code()) << k.what;
    EXPECT_EQ(a.message(), b.message()) << k.what;
    std::unique_ptr<BatchMap> twin;
    EXPECT_EQ(make_cpu_batch_map(batched, &twin).code(), b.code()) << k.what;
  }
  // A one-key prediction works: everything lands in the one root bucket.
  Config one;
  one.predicted_min = one.predicted_max = 10;
  std::unique_ptr<Map> m;
  ASSERT_TRUE(Map::create(one, &m).ok());
  std::unique_ptr<Session> s;
  ASSERT_TRUE(m->open_session(&s).ok());
  for (std::uint64_t k = 0; k < 100; ++k) ASSERT_EQ(s->insert(k * 7, k), Result::kOk);
  std::uint64_t entries = 0;
  s.reset();
  EXPECT_TRUE(m->check(&entries).ok());
  EXPECT_EQ(entries, 100u);
}

TEST(LitConfig, BatchedSizesAreChecked) {
  BatchConfig c;
  c.predicted_max = (std::uint64_t{1} << 40) - 1;
  c.bucket_width = 1;  // 2^40 buckets
  EXPECT_EQ(check_config(c).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(check_config(c).message().find("bucket_width"), std::string::npos);
  c.bucket_width = 512;  // exactly 2^31 buckets
  EXPECT_TRUE(check_config(c).ok()) << check_config(c).to_string();
  EXPECT_EQ(root_layout(c).buckets, std::uint64_t{1} << 31);
  c = BatchConfig{};
  c.node_capacity = 0xFFFFFFFFull;
  EXPECT_NE(check_config(c).message().find("node_capacity"), std::string::npos);
  c.node_capacity = 0xFFFFFFFEull;
  EXPECT_TRUE(check_config(c).ok());
  // The same errors from both factories, with or without a GPU.
  c.node_capacity = 0xFFFFFFFFull;
  std::unique_ptr<BatchMap> m;
  EXPECT_EQ(make_cpu_batch_map(c, &m).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_gpu_batch_map(c, &m).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(m);
}

TEST(LitConfig, OutcomesAreSpelledOneWay) {
  EXPECT_STREQ(to_string(Result::kOk), to_string(BatchStatus::kOk));
  EXPECT_STREQ(to_string(Result::kNotFound), to_string(BatchStatus::kNotFound));
  EXPECT_STREQ(to_string(Result::kExists), to_string(BatchStatus::kExists));
  EXPECT_STREQ(to_string(BatchStatus::kNotFound), "not_found");
  EXPECT_STREQ(to_string(Result::kOutOfUniverse), "out_of_universe");
  EXPECT_STREQ(to_string(BatchStatus::kRetry), "retry");
}

}  // namespace
}  // namespace duet::lit
