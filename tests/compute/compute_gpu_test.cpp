// The GPU operators against the CPU twin on the same inputs: relational results bit-identical
// (same rows, same order, same integers), MLP outputs within kMlpTolerance, the batcher on the
// GPU under concurrent callers. Every test reports itself skipped without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "compute/column_mirror.hpp"
#include "compute/compute.hpp"
#include "mirror_rows.hpp"
#include "reference.hpp"

namespace duet::compute {
namespace {

using namespace testing;

class ComputeGpuTwin : public ::testing::TestWithParam<Shape> {
 protected:
  void SetUp() override {
    EngineConfig c;
    c.cpu_threads = 4;
    c.cpu_grain = 256;
    ASSERT_TRUE(Engine::open(c, &engine_).ok());
    if (!engine_->gpu_available()) GTEST_SKIP() << "no GPU: " << engine_->describe();
    ASSERT_TRUE(engine_->context(Device::kCpu, &cpu_).ok());
    ASSERT_TRUE(engine_->context(Device::kGpu, &gpu_).ok());
    n_ = scaled(200000);
    t_ = gen_table(GetParam(), n_, 31);
    // Duplicate-heavy keys join every row with a quarter of the other side: keep that side small.
    r_ = gen_table(GetParam(), GetParam() == Shape::kDuplicates ? 100 : n_ / 3 + 1, 32);
  }
  std::shared_ptr<Engine> engine_;
  std::unique_ptr<Context> cpu_, gpu_;
  std::size_t n_ = 0;
  Table t_, r_;
};

TEST_P(ComputeGpuTwin, FilterAndProject) {
  for (const auto& preds : predicate_sets()) {
    Selection a, b;
    ASSERT_TRUE(cpu_->filter(t_, preds, &a).ok());
    const Status s = gpu_->filter(t_, preds, &b);
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, ref_filter(t_, preds));
    Table pa, pb;
    ASSERT_TRUE(cpu_->project(t_, a, {}, &pa).ok());
    ASSERT_TRUE(gpu_->project(t_, a, {}, &pb).ok());
    EXPECT_TRUE(tables_equal(pa, pb));
  }
}

TEST_P(ComputeGpuTwin, Derive) {
  for (Expr::Op op : {Expr::kAdd, Expr::kSub, Expr::kMul}) {
    Expr e;
    e.op = op;
    e.a = "price";
    e.b = op == Expr::kSub ? "" : "qty";
    e.k = 7;
    Column a, b;
    ASSERT_TRUE(cpu_->derive(t_, e, &a).ok());
    ASSERT_TRUE(gpu_->derive(t_, e, &b).ok());
    EXPECT_TRUE(columns_equal(a, b));
  }
}

TEST_P(ComputeGpuTwin, Aggregate) {
  const std::vector<Agg> aggs{{Agg::kCount, "", "n"},
                              {Agg::kSum, "price", "sum_price"},
                              {Agg::kMin, "k1", "min_k1"},
                              {Agg::kMax, "price", "max_price"},
                              {Agg::kSum, "k1", "sum_k1"}};
  Selection sel;
  Predicate p;
  p.column = "qty";
  p.cmp = Cmp::kLt;
  p.i = 30;
  ASSERT_TRUE(cpu_->filter(t_, std::span<const Predicate>(&p, 1), &sel).ok());
  const std::vector<std::vector<std::string>> keysets{{}, {"k1"}, {"k2", "k1"}, {"k2", "qty", "k1", "price"}};
  for (const auto& keys : keysets)
    for (const Selection* s : {static_cast<const Selection*>(nullptr), static_cast<const Selection*>(&sel)}) {
      Table a, b;
      ASSERT_TRUE(cpu_->aggregate(t_, s, keys, aggs, &a).ok());
      const Status st = gpu_->aggregate(t_, s, keys, aggs, &b);
      ASSERT_TRUE(st.ok()) << st.to_string();
      EXPECT_TRUE(tables_equal(a, b)) << keys.size() << " keys, selection " << (s != nullptr);
      EXPECT_EQ(a.rows(), ref_aggregate(t_, s, keys, aggs).size());
    }
}

TEST_P(ComputeGpuTwin, Joins) {
  JoinPairs a, b;
  ASSERT_TRUE(cpu_->hash_join(t_, "k1", r_, "k1", &a).ok());
  Status s = gpu_->hash_join(t_, "k1", r_, "k1", &b);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(a.left, b.left);
  EXPECT_EQ(a.right, b.right);
  Table small = gen_table(GetParam(), 100, 33);
  ASSERT_TRUE(cpu_->hash_join(t_, "k2", small, "k2", &a).ok());
  ASSERT_TRUE(gpu_->hash_join(t_, "k2", small, "k2", &b).ok());
  EXPECT_EQ(a.left, b.left);
  EXPECT_EQ(a.right, b.right);
  Selection order;
  const SortKey k{"k1", false};
  ASSERT_TRUE(cpu_->sort(r_, std::span<const SortKey>(&k, 1), 0, &order).ok());
  Table rs;
  ASSERT_TRUE(cpu_->project(r_, order, {}, &rs).ok());
  ASSERT_TRUE(cpu_->index_join(t_, "k1", rs, "k1", &a).ok());
  s = gpu_->index_join(t_, "k1", rs, "k1", &b);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(a.left, b.left);
  EXPECT_EQ(a.right, b.right);
  if (GetParam() != Shape::kEmpty) {
    EXPECT_EQ(gpu_->index_join(t_, "k1", t_, "qty", &b).code(), StatusCode::kInvalidArgument);  // unsorted
  }
}

TEST_P(ComputeGpuTwin, SortAndTopK) {
  const std::vector<std::vector<SortKey>> sets{
      {{"k1", false}}, {{"k1", true}}, {{"k2", false}, {"price", true}}, {{"f", false}}, {{"g", true}, {"k1", false}}};
  for (const auto& keys : sets)
    for (std::size_t limit : {std::size_t{0}, std::size_t{10}}) {
      Selection a, b;
      ASSERT_TRUE(cpu_->sort(t_, keys, limit, &a).ok());
      const Status s = gpu_->sort(t_, keys, limit, &b);
      ASSERT_TRUE(s.ok()) << s.to_string();
      EXPECT_EQ(a, b);
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ComputeGpuTwin,
                         ::testing::Values(Shape::kEmpty, Shape::kUniform, Shape::kSkewed, Shape::kDuplicates),
                         [](const ::testing::TestParamInfo<Shape>& i) { return std::string(shape_name(i.param)); });

class ComputeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig c;
    c.max_streams = 4;
    ASSERT_TRUE(Engine::open(c, &engine_).ok());
    if (!engine_->gpu_available()) GTEST_SKIP() << "no GPU: " << engine_->describe();
  }
  std::shared_ptr<Engine> engine_;
};

