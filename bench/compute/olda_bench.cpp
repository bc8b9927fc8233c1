// `duet bench olda`: SnapKV's OLDA fraud microbenchmark (dissertation 905-1005, Figs. 3.3 and
// 3.4; docs/compute.md, "OLDA"). Each payment is one transaction of a txn keyspace (BEGIN,
// SNAPSHOT of the profile and the last payment, features, inference, WRITE of payment and
// profile, COMMIT only when the model passes it; a write conflict re-runs it), run by --threads
// threads over the same pre-generated payments for every system and mode:
//
//   systems   cpu: inference on the CPU twin; gpu: on the GPU (skipped without one)
//   modes     per_txn: each transaction infers in its own context (a stream of its own on the GPU,
//             one launch per transaction); batcher: every transaction goes through one Batcher,
//             so concurrent transactions share launches
//
// Part 1 (Fig. 3.3) sweeps the number of users; each run starts from a freshly loaded keyspace.
// Part 2 (Fig. 3.4) snapshots 0/100/1,000/10,000 older payments besides the last, over
// --extra-users users loaded once with enough history. Medians over --reps runs with [min, max];
// a short table, and JSON in bench/results/compute-olda/.
//
// Flags: --users 10,100,1000,10^4,10^5  --threads 8  --payments 2^18  --reps 3
//        --systems cpu,gpu  --modes per_txn,batcher  --extra 0,100,1000,10000
//        --extra-users 1000  --history 4  --inflight 2  --seed 1  --out FILE  --quick
// (--extra none skips part 2; --export DIR writes the work for the peer, olda_fedb.py, and stops.)
#include "bench/compute/olda_bench.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/json.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "compute/olda.hpp"
#include "gpu/device.hpp"

