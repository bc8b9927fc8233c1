// Every operator of the CPU twin against the naive references (reference.hpp) on empty,
// uniform, skewed and duplicate-heavy tables, with one worker and with several (a small grain,
// so the parallel paths run on small inputs); and the operators' bad input.
#include <gtest/gtest.h>

#include <thread>

#include "compute/compute.hpp"
#include "reference.hpp"

namespace duet::compute {
namespace {

using namespace testing;

struct OpsCase {
  Shape shape;
  unsigned threads;
};

class ComputeOps : public ::testing::TestWithParam<OpsCase> {
 protected:
  void SetUp() override {
    EngineConfig c;
    c.device = Device::kCpu;
    c.cpu_threads = GetParam().threads;
    c.cpu_grain = 64;
    ASSERT_TRUE(Engine::open(c, &engine_).ok());
    ASSERT_TRUE(engine_->context(Device::kCpu, &ctx_).ok());
    n_ = scaled(20000);
    t_ = gen_table(GetParam().shape, n_, 11);
    // Duplicate-heavy keys join every row with a quarter of the other side: keep that side small.
    r_ = gen_table(GetParam().shape, GetParam().shape == Shape::kDuplicates ? 200 : n_ / 2 + 1, 12);
  }
  std::shared_ptr<Engine> engine_;
  std::unique_ptr<Context> ctx_;
  std::size_t n_ = 0;
  Table t_, r_;
};

TEST_P(ComputeOps, FilterMatchesReference) {
  for (const auto& preds : predicate_sets()) {
    Selection got;
    ASSERT_TRUE(ctx_->filter(t_, preds, &got).ok());
    EXPECT_EQ(got, ref_filter(t_, preds)) << preds.size() << " predicates";
  }
}

TEST_P(ComputeOps, ProjectGathersInSelectionOrder) {
  std::mt19937_64 rng(5);
  Selection sel;
  for (std::size_t i = 0; t_.rows() && i < t_.rows() / 2 + 3; ++i) sel.push_back(static_cast<std::uint32_t>(rng() % t_.rows()));
  Table out;
  ASSERT_TRUE(ctx_->project(t_, sel, {}, &out).ok());
  ASSERT_EQ(out.width(), t_.width());
  ASSERT_EQ(out.rows(), sel.size());
  for (std::size_t c = 0; c < t_.width(); ++c) {
    const Column& in = t_.column(c);
    EXPECT_EQ(out.name(c), t_.name(c));
    for (std::size_t i = 0; i < sel.size(); ++i)
      ASSERT_EQ(0, std::memcmp(out.column(c).data() + i * in.width(), in.data() + sel[i] * in.width(), in.width()));
  }
  const std::vector<std::string> two{"tag", "price"};
  ASSERT_TRUE(ctx_->project(t_, sel, two, &out).ok());
  ASSERT_EQ(out.width(), 2u);
  EXPECT_EQ(out.name(0), "tag");
  EXPECT_EQ(out.column(1).type(), Type::kMoney);
}

TEST_P(ComputeOps, DeriveWrapsLikeTwosComplement) {
  const Column& p = *t_.get("price");
  const Column& q = *t_.get("qty");
  for (Expr::Op op : {Expr::kAdd, Expr::kSub, Expr::kMul}) {
    Expr e;
    e.op = op;
    e.a = "price";
    e.b = "qty";
    Column out;
    ASSERT_TRUE(ctx_->derive(t_, e, &out).ok());
    EXPECT_EQ(out.type(), Type::kMoney);
    for (std::size_t i = 0; i < t_.rows(); ++i) {
      const std::uint64_t x = static_cast<std::uint64_t>(p.i64()[i]), y = static_cast<std::uint64_t>(q.i64()[i]);
      const std::uint64_t want = op == Expr::kAdd ? x + y : op == Expr::kSub ? x - y : x * y;
      ASSERT_EQ(static_cast<std::uint64_t>(out.i64()[i]), want);
    }
  }
  Expr e;
  e.a = "k1";
  e.k = -3;
  Column out;
  ASSERT_TRUE(ctx_->derive(t_, e, &out).ok());
  EXPECT_EQ(out.type(), Type::kInt64);
  for (std::size_t i = 0; i < t_.rows(); ++i)
    ASSERT_EQ(static_cast<std::uint64_t>(out.i64()[i]), static_cast<std::uint64_t>(t_.get("k1")->i64()[i]) * static_cast<std::uint64_t>(-3));
}

void expect_aggregate(Context& ctx, const Table& t, const Selection* sel, const std::vector<std::string>& keys,
                      const std::vector<Agg>& aggs) {
  Table out;
  ASSERT_TRUE(ctx.aggregate(t, sel, keys, aggs, &out).ok());
  const auto ref = ref_aggregate(t, sel, keys, aggs);
  ASSERT_EQ(out.rows(), ref.size());
  ASSERT_EQ(out.width(), keys.size() + aggs.size());
  std::size_t g = 0;
  for (const auto& [k, v] : ref) {
    for (std::size_t j = 0; j < keys.size(); ++j) ASSERT_EQ(out.column(j).i64()[g], k[j]) << "group " << g;
    for (std::size_t j = 0; j < aggs.size(); ++j)
      ASSERT_EQ(out.column(keys.size() + j).i64()[g], v[j]) << "group " << g << " aggregate " << aggs[j].name;
    ++g;
  }
}

TEST_P(ComputeOps, AggregateMatchesReference) {
  const std::vector<Agg> aggs{{Agg::kCount, "", "n"},
                              {Agg::kSum, "price", "sum_price"},
                              {Agg::kMin, "k1", "min_k1"},
                              {Agg::kMax, "price", "max_price"},
                              {Agg::kSum, "qty", "sum_qty"}};
  expect_aggregate(*ctx_, t_, nullptr, {}, aggs);
  expect_aggregate(*ctx_, t_, nullptr, {"k1"}, aggs);
  expect_aggregate(*ctx_, t_, nullptr, {"k2", "k1"}, aggs);
  expect_aggregate(*ctx_, t_, nullptr, {"k2", "qty", "k1", "price"}, aggs);
  Selection sel;
  Predicate p;
  p.column = "qty";
  p.cmp = Cmp::kLe;
  p.i = 20;
  ASSERT_TRUE(ctx_->filter(t_, std::span<const Predicate>(&p, 1), &sel).ok());
  expect_aggregate(*ctx_, t_, &sel, {"k2"}, aggs);
  expect_aggregate(*ctx_, t_, &sel, {}, aggs);
  Table out;
  ASSERT_TRUE(ctx_->aggregate(t_, nullptr, std::vector<std::string>{"k2"}, aggs, &out).ok());
  EXPECT_EQ(out.column(2).type(), Type::kMoney);  // sum of money is money
  EXPECT_EQ(out.column(1).type(), Type::kInt64);  // count
}

TEST_P(ComputeOps, HashAndIndexJoinsMatchReference) {
  JoinPairs h, ix;
  ASSERT_TRUE(ctx_->hash_join(t_, "k1", r_, "k1", &h).ok());
  const JoinPairs ref = ref_join(*t_.get("k1"), *r_.get("k1"));
  EXPECT_EQ(h.left, ref.left);
  EXPECT_EQ(h.right, ref.right);
  // The index join needs the right side sorted: sort it by k1 and join against that copy.
  Selection order;
  const SortKey sk{"k1", false};
  ASSERT_TRUE(ctx_->sort(r_, std::span<const SortKey>(&sk, 1), 0, &order).ok());
  Table rs;
  ASSERT_TRUE(ctx_->project(r_, order, {}, &rs).ok());
  ASSERT_TRUE(ctx_->index_join(t_, "k1", rs, "k1", &ix).ok());
  const JoinPairs ref2 = ref_join(*t_.get("k1"), *rs.get("k1"));
  EXPECT_EQ(ix.left, ref2.left);
  EXPECT_EQ(ix.right, ref2.right);
  ASSERT_TRUE(ctx_->hash_join(t_, "k1", rs, "k1", &h).ok());
  EXPECT_EQ(h.left, ix.left);
  EXPECT_EQ(h.right, ix.right);
  // Many matches per key: every row against a small table on a 4-valued key.
  Table small = gen_table(GetParam().shape, 200, 13);
  ASSERT_TRUE(ctx_->hash_join(t_, "k2", small, "k2", &h).ok());
  const JoinPairs ref3 = ref_join(*t_.get("k2"), *small.get("k2"));
  EXPECT_EQ(h.left, ref3.left);
  EXPECT_EQ(h.right, ref3.right);
  if (r_.rows() > 2 && r_.get("k1")->i64()[0] != r_.get("k1")->i64()[1]) {
    // Unsorted right side: refused, not a wrong answer.
    Table un;
    Selection rev{1, 0};
    ASSERT_TRUE(ctx_->project(rs, rev, {}, &un).ok());
    if (un.get("k1")->i64()[0] > un.get("k1")->i64()[1]) {
      EXPECT_EQ(ctx_->index_join(t_, "k1", un, "k1", &ix).code(), StatusCode::kInvalidArgument);
    }
  }
}

TEST_P(ComputeOps, SortAndTopKMatchReference) {
  const std::vector<std::vector<SortKey>> sets{{{"k1", false}},
                                               {{"k1", true}},
                                               {{"k2", false}, {"price", true}},
                                               {{"f", false}},
                                               {{"g", true}, {"k1", false}},
                                               {{"k2", true}, {"qty", false}, {"f", true}}};
  for (const auto& keys : sets) {
    const Selection full = ref_sort(t_, keys, 0);  // a stable sort's prefix is its top-k
    for (std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{10}, t_.rows() + 5}) {
      Selection got;
      ASSERT_TRUE(ctx_->sort(t_, keys, limit, &got).ok());
      const Selection want(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(limit ? std::min(limit, full.size()) : full.size()));
      EXPECT_EQ(got, want) << keys.size() << " keys, limit " << limit;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ComputeOps,
                         ::testing::Values(OpsCase{Shape::kEmpty, 1}, OpsCase{Shape::kEmpty, 3},
                                           OpsCase{Shape::kUniform, 1}, OpsCase{Shape::kUniform, 3},
                                           OpsCase{Shape::kSkewed, 1}, OpsCase{Shape::kSkewed, 3},
                                           OpsCase{Shape::kDuplicates, 1}, OpsCase{Shape::kDuplicates, 3}),
                         [](const ::testing::TestParamInfo<OpsCase>& i) {
                           return std::string(shape_name(i.param.shape)) + "_" + std::to_string(i.param.threads) + "t";
                         });

class ComputeMisc : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig c;
    c.device = Device::kCpu;
    c.cpu_threads = 2;
    ASSERT_TRUE(Engine::open(c, &engine_).ok());
    ASSERT_TRUE(engine_->context(Device::kAuto, &ctx_).ok());
  }
  std::shared_ptr<Engine> engine_;
  std::unique_ptr<Context> ctx_;
};

TEST_F(ComputeMisc, FloatSortIsTotalOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  Table t;
  ASSERT_TRUE(t.add("f", Column::of_float64({1.0, -nan, 0.0, -inf, nan, -0.0, inf, -1.0, 0.0})).ok());
  Selection s;
  const SortKey k{"f", false};
  ASSERT_TRUE(ctx_->sort(t, std::span<const SortKey>(&k, 1), 0, &s).ok());
  EXPECT_EQ(s, (Selection{1, 3, 7, 5, 2, 8, 0, 6, 4}));
  const SortKey d{"f", true};
  ASSERT_TRUE(ctx_->sort(t, std::span<const SortKey>(&d, 1), 3, &s).ok());
  EXPECT_EQ(s, (Selection{4, 6, 0}));
}

TEST_F(ComputeMisc, MlpMatchesReferenceWithinTolerance) {
  const Mlp m = gen_mlp({6, 128, 2}, 3);
  ModelId id;
  ASSERT_TRUE(engine_->load_model(m, &id).ok());
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  for (std::size_t rows : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{300}}) {
    std::vector<float> x(rows * 6), y;
    for (float& v : x) v = u(rng);
    ASSERT_TRUE(ctx_->infer(id, x, rows, &y).ok());
    const std::vector<float> ref = ref_mlp(m, x, rows);
    ASSERT_EQ(y.size(), ref.size());
    for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref[i], kMlpTolerance * (1 + std::fabs(ref[i])));
  }
  const Mlp lin = gen_mlp({3, 4}, 4, Dense::kNone);
  ASSERT_TRUE(engine_->load_model(lin, &id).ok());
  std::vector<float> x{0.5f, -1.0f, 2.0f}, y;
  ASSERT_TRUE(ctx_->infer(id, x, 1, &y).ok());
  const auto ref = ref_mlp(lin, x, 1);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], ref[i], 1e-5);
}