TEST_F(ComputeGpu, MlpAgreesWithinTolerance) {
  const Mlp m = gen_mlp({6, 128, 2}, 3);
  const Mlp wide = gen_mlp({64, 1024, 256, 8}, 4, Dense::kNone);
  for (const Mlp* mp : {&m, &wide}) {
    ModelId id;
    ASSERT_TRUE(engine_->load_model(*mp, &id).ok());
    std::unique_ptr<Context> c, g;
    ASSERT_TRUE(engine_->context(Device::kCpu, &c).ok());
    ASSERT_TRUE(engine_->context(Device::kGpu, &g).ok());
    std::mt19937_64 rng(5);
    std::uniform_real_distribution<float> u(-1, 1);
    for (std::size_t rows : {std::size_t{1}, std::size_t{33}, std::size_t{4096}}) {
      std::vector<float> x(rows * mp->inputs()), a, b;
      for (float& v : x) v = u(rng);
      ASSERT_TRUE(c->infer(id, x, rows, &a).ok());
      const Status s = g->infer(id, x, rows, &b);
      ASSERT_TRUE(s.ok()) << s.to_string();
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], kMlpTolerance * (1 + std::fabs(a[i]))) << i;
    }
  }
}

TEST_F(ComputeGpu, BatcherUnderConcurrentCallers) {
  const Mlp m = gen_mlp({5, 128, 2}, 8);
  ModelId id;
  ASSERT_TRUE(engine_->load_model(m, &id).ok());
  std::unique_ptr<Batcher> b;
  ASSERT_TRUE(Batcher::make(engine_, id, Device::kGpu, 4096, &b).ok());
  std::atomic<std::size_t> wrong{0};
  std::vector<std::thread> ts;
  const std::size_t calls = scaled(500);
  for (unsigned t = 0; t < 8; ++t)
    ts.emplace_back([&, t] {
      std::mt19937_64 rng(t);
      std::uniform_real_distribution<float> u(-1, 1);
      for (std::size_t i = 0; i < calls; ++i) {
        const std::size_t rows = 1 + i % 3;
        std::vector<float> x(rows * 5), y;
        for (float& v : x) v = u(rng);
        if (!b->infer(x, rows, &y).ok()) {
          ++wrong;
          continue;
        }
        const auto ref = ref_mlp(m, x, rows);
        for (std::size_t k = 0; k < ref.size(); ++k)
          if (y.size() != ref.size() || std::fabs(y[k] - ref[k]) > kMlpTolerance * (1 + std::fabs(ref[k]))) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(b->requests(), 8 * calls);
  std::printf("batcher: %llu requests in %llu launches\n", static_cast<unsigned long long>(b->requests()),
              static_cast<unsigned long long>(b->launches()));
}

TEST_F(ComputeGpu, ManyContextsShareTheStreamPool) {
  const Table t = gen_table(Shape::kSkewed, 50000, 3);
  std::unique_ptr<Context> cpu;
  ASSERT_TRUE(engine_->context(Device::kCpu, &cpu).ok());
  const std::vector<Agg> aggs{{Agg::kSum, "price", "s"}, {Agg::kCount, "", "n"}};
  const std::vector<std::string> keys{"k1"};
  Table want;
  ASSERT_TRUE(cpu->aggregate(t, nullptr, keys, aggs, &want).ok());
  std::atomic<std::size_t> wrong{0};
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < 8; ++i)
    ts.emplace_back([&] {
      for (int j = 0; j < 10; ++j) {
        std::unique_ptr<Context> g;
        Table got;
        if (!engine_->context(Device::kGpu, &g).ok() || !g->aggregate(t, nullptr, keys, aggs, &got).ok() ||
            !tables_equal(got, want))
          ++wrong;
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_LE(engine_->streams_created(), 4u);
  EXPECT_EQ(engine_->streams_leased(), 0u);
}

// The column mirror's GPU copy: 150,000 rows loaded (three chunks, the device arrays grown twice),
// then writers update, delete and re-insert beside the queries, so rows are appended and old rows
// ended between syncs. Every aggregate on the GPU equals the CPU scan's and the transaction's own
// reads, at fresh starts and, after the writers stop, at older starts held open meanwhile; four
// collections under the writers each start a new device copy, and the held starts read the same.
TEST_F(ComputeGpu, MirrorCopyEqualsTheCpuScanUnderWriters) {
  using namespace mirror_rows;
  std::shared_ptr<TxnSpace> space;
  ASSERT_TRUE(TxnSpace::open("m", TxnConfig{}, &space).ok());
  constexpr std::uint32_t kKeys = 150000;
  for (std::uint32_t i = 0; i < kKeys;) {
    std::vector<std::pair<std::string, std::optional<std::string>>> w;
    for (std::uint32_t j = 0; j < 1000 && i < kKeys; ++j, ++i) w.emplace_back(key(i), row(i % 8, i % 997, i % 13));
    commit(*space, w);
  }
  RandomWriters writers(*space, 3, kKeys + 1000, 8);
  ColumnMirror::Config c = config();
  c.device_copy = true;
  std::shared_ptr<ColumnMirror> m;
  ASSERT_TRUE(ColumnMirror::attach(space, c, &m).ok());
  ASSERT_TRUE(m->stats().on_device);
  std::vector<std::unique_ptr<Txn>> held;
  auto same = [&](Txn* t, std::int64_t lo, const char* when) {
    Table g, cpu;
    const Status s = m->aggregate(t->start_ts(), query(lo), &g, Device::kGpu);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_TRUE(m->aggregate(t->start_ts(), query(lo), &cpu, Device::kCpu, 2).ok());
    EXPECT_EQ(from_table(g), from_table(cpu)) << when << " lo " << lo;
    EXPECT_EQ(from_table(g), reference(t, lo)) << when << " lo " << lo;
  };
  for (int i = 0; i < 40 && !::testing::Test::HasFailure(); ++i) {
    held.push_back(std::make_unique<Txn>());
    ASSERT_TRUE(space->begin(held.back().get()).ok());
    same(held.back().get(), static_cast<std::int64_t>(i * 25) - 10, "fresh");
    if (i % 10 == 5) {  // a collection under the writers: the next GPU query fills a new device copy
      held.erase(held.begin(), held.begin() + 3);
      ASSERT_TRUE(m->collect().ok());
      same(held.front().get(), 300, "held, after a collection");
    }
  }
  writers.stop();
  for (std::size_t h = 0; h < held.size(); h += 7) same(held[h].get(), 100, "held");
  const MirrorStats st = m->stats();
  EXPECT_GT(st.device_ends_copied, 0u);
  EXPECT_GT(st.device_rows_copied, kKeys);
  EXPECT_GE(st.collections, 4u);
  EXPECT_GT(st.versions_collected, 0u);
  std::printf("mirror: %llu rows, %llu collected, %llu GPU syncs, %llu rows and %llu ends copied\n",
              static_cast<unsigned long long>(st.rows), static_cast<unsigned long long>(st.versions_collected),
              static_cast<unsigned long long>(st.device_syncs),
              static_cast<unsigned long long>(st.device_rows_copied),
              static_cast<unsigned long long>(st.device_ends_copied));
}

}  // namespace
}  // namespace duet::compute
