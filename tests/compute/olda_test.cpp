// OLDA fraud workload (src/compute/olda.hpp): the haversine distance and the fraud rule against
// hand values, the generator, the trained model's accuracy floor, a flagged payment that never
// commits and leaves the data intact, a conflict between two payments of one user forced by
// interleaving their runs, and concurrent payments whose recorded history is checked: committed
// payments of a user never overlap (first updater wins), every conflicted run lost to a commit
// inside it, and the final profile and payments equal a serial replay in commit order. A
// keyspace with validation switched off is the negative control the checker must catch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

#include "compute/olda.hpp"
#include "reference.hpp"

namespace duet::compute::olda {
namespace {

// The accuracy floor the committed recipe must reach on held-out samples.
constexpr double kAccuracyFloor = 0.97;

// A shorter run of the recipe (a quarter of the samples, half the epochs) for the tests that need
// a trained model but not the committed one: each test runs in its own process under ctest, and
// the full recipe costs about 0.6 s in Release.
TrainConfig quick_recipe() {
  TrainConfig c;
  c.train_samples = 1 << 13;
  c.test_samples = 1 << 11;
  c.epochs = 4;
  return c;
}

// The model the transaction tests use: a much shorter run of the recipe (2,048 samples, 2 epochs,
// a few milliseconds). Those tests only need payments far over 300 km flagged and payments a few
// km away passed, which they check themselves.
const Mlp& test_model() {
  static const Mlp m = [] {
    TrainConfig c;
    c.train_samples = 1 << 11;
    c.test_samples = 1 << 8;
    c.epochs = 2;
    Mlp x;
    EXPECT_TRUE(train(c, &x, nullptr).ok());
    return x;
  }();
  return m;
}

TEST(OldaRule, HaversineHandValues) {
  const double deg = kEarthRadiusKm * 3.14159265358979323846 / 180.0;  // 111.195 km
  EXPECT_NEAR(haversine_km(0, 0, 0, 1), deg, 1e-9);
  EXPECT_NEAR(haversine_km(0, 0, 1, 0), deg, 1e-9);
  EXPECT_NEAR(haversine_km(0, 0, 90, 0), 90 * deg, 1e-6);
  EXPECT_NEAR(haversine_km(0, 0, 0, 180), 180 * deg, 1e-6);  // antipodes
  EXPECT_NEAR(haversine_km(10, 20, 10, 20), 0.0, 1e-12);
  EXPECT_NEAR(haversine_km(60, 0, 60, 1), deg * std::cos(60 * 3.14159265358979323846 / 180), 0.01);  // a parallel
  // New York to Chicago: about 1,145 km (published great-circle figure).
  EXPECT_NEAR(haversine_km(40.7128, -74.0060, 41.8781, -87.6298), 1145, 3);
  EXPECT_NEAR(haversine_km(41.8781, -87.6298, 40.7128, -74.0060), haversine_km(40.7128, -74.0060, 41.8781, -87.6298), 1e-9);
}

TEST(OldaRule, FraudIsMoreThan300KmFromThePriorPayment) {
  const double deg = kEarthRadiusKm * 3.14159265358979323846 / 180.0;
  EXPECT_FALSE(is_fraud(40, -100, 40 + 299 / deg, -100));
  EXPECT_TRUE(is_fraud(40, -100, 40 + 301 / deg, -100));
  EXPECT_FALSE(is_fraud(40, -100, 40 + 300 / deg - 1e-9, -100));  // exactly 300 km is not more
  EXPECT_TRUE(is_fraud(0, 0, 0, 2.7));   // 300.2 km east along the equator
  EXPECT_FALSE(is_fraud(0, 0, 0, 2.69));
  for (std::size_t i = 0; i < kLocations.size(); ++i)
    for (std::size_t j = i + 1; j < kLocations.size(); ++j)
      EXPECT_GT(haversine_km(kLocations[i].lat, kLocations[i].lon, kLocations[j].lat, kLocations[j].lon), 1000)
          << kLocations[i].name << " - " << kLocations[j].name;
  const auto f = features(0, 0, 0, 2.7);
  EXPECT_NEAR(f[0], 0.3002, 1e-3);
  EXPECT_FLOAT_EQ(f[2], 0.0f);
  EXPECT_FLOAT_EQ(f[4], 2.7f / 180);
}

TEST(OldaGenerator, SeededAndShapedAsDocumented) {
  GenConfig g;
  g.users = 1000;
  g.history = 3;
  EXPECT_TRUE(g.check().ok());
  const auto a = make_payments(g, 4000, 5), b = make_payments(g, 4000, 5), c = make_payments(g, 4000, 6);
  ASSERT_EQ(a.size(), 4000u);
  std::size_t same = 0, foreign = 0;
  double sx = 0, sxx = 0;
  std::size_t home_n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].lat, b[i].lat);
    EXPECT_EQ(a[i].user, b[i].user);
    EXPECT_EQ(a[i].id, i + 1);
    EXPECT_LT(a[i].user, g.users);
    same += a[i].lat == c[i].lat;
    foreign += a[i].foreign;
    if (!a[i].foreign) {
      const double d = a[i].lat - kLocations[home_of(g, a[i].user)].lat;
      sx += d;
      sxx += d * d;
      ++home_n;
    }
  }
  EXPECT_EQ(same, 0u);
  EXPECT_NEAR(static_cast<double>(foreign) / a.size(), g.foreign_rate, 0.02);
  const double mean = sx / home_n, sd = std::sqrt(sxx / home_n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(sd, g.sigma_deg, 0.1);
  std::size_t homes[4] = {};
  for (std::uint32_t u = 0; u < g.users; ++u) {
    ++homes[home_of(g, u)];
    const auto h = history_of(g, u);
    ASSERT_EQ(h.size(), 3u);
    const Location& L = kLocations[home_of(g, u)];
    for (const Point& p : h) {
      EXPECT_LE(std::abs(p.lat - L.lat), g.history_half_width_deg);
      EXPECT_LE(std::abs(p.lon - L.lon), g.history_half_width_deg);
    }
  }
  for (std::size_t k : homes) EXPECT_NEAR(static_cast<double>(k) / g.users, 0.25, 0.06);
  GenConfig bad = g;
  bad.users = 0;
  EXPECT_FALSE(bad.check().ok());
  bad = g;
  bad.history = 0;
  EXPECT_FALSE(bad.check().ok());
  bad = g;
  bad.foreign_rate = 1.5;
  EXPECT_FALSE(bad.check().ok());
}