// Negative controls: planted faults of the kinds a broken operator would make (a tie out of
// row order, one wrong aggregate value, a join pair out of order, a lost row) are each caught by
// the comparisons the suites use.
TEST_F(ComputeMisc, ComparisonsCatchPlantedFaults) {
  Table t = gen_table(Shape::kDuplicates, 500, 4);
  const SortKey k{"k1", false};
  Selection s;
  ASSERT_TRUE(ctx_->sort(t, std::span<const SortKey>(&k, 1), 0, &s).ok());
  ASSERT_EQ(s, ref_sort(t, {k}, 0));
  std::swap(s[0], s[1]);  // both rows hold the least key: only the tie order differs
  EXPECT_NE(s, ref_sort(t, {k}, 0));
  const std::vector<Agg> aggs{{Agg::kSum, "price", "s"}};
  const std::vector<std::string> keys{"k1"};
  Table a, b;
  ASSERT_TRUE(ctx_->aggregate(t, nullptr, keys, aggs, &a).ok());
  ASSERT_TRUE(ctx_->aggregate(t, nullptr, keys, aggs, &b).ok());
  ASSERT_TRUE(tables_equal(a, b));
  b.column(1).i64()[2] += 1;
  EXPECT_FALSE(tables_equal(a, b));
  JoinPairs j;
  Table small = gen_table(Shape::kDuplicates, 20, 5);
  ASSERT_TRUE(ctx_->hash_join(t, "k1", small, "k1", &j).ok());
  JoinPairs ref = ref_join(*t.get("k1"), *small.get("k1"));
  ASSERT_EQ(j.right, ref.right);
  ASSERT_GE(j.size(), 2u);
  std::swap(j.right[0], j.right[1]);
  EXPECT_NE(j.right, ref.right);
  Selection f;
  Predicate p;
  p.column = "qty";
  p.cmp = Cmp::kGt;
  p.i = 10;
  ASSERT_TRUE(ctx_->filter(t, std::span<const Predicate>(&p, 1), &f).ok());
  f.pop_back();
  EXPECT_NE(f, ref_filter(t, {p}));
}