namespace duet::bench {
namespace {

using namespace duet::compute;
using namespace duet::compute::olda;

struct Options {
  std::vector<std::uint64_t> users{10, 100, 1000, 10000, 100000};
  unsigned threads = 8;
  /// Payments per run. 2^15 lasted about 0.1 s at 16 threads and measured the threads' start
  /// and the fresh keyspace's first growth: 213-302 k payments/s where 2^18 gives 1.03 M
  /// (bench/results/compute-olda/h200-cpu-profile/7-run-length/).
  std::uint64_t payments = 1 << 18;
  unsigned reps = 3;
  std::vector<std::string> systems{"cpu", "gpu"};
  std::vector<std::string> modes{"per_txn", "batcher"};
  std::vector<std::uint64_t> extra{0, 100, 1000, 10000};
  std::uint64_t extra_users = 1000;
  std::uint64_t history = 4;
  unsigned inflight = 2;
  std::uint64_t seed = 1;
  std::string out;
  std::string export_dir;  // write the model, users and payments for the peer, then stop
  bool quick = false;
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// One run's figures.
struct Run {
  double secs = 0, load_s = 0;
  double tps = 0, p50 = 0, p99 = 0;
  double retries_per_txn = 0, retried_fraction = 0, decline_rate = 0, rule_fraud_rate = 0, agreement = 0;
  double launches_per_txn = 0, rows_per_launch = 0;
  double lock_waits_per_txn = 0, collector_lock_waits_per_txn = 0;  ///< TxnStats::lock_waits over the run
  double lock_wait_backoffs_per_txn = 0;
  std::uint64_t flagged_committed = 0, failed = 0;
  std::string error;
};

Run run_payments(Olda& w, TxnSpace& space, const std::vector<Payment>& pays, unsigned threads) {
  Run r;
  std::atomic<std::size_t> next{0};
  std::vector<std::vector<double>> lat(threads);
  std::atomic<std::uint64_t> attempts{0}, retried{0}, declined{0}, rule{0}, agree{0}, flagged_committed{0}, failed{0};
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::string err;
  std::atomic<bool> have_err{false};
  const TxnStats s0 = space.stats();
  const std::uint64_t l0 = w.launches(), i0 = w.inferences(), c0 = s0.commits;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      lat[t].reserve(pays.size() / threads + 16);
      ++ready;
      while (!go.load()) std::this_thread::yield();
      for (;;) {
        const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
        if (i >= pays.size()) return;
        PayResult pr;
        const double t0 = now_s();
        const Status s = w.pay(pays[i], &pr);
        lat[t].push_back((now_s() - t0) * 1e6);
        if (!s.ok()) {
          if (!have_err.exchange(true)) err = s.to_string();
          ++failed;
          continue;
        }
        attempts += pr.attempts;
        retried += pr.attempts > 1;
        declined += !pr.committed;
        rule += pr.rule_fraud;
        agree += pr.rule_fraud == pr.model_fraud;
        flagged_committed += pr.committed && pr.model_fraud;
      }
    });
  while (ready.load() < threads) std::this_thread::yield();
  const double t0 = now_s();
  go = true;
  for (auto& th : ts) th.join();
  r.secs = now_s() - t0;
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const double n = static_cast<double>(pays.size());
  r.tps = n / r.secs;
  r.p50 = all.empty() ? 0 : all[all.size() / 2];
  r.p99 = all.empty() ? 0 : all[std::min(all.size() - 1, all.size() * 99 / 100)];
  r.retries_per_txn = (attempts.load() - (n - failed.load())) / n;
  r.retried_fraction = retried.load() / n;
  r.decline_rate = declined.load() / n;
  r.rule_fraud_rate = rule.load() / n;
  r.agreement = agree.load() / n;
  const double launches = static_cast<double>(w.launches() - l0), inf = static_cast<double>(w.inferences() - i0);
  r.launches_per_txn = launches / n;
  r.rows_per_launch = launches > 0 ? inf / launches : 0;
  const TxnStats s1 = space.stats();
  r.lock_waits_per_txn = static_cast<double>(s1.lock_waits - s0.lock_waits) / n;
  r.collector_lock_waits_per_txn = static_cast<double>(s1.lock_waits_collector - s0.lock_waits_collector) / n;
  r.lock_wait_backoffs_per_txn = static_cast<double>(s1.lock_wait_backoffs - s0.lock_wait_backoffs) / n;
  r.flagged_committed = flagged_committed.load();
  r.failed = failed.load();
  if (r.failed) r.error = err;
  // Every commit is one accepted payment: flagged payments never committed.
  const std::uint64_t commits = space.stats().commits - c0;
  if (commits != static_cast<std::uint64_t>(n) - declined.load() - failed.load() && r.error.empty())
    r.error = "commits (" + std::to_string(commits) + ") differ from accepted payments";
  return r;
}

std::shared_ptr<TxnSpace> fresh_space() {
  std::shared_ptr<TxnSpace> s;
  TxnConfig c;
  if (!TxnSpace::open("olda", c, &s).ok()) return nullptr;
  return s;
}

bool parse_list(const std::string& v, std::vector<std::uint64_t>* out, std::string* err, const std::string& flag, bool zero_ok) {
  out->clear();
  for (const std::string& p : split_list(v)) {
    auto c = parse_count(p);
    if (!c || (!zero_ok && *c == 0)) {
      *err = flag + ": a list of " + (zero_ok ? "counts" : "positive counts");
      return false;
    }
    out->push_back(*c);
  }
  if (out->empty()) {
    *err = flag + ": an empty list";
    return false;
  }
  return true;
}

Json summary_json(const std::vector<Run>& runs, Json rec) {
  auto med = [&](auto f) {
    std::vector<double> v;
    for (const Run& r : runs) v.push_back(f(r));
    return summarize(v);
  };
  const auto tps = med([](const Run& r) { return r.tps; });
  const auto p50 = med([](const Run& r) { return r.p50; }), p99 = med([](const Run& r) { return r.p99; });
  rec.set("ops_per_s", tps.median);
  rec.set("ops_per_s_min", tps.min);
  rec.set("ops_per_s_max", tps.max);
  rec.set("p50_us", p50.median);
  rec.set("p50_us_min", p50.min);
  rec.set("p50_us_max", p50.max);
  rec.set("p99_us", p99.median);
  rec.set("p99_us_min", p99.min);
  rec.set("p99_us_max", p99.max);
  rec.set("retries_per_txn", med([](const Run& r) { return r.retries_per_txn; }).median);
  rec.set("retried_fraction", med([](const Run& r) { return r.retried_fraction; }).median);
  rec.set("decline_rate", med([](const Run& r) { return r.decline_rate; }).median);
  rec.set("rule_fraud_rate", med([](const Run& r) { return r.rule_fraud_rate; }).median);
  rec.set("model_rule_agreement", med([](const Run& r) { return r.agreement; }).median);
  rec.set("launches_per_txn", med([](const Run& r) { return r.launches_per_txn; }).median);
  rec.set("rows_per_launch", med([](const Run& r) { return r.rows_per_launch; }).median);
  rec.set("lock_waits_per_txn", med([](const Run& r) { return r.lock_waits_per_txn; }).median);
  rec.set("collector_lock_waits_per_txn", med([](const Run& r) { return r.collector_lock_waits_per_txn; }).median);
  rec.set("lock_wait_backoffs_per_txn", med([](const Run& r) { return r.lock_wait_backoffs_per_txn; }).median);
  rec.set("load_s", med([](const Run& r) { return r.load_s; }).median);
  rec.set("reps", static_cast<std::uint64_t>(runs.size()));
  return rec;
}

void print_row(const char* part, const std::string& sys, const std::string& mode, std::uint64_t users, std::uint64_t extra,
               const std::vector<Run>& runs) {
  std::vector<double> tps, p50, p99, retry, lpt;
  for (const Run& r : runs) {
    tps.push_back(r.tps);
    p50.push_back(r.p50);
    p99.push_back(r.p99);
    retry.push_back(r.retried_fraction);
    lpt.push_back(r.launches_per_txn);
  }
  const auto t = summarize(tps);
  std::printf("%-6s %-4s %-8s %7llu %6llu %11.0f [%9.0f, %9.0f] %9.1f %9.1f %8.4f %8.3f %8.4f\n", part, sys.c_str(),
              mode.c_str(), static_cast<unsigned long long>(users), static_cast<unsigned long long>(extra), t.median, t.min,
              t.max, summarize(p50).median, summarize(p99).median, summarize(retry).median, summarize(lpt).median,
              runs.empty() ? 0.0 : runs.back().decline_rate);
  std::fflush(stdout);
}

// --export DIR: the trained model, the users' homes and histories and the payments of part 1's
// first user count, as text, so that the FeDB-style peer (bench/compute/olda_fedb.py) runs the
// same model on the same pre-generated work.
//   model.txt     per layer: "in out act" (act 0 none, 1 ReLU, 2 sigmoid), then W row-major, then b
//   users.txt     per user: "user home lat lon lat lon ..." (history, oldest first)
//   payments.txt  per payment: "user lat lon id"
bool export_work(const Options& o, const Mlp& m) {
  const std::string d = o.export_dir;
  std::FILE* f = std::fopen((d + "/model.txt").c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "duet bench olda: cannot write %s/model.txt\n", d.c_str());
    return false;
  }
  for (const Dense& l : m.layers) {
    std::fprintf(f, "%u %u %d\n", l.in, l.out, static_cast<int>(l.act));
    for (std::size_t i = 0; i < l.w.size(); ++i) std::fprintf(f, "%.9g%c", l.w[i], i + 1 == l.w.size() ? '\n' : ' ');
    for (std::size_t i = 0; i < l.b.size(); ++i) std::fprintf(f, "%.9g%c", l.b[i], i + 1 == l.b.size() ? '\n' : ' ');
  }
  std::fclose(f);
  GenConfig g;
  g.users = static_cast<std::uint32_t>(o.users.front());
  g.history = static_cast<std::uint32_t>(o.history);
  g.seed = o.seed;
  f = std::fopen((d + "/users.txt").c_str(), "w");
  if (!f) return false;
  for (std::uint32_t u = 0; u < g.users; ++u) {
    std::fprintf(f, "%u %u", u, home_of(g, u));
    for (const Point& p : history_of(g, u)) std::fprintf(f, " %.17g %.17g", p.lat, p.lon);
    std::fprintf(f, "\n");
  }
  std::fclose(f);
  f = std::fopen((d + "/payments.txt").c_str(), "w");
  if (!f) return false;
  for (const Payment& p : make_payments(g, o.payments, o.users.front()))
    std::fprintf(f, "%u %.17g %.17g %llu\n", p.user, p.lat, p.lon, static_cast<unsigned long long>(p.id));
  std::fclose(f);
  std::printf("exported model, %u users and %llu payments to %s\n", g.users, static_cast<unsigned long long>(o.payments),
              d.c_str());
  return true;
}

}  // namespace