TEST(OldaModelTest, RecipeReachesTheAccuracyFloor) {
  // The committed recipe in full; at ASan's reduced scale the shorter run (the recipe's code,
  // fewer samples), which must reach the same floor.
  const bool full = testing::test_scale() >= 0.5;
  if (testing::test_scale() < 0.15)  // ThreadSanitizer's scale: the training is single-threaded
    GTEST_SKIP() << "single-threaded training; run at DUET_TEST_SCALE >= 0.15 (Release, ASan)";
  Mlp m;
  TrainReport r;
  ASSERT_TRUE(train(full ? TrainConfig{} : quick_recipe(), &m, &r).ok());
  ASSERT_EQ(m.inputs(), kFeatures);
  ASSERT_EQ(m.outputs(), 2u);
  ASSERT_EQ(m.layers[0].out, 128u);
  std::printf("olda model (%s recipe): train %.4f test %.4f (fraud rate %.3f, recall %.4f, legit pass %.4f), loss %.4f\n",
              full ? "committed" : "shorter", r.train_accuracy, r.test_accuracy, r.test_fraud_rate, r.test_fraud_recall,
              r.test_legit_pass, r.final_loss);
  EXPECT_GE(r.test_accuracy, kAccuracyFloor);
  if (full) {
    EXPECT_GE(r.test_fraud_recall, 0.95);  // the shorter run misses more near 300 km
  }
  EXPECT_GT(r.test_fraud_rate, 0.05);  // both classes are represented
  // Samples the engine's FP32 inference sees give the same verdict as the double-precision one.
  std::shared_ptr<Engine> e;
  ASSERT_TRUE(Engine::open(EngineConfig{Device::kCpu, 1}, &e).ok());
  ModelId id;
  ASSERT_TRUE(e->load_model(m, &id).ok());
  const auto s = make_samples(GenConfig{}, 512, 99);
  std::vector<float> x, y;
  for (const Sample& q : s) {
    const auto f = features(q.prev.lat, q.prev.lon, q.cur.lat, q.cur.lon);
    x.insert(x.end(), f.begin(), f.end());
  }
  std::unique_ptr<Context> c;
  ASSERT_TRUE(e->context(Device::kCpu, &c).ok());
  ASSERT_TRUE(c->infer(id, x, s.size(), &y).ok());
  std::size_t right = 0;
  for (std::size_t i = 0; i < s.size(); ++i) right += model_flags(&y[2 * i]) == s[i].fraud;
  EXPECT_GE(static_cast<double>(right) / s.size(), kAccuracyFloor);
}