TEST_F(ComputeMisc, BadInputIsRefusedAndChangesNothing) {
  Table t = gen_table(Shape::kUniform, 100, 1);
  Selection sel{1, 2, 3};
  const Selection keep = sel;
  auto bad = [](const Status& s) { return s.code() == StatusCode::kInvalidArgument; };
  Predicate p;
  p.column = "nope";
  EXPECT_TRUE(bad(ctx_->filter(t, std::span<const Predicate>(&p, 1), &sel)));
  EXPECT_EQ(sel, keep);
  p.column = "tag";
  p.s = "TOOLONG";
  EXPECT_TRUE(bad(ctx_->filter(t, std::span<const Predicate>(&p, 1), &sel)));
  p.column = "k1";
  p.cmp = static_cast<Cmp>(99);
  EXPECT_TRUE(bad(ctx_->filter(t, std::span<const Predicate>(&p, 1), &sel)));
  EXPECT_TRUE(bad(ctx_->filter(t, {}, nullptr)));
  Table out;
  EXPECT_TRUE(bad(ctx_->project(t, Selection{100}, {}, &out)));
  const std::vector<std::string> dup{"k1", "k1"};
  EXPECT_TRUE(bad(ctx_->project(t, sel, dup, &out)));
  Expr e;
  e.a = "f";
  Column c;
  EXPECT_TRUE(bad(ctx_->derive(t, e, &c)));
  e.a = "k1";
  e.b = "tag";
  EXPECT_TRUE(bad(ctx_->derive(t, e, &c)));
  const std::vector<Agg> aggs{{Agg::kSum, "f", "s"}};
  EXPECT_TRUE(bad(ctx_->aggregate(t, nullptr, {}, aggs, &out)));
  const std::vector<Agg> noname{{Agg::kCount, "", ""}};
  EXPECT_TRUE(bad(ctx_->aggregate(t, nullptr, {}, noname, &out)));
  const std::vector<std::string> fivekeys{"k1", "k2", "qty", "price", "k1"};
  const std::vector<Agg> cnt{{Agg::kCount, "", "n"}};
  EXPECT_TRUE(bad(ctx_->aggregate(t, nullptr, fivekeys, cnt, &out)));
  const std::vector<std::string> fkey{"f"};
  EXPECT_TRUE(bad(ctx_->aggregate(t, nullptr, fkey, cnt, &out)));
  const std::vector<std::string> k1{"k1"};
  const std::vector<Agg> clash{{Agg::kCount, "", "k1"}};
  EXPECT_TRUE(bad(ctx_->aggregate(t, nullptr, k1, clash, &out)));
  const Selection oob{5000};
  EXPECT_TRUE(bad(ctx_->aggregate(t, &oob, k1, cnt, &out)));
  JoinPairs jp;
  EXPECT_TRUE(bad(ctx_->hash_join(t, "f", t, "k1", &jp)));
  EXPECT_TRUE(bad(ctx_->index_join(t, "k1", t, "missing", &jp)));
  EXPECT_TRUE(bad(ctx_->index_join(t, "k1", t, "k1", &jp)));  // k1 is not sorted
  EXPECT_TRUE(bad(ctx_->sort(t, {}, 0, &sel)));
  const SortKey bk{"tag", false};
  EXPECT_TRUE(bad(ctx_->sort(t, std::span<const SortKey>(&bk, 1), 0, &sel)));
  std::vector<float> y;
  EXPECT_TRUE(bad(ctx_->infer(42, {}, 0, &y)));
  ModelId id;
  Mlp m = gen_mlp({2, 3}, 1);
  ASSERT_TRUE(engine_->load_model(m, &id).ok());
  std::vector<float> x(5);
  EXPECT_TRUE(bad(ctx_->infer(id, x, 2, &y)));
  m.layers[0].w.pop_back();
  EXPECT_TRUE(bad(engine_->load_model(m, &id)));
  EXPECT_TRUE(bad(Mlp{}.check()));
  Mlp two = gen_mlp({2, 3, 4}, 1);
  two.layers[1].in = 5;
  EXPECT_TRUE(bad(two.check()));
  // Tables refuse mismatched columns.
  Table u;
  ASSERT_TRUE(u.add("a", Column::of_int64({1, 2})).ok());
  EXPECT_TRUE(bad(u.add("b", Column::of_int64({1}))));
  EXPECT_TRUE(bad(u.add("a", Column::of_int64({1, 2}))));
  EXPECT_TRUE(bad(u.add("", Column::of_int64({1, 2}))));
}