int run_olda_bench(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string err;
  const bool ok = scan_flags(argc, argv, &help, &o.quick, &err, [&](const std::string& f, const std::string& v) {
    auto count = [&](std::uint64_t* x, bool zero_ok = false) {
      auto c = parse_count(v);
      if (!c || (!zero_ok && *c == 0)) {
        err = f + ": a positive count";
        return false;
      }
      *x = *c;
      return true;
    };
    std::uint64_t x = 0;
    if (f == "--users") return parse_list(v, &o.users, &err, f, false);
    if (f == "--extra" && v == "none") {  // no Fig. 3.4 part
      o.extra.clear();
      return true;
    }
    if (f == "--extra") return parse_list(v, &o.extra, &err, f, true);
    if (f == "--payments") return count(&o.payments);
    if (f == "--extra-users") return count(&o.extra_users);
    if (f == "--history") return count(&o.history);
    if (f == "--seed") return count(&o.seed, true);
    if (f == "--threads" || f == "--reps" || f == "--inflight") {
      if (!count(&x)) return false;
      if (x > 1024) {
        err = f + ": at most 1024";
        return false;
      }
      (f == "--threads" ? o.threads : f == "--reps" ? o.reps : o.inflight) = static_cast<unsigned>(x);
      return true;
    }
    if (f == "--systems" || f == "--modes") {
      auto& list = f == "--systems" ? o.systems : o.modes;
      list = split_list(v);
      for (const std::string& s : list)
        if (f == "--systems" ? (s != "cpu" && s != "gpu") : (s != "per_txn" && s != "batcher")) {
          err = f + ": unknown '" + s + "'";
          return false;
        }
      if (list.empty()) err = f + ": an empty list";
      return !list.empty();
    }
    if (f == "--out") {
      o.out = v;
      return true;
    }
    if (f == "--export") {
      o.export_dir = v;
      return true;
    }
    err = "unknown flag " + f;
    return false;
  });
  if (help) {
    std::printf("duet bench olda [--users 10,100,1000,10^4,10^5] [--threads 8] [--payments 2^18] [--reps 3]\n"
                "                [--systems cpu,gpu] [--modes per_txn,batcher] [--extra 0,100,1000,10000]\n"
                "                [--extra-users 1000] [--history 4] [--inflight 2] [--seed 1] [--out file.json] [--quick]\n"
                "The OLDA fraud microbenchmark (docs/compute.md, \"OLDA\"): one transaction per payment.\n");
    return 0;
  }
  if (!ok) {
    std::fprintf(stderr, "duet bench olda: %s\n", err.c_str());
    return 2;
  }
  if (o.quick) {
    o.users = {10, 1000};
    o.payments = std::min<std::uint64_t>(o.payments, 1 << 12);
    o.reps = std::min(o.reps, 2u);
    o.extra = {0, 100};
    o.extra_users = std::min<std::uint64_t>(o.extra_users, 100);
  }
  for (std::uint64_t u : o.users)
    if (u > (1u << 31)) {
      std::fprintf(stderr, "duet bench olda: --users: at most 2^31\n");
      return 2;
    }

  // The model, trained by the committed recipe.
  const double tt0 = now_s();
  TrainConfig tc;
  tc.data.seed = o.seed;
  Mlp model;
  TrainReport tr;
  if (Status s = train(tc, &model, &tr); !s.ok()) {
    std::fprintf(stderr, "duet bench olda: training: %s\n", s.to_string().c_str());
    return 1;
  }
  const double train_s = now_s() - tt0;
  std::printf("model 5-128-2: trained in %.2f s, held-out accuracy %.4f (fraud rate %.3f, recall %.4f, legit passed %.4f)\n",
              train_s, tr.test_accuracy, tr.test_fraud_rate, tr.test_fraud_recall, tr.test_legit_pass);

  if (!o.export_dir.empty()) return export_work(o, model) ? 0 : 1;

  std::shared_ptr<Engine> engine;
  if (Status s = Engine::open(EngineConfig{}, &engine); !s.ok()) {
    std::fprintf(stderr, "duet bench olda: engine: %s\n", s.to_string().c_str());
    return 1;
  }
  ModelId mid = 0;
  if (Status s = engine->load_model(model, &mid); !s.ok()) {
    std::fprintf(stderr, "duet bench olda: model: %s\n", s.to_string().c_str());
    return 1;
  }
  const bool gpu = engine->gpu_available();
  const std::string date = utc_now();
  const std::string device = gpu ? duet::gpu::device().name : "cpu";
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  std::printf("engine: %s; %u payment threads, %llu payments per run, %u reps\n", engine->describe().c_str(), o.threads,
              static_cast<unsigned long long>(o.payments), o.reps);
  std::printf("%-6s %-4s %-8s %7s %6s %11s %21s %9s %9s %8s %8s %8s\n", "part", "sys", "mode", "users", "extra", "txn/s",
              "[min, max]", "p50_us", "p99_us", "retried", "launch/t", "declined");

  Json records = Json::array();
  const std::string path = o.out.empty() ? "bench/results/compute-olda/olda-" + std::string(gpu ? "gpu" : "cpu") + "-" +
                                               utc_now(true) + ".json"
                                         : o.out;
  // The file is rewritten after every record, so a run cut short keeps what it measured.
  auto flush = [&]() {
    Json config = Json::object();
    Json ul = Json::array(), el = Json::array(), sl = Json::array(), ml = Json::array();
    for (auto u : o.users) ul.push(u);
    for (auto e : o.extra) el.push(e);
    for (auto& s : o.systems) sl.push(s);
    for (auto& m : o.modes) ml.push(m);
    config.set("users", std::move(ul));
    config.set("extra", std::move(el));
    config.set("systems", std::move(sl));
    config.set("modes", std::move(ml));
    config.set("threads", o.threads);
    config.set("payments_per_run", o.payments);
    config.set("reps", o.reps);
    config.set("extra_users", o.extra_users);
    config.set("history", o.history);
    config.set("inflight", o.inflight);
    config.set("seed", o.seed);
    config.set("quick", o.quick);
    config.set("engine", engine->describe());
    config.set("load_threads", hw);
    {
      const GenConfig g;
      config.set("sigma_deg", g.sigma_deg);
      config.set("history_half_width_deg", g.history_half_width_deg);
      config.set("foreign_rate", g.foreign_rate);
    }
    Json mj = Json::object();
    mj.set("layers", "5 -> 128 ReLU -> 2 sigmoid, FP32");
    mj.set("recipe", "src/compute/olda.cpp train(), TrainConfig defaults (seeded SGD with momentum, BCE)");
    mj.set("train_s", train_s);
    mj.set("train_accuracy", tr.train_accuracy);
    mj.set("test_accuracy", tr.test_accuracy);
    mj.set("test_fraud_rate", tr.test_fraud_rate);
    mj.set("test_fraud_recall", tr.test_fraud_recall);
    mj.set("test_legit_pass", tr.test_legit_pass);
    config.set("model", std::move(mj));
    config.set("timing", "txn/s = payments / wall time of the run (all threads); latency per payment from its first BEGIN "
                         "to its commit or decline, retries included; retried = fraction of payments that ran more than once; "
                         "launch/t = inference launches per payment");
    const Json doc = result_document("olda", device, commit_id(DUET_SOURCE_DIR), date, config, records);
    if (!write_result_file(path, doc, &err)) {
      std::fprintf(stderr, "duet bench olda: %s\n", err.c_str());
      return false;
    }
    return true;
  };
  int rc = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "duet bench olda: %s\n", what.c_str());
    rc = 1;
  };
  auto make = [&](std::shared_ptr<TxnSpace> sp, const std::string& sys, const std::string& mode, std::uint32_t extra,
                  std::unique_ptr<Olda>* w) {
    OldaOptions oo;
    oo.device = sys == "gpu" ? Device::kGpu : Device::kCpu;
    oo.batcher = mode == "batcher";
    oo.inflight = o.inflight;
    oo.extra = extra;
    return Olda::make(std::move(sp), engine, mid, oo, w);
  };
  auto check_runs = [&](const std::vector<Run>& runs) {
    for (const Run& r : runs) {
      if (!r.error.empty()) fail(r.error);
      if (r.flagged_committed) fail("a flagged payment committed");
    }
  };

  // Part 1: users (Fig. 3.3).
  for (std::uint64_t users : o.users) {
    GenConfig g;
    g.users = static_cast<std::uint32_t>(users);
    g.history = static_cast<std::uint32_t>(o.history);
    g.seed = o.seed;
    const std::vector<Payment> pays = make_payments(g, o.payments, users);
    for (const std::string& sys : o.systems) {
      if (sys == "gpu" && !gpu) continue;
      for (const std::string& mode : o.modes) {
        std::vector<Run> runs;
        for (unsigned rep = 0; rep < o.reps; ++rep) {
          auto sp = fresh_space();
          std::unique_ptr<Olda> w;
          if (!sp) return fail("keyspace"), 1;
          if (Status s = make(sp, sys, mode, 0, &w); !s.ok()) return fail(s.to_string()), 1;
          const double l0 = now_s();
          if (Status s = w->load(g, 0, g.users, hw); !s.ok()) return fail(s.to_string()), 1;
          const double load_s = now_s() - l0;
          runs.push_back(run_payments(*w, *sp, pays, o.threads));
          runs.back().load_s = load_s;
        }
        check_runs(runs);
        print_row("users", sys, mode, users, 0, runs);
        Json rec = Json::object();
        rec.set("name", "olda_users");
        rec.set("system", "duet-" + sys);
        rec.set("workload", "OLDA: one transaction per payment, profile and last payment snapshotted");
        rec.set("op", mode);
        rec.set("users", users);
        rec.set("extra", static_cast<std::uint64_t>(0));
        rec.set("threads", o.threads);
        rec.set("payments", o.payments);
        records.push(summary_json(runs, std::move(rec)));
        if (!flush()) return 1;
      }
    }
  }

  // Part 2: older payments snapshotted (Fig. 3.4).
  if (!o.extra.empty() && o.extra_users > 0) {
    GenConfig g;
    g.users = static_cast<std::uint32_t>(o.extra_users);
    g.history = static_cast<std::uint32_t>(*std::max_element(o.extra.begin(), o.extra.end()) + 1);
    g.seed = o.seed;
    const std::vector<Payment> all = make_payments(g, o.payments, 1u << 30);
    // One keyspace, loaded once, serves every system and mode (later runs see the payments
    // earlier ones appended; the snapshot's size is set by its limit, not by them).
    auto sp = fresh_space();
    if (!sp) return fail("keyspace"), 1;
    double load_s = 0;
    {
      std::unique_ptr<Olda> w;
      if (Status s = make(sp, "cpu", "per_txn", 0, &w); !s.ok()) return fail(s.to_string()), 1;
      const double l0 = now_s();
      if (Status s = w->load(g, 0, g.users, hw); !s.ok()) return fail(s.to_string()), 1;
      load_s = now_s() - l0;
      std::printf("extra: %u users with %u payments each loaded in %.1f s\n", g.users, g.history, load_s);
    }
    for (const std::string& sys : o.systems) {
      if (sys == "gpu" && !gpu) continue;
      for (const std::string& mode : o.modes)
        for (std::uint64_t extra : o.extra) {
          // Fewer payments where each snapshots many rows: payments * 100 / extra, at least 1,024.
          const std::size_t n = std::min<std::size_t>(
              all.size(), std::max<std::size_t>(1024, o.payments * 100 / std::max<std::uint64_t>(100, extra)));
          const std::vector<Payment> pays(all.begin(), all.begin() + n);
          std::unique_ptr<Olda> w;
          if (Status s = make(sp, sys, mode, static_cast<std::uint32_t>(extra), &w); !s.ok()) return fail(s.to_string()), 1;
          std::vector<Run> runs;
          for (unsigned rep = 0; rep < o.reps; ++rep) {
            runs.push_back(run_payments(*w, *sp, pays, o.threads));
            runs.back().load_s = load_s;
          }
          check_runs(runs);
          print_row("extra", sys, mode, g.users, extra, runs);
          Json rec = Json::object();
          rec.set("name", "olda_snapshot_extra");
          rec.set("system", "duet-" + sys);
          rec.set("workload", "OLDA with older payments snapshotted besides the last (Fig. 3.4); keyspace loaded once");
          rec.set("op", mode);
          rec.set("users", o.extra_users);
          rec.set("extra", extra);
          rec.set("history_at_load", static_cast<std::uint64_t>(g.history));
          rec.set("threads", o.threads);
          rec.set("payments", static_cast<std::uint64_t>(n));
          records.push(summary_json(runs, std::move(rec)));
        if (!flush()) return 1;
        }
    }
  }

  if (!flush()) return 1;
  std::printf("wrote %s\n", path.c_str());
  return rc;
}

}  // namespace duet::bench