TEST(OldaModelTest, BadTrainingConfigIsRefused) {
  TrainConfig c;
  c.epochs = 0;
  Mlp m;
  EXPECT_EQ(train(c, &m, nullptr).code(), StatusCode::kInvalidArgument);
}

// A keyspace, an engine with the model and the workload over them.
struct Fixture {
  explicit Fixture(bool batcher, bool skip_validation = false) {
    TxnConfig tc;
    tc.faults.skip_validation = skip_validation;
    EXPECT_TRUE(TxnSpace::open("olda", tc, &space).ok());
    EngineConfig ec;
    ec.cpu_threads = 1;
    EXPECT_TRUE(Engine::open(ec, &engine).ok());
    EXPECT_TRUE(engine->load_model(test_model(), &model).ok());
    OldaOptions o;
    o.batcher = batcher;
    o.extra = 2;
    EXPECT_TRUE(Olda::make(space, engine, model, o, &w).ok());
  }
  std::shared_ptr<TxnSpace> space;
  std::shared_ptr<Engine> engine;
  ModelId model = 0;
  std::unique_ptr<Olda> w;
};

GenConfig small_users(std::uint32_t users) {
  GenConfig g;
  g.users = users;
  g.history = 4;
  return g;
}

TEST(OldaTxn, LegitimatePaymentCommitsItsPaymentAndProfile) {
  Fixture f(false);
  const GenConfig g = small_users(8);
  ASSERT_TRUE(f.w->load(g, 0, g.users, 2).ok());
  Profile p0;
  ASSERT_TRUE(f.w->read_profile(3, &p0).ok());
  EXPECT_EQ(p0.seq, 4u);
  EXPECT_EQ(p0.home, home_of(g, 3));
  const auto h = history_of(g, 3);
  EXPECT_EQ(p0.last.lat, h.back().lat);
  const Payment pay{3, p0.last.lat + 0.1, p0.last.lon - 0.1, 77, false};
  PayResult r;
  ASSERT_TRUE(f.w->pay(pay, &r).ok());
  EXPECT_TRUE(r.committed);
  EXPECT_FALSE(r.model_fraud);
  EXPECT_FALSE(r.rule_fraud);
  EXPECT_EQ(r.attempts, 1u);
  EXPECT_EQ(r.seq, 5u);
  EXPECT_EQ(r.snapshot_slots, 4u);  // profile, newest payment, 2 extra
  Profile p1;
  ASSERT_TRUE(f.w->read_profile(3, &p1).ok());
  EXPECT_EQ(p1.seq, 5u);
  EXPECT_EQ(p1.last.lat, pay.lat);
  std::vector<std::pair<Point, std::uint64_t>> ps;
  ASSERT_TRUE(f.w->read_payments(3, &ps).ok());
  ASSERT_EQ(ps.size(), 5u);
  EXPECT_EQ(ps.back().second, 77u);
  EXPECT_EQ(ps.front().first.lat, h.front().lat);
  EXPECT_EQ(f.w->launches(), 1u);
  PayResult nf;
  EXPECT_EQ(f.w->pay(Payment{999, 0, 0, 1, false}, &nf).code(), StatusCode::kNotFound);
}