TEST_F(ComputeMisc, EngineSettingsAndDevices) {
  std::shared_ptr<Engine> e;
  EngineConfig c;
  c.max_streams = 0;
  EXPECT_EQ(Engine::open(c, &e).code(), StatusCode::kInvalidArgument);
  c.max_streams = 4;
  c.device = static_cast<Device>(9);
  EXPECT_EQ(Engine::open(c, &e).code(), StatusCode::kInvalidArgument);
  c.device = Device::kGpu;
  const Status s = Engine::open(c, &e);
  if (!s.ok()) {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  } else {
    EXPECT_EQ(e->device(), Device::kGpu);
  }
  c.device = Device::kAuto;
  ASSERT_TRUE(Engine::open(c, &e).ok());
  EXPECT_EQ(e->device(), e->gpu_available() ? Device::kGpu : Device::kCpu);
  std::unique_ptr<Context> ctx;
  if (!e->gpu_available()) {
    EXPECT_EQ(e->context(Device::kGpu, &ctx).code(), StatusCode::kInvalidArgument);
  }
  ASSERT_TRUE(e->context(Device::kCpu, &ctx).ok());
  EXPECT_EQ(ctx->device(), Device::kCpu);
  EXPECT_FALSE(e->describe().empty());
}

}  // namespace
}  // namespace duet::compute