TEST(OldaTxn, FlaggedPaymentDoesNotCommitAndLeavesDataIntact) {
  for (bool batcher : {false, true}) {
    Fixture f(batcher);
    const GenConfig g = small_users(4);
    ASSERT_TRUE(f.w->load(g, 0, g.users, 1).ok());
    for (std::uint32_t u = 0; u < g.users; ++u) {
      Profile before;
      ASSERT_TRUE(f.w->read_profile(u, &before).ok());
      std::vector<std::pair<Point, std::uint64_t>> pb, pa;
      ASSERT_TRUE(f.w->read_payments(u, &pb).ok());
      const TxnStats s0 = f.space->stats();
      const Location& far = kLocations[(before.home + 2) % 4];  // over 1,000 km away
      PayResult r;
      ASSERT_TRUE(f.w->pay(Payment{u, far.lat, far.lon, 500 + u, true}, &r).ok());
      EXPECT_TRUE(r.rule_fraud);
      EXPECT_TRUE(r.model_fraud) << "user " << u << " at " << r.km << " km";
      EXPECT_FALSE(r.committed);
      Profile after;
      ASSERT_TRUE(f.w->read_profile(u, &after).ok());
      EXPECT_EQ(after.seq, before.seq);
      EXPECT_EQ(after.last.lat, before.last.lat);
      ASSERT_TRUE(f.w->read_payments(u, &pa).ok());
      ASSERT_EQ(pa.size(), pb.size());
      for (std::size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i].first.lon, pb[i].first.lon);
      const TxnStats s1 = f.space->stats();
      EXPECT_EQ(s1.commits, s0.commits);
      EXPECT_EQ(s1.versions, s0.versions);
    }
  }
}

TEST(OldaTxn, ConcurrentRunsOfOneUserConflictAndTheLoserRetries) {
  Fixture f(false);
  const GenConfig g = small_users(2);
  ASSERT_TRUE(f.w->load(g, 0, g.users, 1).ok());
  Profile p0;
  ASSERT_TRUE(f.w->read_profile(1, &p0).ok());
  const Payment a{1, p0.last.lat + 0.05, p0.last.lon, 10, false}, b{1, p0.last.lat - 0.05, p0.last.lon, 11, false};
  std::unique_ptr<Context> ca, cb;
  ASSERT_TRUE(f.engine->context(Device::kCpu, &ca).ok());
  ASSERT_TRUE(f.engine->context(Device::kCpu, &cb).ok());
  Txn ta, tb;
  PayResult ra, rb;
  std::uint64_t sa = 0, sb = 0;
  ASSERT_TRUE(f.w->prepare(a, ca.get(), &ta, &ra, &sa).ok());
  ASSERT_TRUE(f.w->prepare(b, cb.get(), &tb, &rb, &sb).ok());
  EXPECT_EQ(sa, sb);  // both read the same profile
  CommitResult c1, c2;
  ASSERT_TRUE(ta.commit(&c1).ok());
  ASSERT_TRUE(tb.commit(&c2).ok());
  EXPECT_EQ(c1.outcome, TxnOutcome::kCommitted);
  EXPECT_EQ(c2.outcome, TxnOutcome::kConflict);
  // The loser runs again on a new snapshot and commits after the winner.
  PayResult r;
  ASSERT_TRUE(f.w->pay(b, &r).ok());
  EXPECT_TRUE(r.committed);
  EXPECT_EQ(r.seq, p0.seq + 2);
  std::vector<std::pair<Point, std::uint64_t>> ps;
  ASSERT_TRUE(f.w->read_payments(1, &ps).ok());
  ASSERT_EQ(ps.size(), p0.seq + 2);
  EXPECT_EQ(ps[ps.size() - 2].second, 10u);
  EXPECT_EQ(ps.back().second, 11u);
}

// The history checker: per user, committed runs ordered by commit timestamp must each have read
// the previous one's result (seq) and started after it committed; every conflicted run must have
// lost to a commit of its user between its start and its end; and the stored profile and payments
// must equal a serial replay of the committed payments in commit order. Returns the first
// violation, or "".
std::string check_history(const std::vector<Attempt>& h, const std::map<std::uint32_t, std::uint64_t>& seq0,
                          const std::map<std::uint64_t, Payment>& payments, Olda& w) {
  std::map<std::uint32_t, std::vector<const Attempt*>> committed;
  for (const Attempt& a : h)
    if (a.outcome == Attempt::kCommitted) committed[a.user].push_back(&a);
  for (auto& [u, v] : committed) {
    std::sort(v.begin(), v.end(), [](const Attempt* x, const Attempt* y) { return x->commit_ts < y->commit_ts; });
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i]->seq_read != seq0.at(u) + i)
        return "user " + std::to_string(u) + ": commit " + std::to_string(i) + " read seq " + std::to_string(v[i]->seq_read) +
               ", a serial order reads " + std::to_string(seq0.at(u) + i);
      if (i > 0 && v[i]->start_ts < v[i - 1]->commit_ts)
        return "user " + std::to_string(u) + ": payments " + std::to_string(v[i - 1]->payment) + " and " +
               std::to_string(v[i]->payment) + " overlap and both committed";
    }
  }
  for (const Attempt& a : h) {
    if (a.outcome != Attempt::kConflict) continue;
    bool explained = false;
    for (const Attempt* c : committed[a.user]) explained |= c->commit_ts > a.start_ts && c->commit_ts <= a.after_ts;
    if (!explained) return "payment " + std::to_string(a.payment) + " run " + std::to_string(a.attempt) + " conflicted with no commit";
  }
  for (auto& [u, v] : committed) {
    Profile p;
    if (!w.read_profile(u, &p).ok()) return "user " + std::to_string(u) + ": profile unreadable";
    if (p.seq != seq0.at(u) + v.size())
      return "user " + std::to_string(u) + ": profile seq " + std::to_string(p.seq) + ", serial replay " +
             std::to_string(seq0.at(u) + v.size());
    std::vector<std::pair<Point, std::uint64_t>> ps;
    if (!w.read_payments(u, &ps).ok() || ps.size() != p.seq) return "user " + std::to_string(u) + ": payments differ in number";
    for (std::size_t i = 0; i < v.size(); ++i) {
      const auto& got = ps[seq0.at(u) + i];
      const Payment& want = payments.at(v[i]->payment);
      if (got.second != want.id || got.first.lat != want.lat || got.first.lon != want.lon)
        return "user " + std::to_string(u) + ": payment " + std::to_string(seq0.at(u) + i + 1) + " differs from the replay";
    }
    const Payment& last = payments.at(v.back()->payment);
    if (p.last.lat != last.lat) return "user " + std::to_string(u) + ": profile's newest payment differs from the replay";
  }
  return "";
}

// Runs `threads` threads of legitimate payments over `users` users and checks the history.
std::string run_concurrent(Fixture& f, std::uint32_t users, unsigned threads, std::size_t per_thread, std::size_t* conflicts) {
  GenConfig g = small_users(users);
  g.sigma_deg = 0.2;  // every payment well inside 300 km of the last: all commit
  g.history_half_width_deg = 0.2;
  g.foreign_rate = 0;
  if (!f.w->load(g, 0, users, 1).ok()) return "load failed";
  std::map<std::uint32_t, std::uint64_t> seq0;
  for (std::uint32_t u = 0; u < users; ++u) seq0[u] = g.history;
  const auto all = make_payments(g, threads * per_thread, 3);
  std::map<std::uint64_t, Payment> by_id;
  for (const Payment& p : all) by_id[p.id] = p;
  std::mutex mu;
  std::vector<Attempt> hist;
  std::atomic<std::size_t> failed{0}, declined{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      std::vector<Attempt> mine;
      for (std::size_t i = 0; i < per_thread; ++i) {
        PayResult r;
        if (!f.w->pay(all[t * per_thread + i], &r, [&](const Attempt& a) { mine.push_back(a); }).ok()) ++failed;
        if (!r.committed) ++declined;
      }
      std::lock_guard<std::mutex> l(mu);
      hist.insert(hist.end(), mine.begin(), mine.end());
    });
  for (auto& th : ts) th.join();
  if (failed) return std::to_string(failed.load()) + " payments failed";
  if (declined) return std::to_string(declined.load()) + " legitimate payments were declined";
  *conflicts = static_cast<std::size_t>(std::count_if(hist.begin(), hist.end(), [](const Attempt& a) { return a.outcome == Attempt::kConflict; }));
  return check_history(hist, seq0, by_id, *f.w);
}

TEST(OldaTxn, ConcurrentPaymentsEqualASerialReplay) {
  for (bool batcher : {true, false}) {
    Fixture f(batcher);
    std::size_t conflicts = 0;
    const std::string err = run_concurrent(f, 3, 4, testing::scaled(150), &conflicts);
    EXPECT_EQ(err, "") << (batcher ? "batcher" : "per transaction");
    std::printf("olda concurrent (%s): %zu conflicted runs, %llu launches for %llu inferences\n",
                batcher ? "batcher" : "per transaction", conflicts, static_cast<unsigned long long>(f.w->launches()),
                static_cast<unsigned long long>(f.w->inferences()));
  }
}

TEST(OldaTxn, NegativeControlLostUpdatesWithoutValidationAreCaught) {
  // Validation off: two interleaved runs of one user both commit; the checker must say so.
  Fixture f(false, /*skip_validation=*/true);
  const GenConfig g = small_users(1);
  ASSERT_TRUE(f.w->load(g, 0, 1, 1).ok());
  Profile p0;
  ASSERT_TRUE(f.w->read_profile(0, &p0).ok());
  const Payment a{0, p0.last.lat + 0.05, p0.last.lon, 20, false}, b{0, p0.last.lat - 0.05, p0.last.lon, 21, false};
  std::unique_ptr<Context> c;
  ASSERT_TRUE(f.engine->context(Device::kCpu, &c).ok());
  Txn ta, tb;
  PayResult ra, rb;
  Attempt xa, xb;
  xa.payment = 20;
  xb.payment = 21;
  ASSERT_TRUE(f.w->prepare(a, c.get(), &ta, &ra, &xa.seq_read).ok());
  ASSERT_TRUE(f.w->prepare(b, c.get(), &tb, &rb, &xb.seq_read).ok());
  xa.start_ts = ta.start_ts();
  xb.start_ts = tb.start_ts();
  CommitResult c1, c2;
  ASSERT_TRUE(ta.commit(&c1).ok());
  ASSERT_TRUE(tb.commit(&c2).ok());
  ASSERT_EQ(c2.outcome, TxnOutcome::kCommitted);  // the planted bug lets both commit
  xa.commit_ts = c1.commit_ts;
  xb.commit_ts = c2.commit_ts;
  const std::string err = check_history({xa, xb}, {{0u, p0.seq}}, {{20, a}, {21, b}}, *f.w);
  EXPECT_NE(err, "");
  std::printf("negative control caught: %s\n", err.c_str());
  // And a planted conflict with no commit to lose to is caught too.
  Attempt ghost = xa;
  ghost.outcome = Attempt::kConflict;
  ghost.start_ts = c2.commit_ts;
  ghost.after_ts = c2.commit_ts + 5;
  EXPECT_NE(check_history({ghost}, {{0u, p0.seq}}, {{20, a}}, *f.w), "");
}

TEST(OldaTxn, BadSetupIsRefused) {
  Fixture f(false);
  std::unique_ptr<Olda> w;
  OldaOptions o;
  EXPECT_EQ(Olda::make(nullptr, f.engine, f.model, o, &w).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Olda::make(f.space, f.engine, f.model + 100, o, &w).code(), StatusCode::kInvalidArgument);
  Mlp wrong = test_model();
  wrong.layers.pop_back();  // 5 -> 128 only
  ModelId wid;
  ASSERT_TRUE(f.engine->load_model(wrong, &wid).ok());
  EXPECT_EQ(Olda::make(f.space, f.engine, wid, o, &w).code(), StatusCode::kInvalidArgument);
  o.max_attempts = 0;
  EXPECT_EQ(Olda::make(f.space, f.engine, f.model, o, &w).code(), StatusCode::kInvalidArgument);
  const GenConfig g = small_users(4);
  EXPECT_EQ(f.w->load(g, 2, 9, 1).code(), StatusCode::kInvalidArgument);
  if (!f.engine->gpu_available()) {
    o = OldaOptions{};
    o.device = Device::kGpu;
    o.batcher = false;
    EXPECT_FALSE(Olda::make(f.space, f.engine, f.model, o, &w).ok());
  }
}

}  // namespace
}  // namespace duet::compute::olda
