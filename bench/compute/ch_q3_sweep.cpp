// `duet bench ch --q3-sweep`: CH's Q3 by each of its three plans (src/compute/ch.hpp, Q3Plan) while
// the selectivity of its customer predicate varies (the seed's Fig. 3.7, READ vs SNAPSHOT). One
// freshly loaded database serves every point; each query is one transaction begun just before it
// and aborted after it, on one thread, with nothing else running or, with --q3-workers N, beside N
// OLTP worker threads that run the seed's (or TPC-C's) mix for the whole sweep. Every round runs
// every (selectivity, plan) point in turn, the plans' order rotating between rounds. Before a
// selectivity's timed queries, one untimed transaction runs every plan at one snapshot and they must
// give the same rows; beside workers every timed query must also pass the freshness check.
#include "bench/compute/ch_q3_sweep.hpp"
#include "bench/compute/ch_load.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/json.hpp"
#include "common/results.hpp"

namespace duet::bench {
namespace {

using namespace duet::compute;
using namespace duet::compute::ch;

// OLTP workers beside the sweep. Each thread cycles through its own pre-generated operations (the
// same for every run of one seed) until stop(), publishing its newest acknowledged NewOrder on the
// board for the queries' freshness check; with a pace (`rate` operations per second over all
// threads) each starts its i-th operation no earlier than i / (rate / n) s after it began, and a
// thread more than 0.1 s behind its schedule restarts it from now. The first failing operation
// stops its thread and is kept.
class Workers {
 public:
  Workers(Ch* ch, const Scale& scale, const Mix& mix, std::uint64_t ops, unsigned n, double rate)
      : ch_(ch), board_(n), counts_(new Count[n]), errors_(n), interval_s_(rate > 0 ? n / rate : 0) {
    work_.reserve(n);
    for (unsigned w = 0; w < n; ++w) work_.push_back(make_work(scale, mix, ops, w));
    for (unsigned w = 0; w < n; ++w) threads_.emplace_back([this, w] { loop(w); });
  }
  ~Workers() { stop(); }

  /// Stops and joins every thread (idempotent).
  void stop() {
    stop_.store(true);
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  /// Operations completed so far (committed, or NewOrders rolled back by their unused item).
  std::uint64_t completed() const { return sum(&Count::completed); }
  /// Runs so far, conflicted re-runs included.
  std::uint64_t runs() const { return sum(&Count::runs); }
  const AckBoard& board() const { return board_; }
  /// The first worker error, or "".
  std::string error() const {
    for (unsigned w = 0; w < work_.size(); ++w)
      if (counts_[w].failed.load()) return errors_[w];
    return {};
  }

 private:
  struct alignas(64) Count {
    std::atomic<std::uint64_t> completed{0}, runs{0};
    std::atomic<bool> failed{false};
  };
  std::uint64_t sum(std::atomic<std::uint64_t> Count::*field) const {
    std::uint64_t n = 0;
    for (unsigned w = 0; w < work_.size(); ++w) n += (counts_[w].*field).load(std::memory_order_relaxed);
    return n;
  }
  void loop(unsigned w) {
    std::uint64_t rng = w + 1;
    Count& c = counts_[w];
    double due = now_s();  // when the next operation may start, paced
    for (std::size_t i = 0; !stop_.load(std::memory_order_relaxed); i = (i + 1) % work_[w].size()) {
      if (interval_s_ > 0) {
        const double now = now_s();
        if (due > now) std::this_thread::sleep_for(std::chrono::duration<double>(due - now));
        else if (now - due > 0.1) due = now;
        due += interval_s_;
      }
      const Op& op = work_[w][i];
      OpResult r;
      if (Status s = ch_->run(op, &r, &rng); !s.ok()) {
        errors_[w] = "worker " + std::to_string(w) + ": " + s.to_string();
        c.failed.store(true);
        return;
      }
      c.runs.fetch_add(r.attempts, std::memory_order_relaxed);
      c.completed.fetch_add(r.committed || r.rolled_back ? 1 : 0, std::memory_order_relaxed);
      if (op.kind == Kind::kNewOrder && r.committed) board_.publish(w, Ack{r.commit_ts, op.w, op.d, r.o_id});
    }
  }

  Ch* ch_;
  AckBoard board_;
  std::unique_ptr<Count[]> counts_;
  std::vector<std::string> errors_;
  std::vector<std::vector<Op>> work_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  const double interval_s_;  // seconds between one thread's operations; 0: unpaced
};

// Runs every plan of `plans` in one transaction (one snapshot) at filter `f`: Ok when all give the
// same rows, else why not.
Status plans_agree(TxnSpace* space, Ch* ch, Context* ctx, const StateFilter& f, const std::vector<Q3Plan>& plans,
                   QueryScratch* scratch) {
  Txn t;
  if (Status s = space->begin(&t); !s.ok()) return s;
  std::vector<Q3Row> first;
  for (std::size_t k = 0; k < plans.size(); ++k) {
    QueryResult r;
    if (Status s = ch->q3(&t, ctx, &r, f, plans[k], scratch); !s.ok())
      return Status(s.code(), std::string("Q3 ") + q3_plan_name(plans[k]) + ": " + s.message());
    if (k == 0) first = std::move(r.q3);
    else if (r.q3 != first)
      return Status::Internal(std::string("Q3 ") + q3_plan_name(plans[k]) + " gave other rows than " +
                              q3_plan_name(plans[0]) + " at one snapshot");
  }
  t.abort();
  return Status::Ok();
}

}  // namespace

int run_q3_sweep(const Q3Sweep& w) {
  std::shared_ptr<TxnSpace> space;
  std::unique_ptr<Ch> ch;
  TxnConfig tc;
  tc.snapshot_threads = w.snapshot_threads;
  std::printf("loading %u warehouses ...\n", w.scale.warehouses);
  std::fflush(stdout);
  double load_s = 0;
  if (Status s = load_ch(w.scale, tc, w.load_threads, &space, &ch, &load_s); !s.ok())
    return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  std::unique_ptr<Context> ctx;
  if (Status s = w.engine->context(Device::kCpu, &ctx); !s.ok())
    return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  Mix mix;
  if (w.worker_mix == "seed") mix = Mix::seed();
  else if (w.worker_mix == "tpcc") mix = Mix::tpcc();
  else return std::fprintf(stderr, "duet bench ch: unknown worker mix %s\n", w.worker_mix.c_str()), 2;
  if (w.workers && w.worker_ops == 0) return std::fprintf(stderr, "duet bench ch: workers need operations\n"), 2;
  std::printf("loaded in %.1f s; Q3 sweep: %zu selectivities x %zu plans, %u queries per point per round, %u rounds",
              load_s, w.selectivities.size(), w.plans.size(), w.queries, w.rounds);
  if (w.workers) std::printf(", beside %u %s-mix workers", w.workers, w.worker_mix.c_str());
  if (w.workers && w.worker_rate > 0) std::printf(" paced at %.0f txn/s", w.worker_rate);
  std::printf("\n");
  std::fflush(stdout);

  // cells[point][plan]: per round, the queries' rate and latencies (ms), and the workers' rate.
  struct Cell {
    std::vector<double> qps, p50_ms, p90_ms, worker_tps;
    std::size_t rows = 0, rows_read = 0;
  };
  std::vector<std::vector<Cell>> cells(w.selectivities.size(), std::vector<Cell>(w.plans.size()));
  int rc = 0;
  std::uint64_t fresh_ok = 0;
  QueryScratch scratch;  // the query thread's buffers, kept from query to query
  std::unique_ptr<Workers> workers;
  if (w.workers) workers = std::make_unique<Workers>(ch.get(), w.scale, mix, w.worker_ops, w.workers, w.worker_rate);
  const double sweep_t0 = now_s();
  auto fail = [&](const std::string& why) {
    std::fprintf(stderr, "duet bench ch: %s\n", why.c_str());
    rc = 1;
  };
  for (unsigned round = 0; round < w.rounds && rc == 0; ++round) {
    for (std::size_t si = 0; si < w.selectivities.size() && rc == 0; ++si) {
      StateFilter f;
      if (Status s = StateFilter::of_selectivity(w.selectivities[si], &f); !s.ok())
        return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 2;
      if (Status s = plans_agree(space.get(), ch.get(), ctx.get(), f, w.plans, &scratch); !s.ok()) {
        fail("selectivity " + std::to_string(w.selectivities[si]) + ": " + s.to_string());
        break;
      }
      for (std::size_t k = 0; k < w.plans.size() && rc == 0; ++k) {
        const std::size_t pi = (k + round) % w.plans.size();
        const Q3Plan plan = w.plans[pi];
        Cell& c = cells[si][pi];
        std::vector<double> lat;
        const std::uint64_t done0 = workers ? workers->completed() : 0;
        const double t0 = now_s();
        for (unsigned q = 0; q < w.queries; ++q) {
          const std::vector<Ack> acks = workers ? workers->board().read() : std::vector<Ack>{};
          const double a = now_s();
          Txn t;
          QueryResult r;
          Status s = space->begin(&t);
          if (s.ok()) s = ch->q3(&t, ctx.get(), &r, f, plan, &scratch);
          lat.push_back((now_s() - a) * 1e3);
          if (s.ok()) s = Ch::check_fresh(&t, acks);
          t.abort();
          if (!s.ok()) {
            fail(std::string("Q3 ") + q3_plan_name(plan) + ": " + s.to_string());
            break;
          }
          fresh_ok += workers ? 1 : 0;
          c.rows = r.q3.size();
          c.rows_read = r.rows_read;
        }
        const double secs = now_s() - t0;
        c.qps.push_back(static_cast<double>(lat.size()) / secs);
        c.p50_ms.push_back(percentile(lat, 0.50));
        c.p90_ms.push_back(percentile(lat, 0.90));
        if (workers) c.worker_tps.push_back(static_cast<double>(workers->completed() - done0) / secs);
      }
      if (workers && !workers->error().empty()) fail(workers->error());
    }
  }
  double worker_tps = 0, worker_abort = 0;
  if (workers) {
    workers->stop();
    const double secs = now_s() - sweep_t0;
    const std::uint64_t done = workers->completed(), runs = workers->runs();
    worker_tps = static_cast<double>(done) / secs;
    worker_abort = runs ? static_cast<double>(runs - done) / static_cast<double>(runs) : 0;
    if (!workers->error().empty() && rc == 0) fail(workers->error());
    std::printf("workers: %.0f txn/s over the sweep (%.2f%% of runs conflicted); %llu queries fresh\n", worker_tps,
                100 * worker_abort, static_cast<unsigned long long>(fresh_ok));
  }

  std::printf("%-11s %-16s %9s %21s %9s %9s %7s %10s%s\n", "selectivity", "plan", "q/s", "[min, max]", "p50_ms",
              "p90_ms", "rows", "rows_read", workers ? "  worker_txn/s" : "");
  Json records = Json::array();
  for (std::size_t si = 0; si < w.selectivities.size(); ++si) {
    for (std::size_t pi = 0; pi < w.plans.size(); ++pi) {
      const Cell& c = cells[si][pi];
      if (c.qps.empty()) continue;
      const Summary qps = summarize(c.qps), p50 = summarize(c.p50_ms), p90 = summarize(c.p90_ms);
      std::printf("%-11g %-16s %9.2f [%9.2f, %9.2f] %9.2f %9.2f %7zu %10zu", w.selectivities[si],
                  q3_plan_name(w.plans[pi]), qps.median, qps.min, qps.max, p50.median, p90.median, c.rows, c.rows_read);
      if (!c.worker_tps.empty()) std::printf("  %12.0f", summarize(c.worker_tps).median);
      std::printf("\n");
      Json rec = Json::object();
      rec.set("selectivity", w.selectivities[si]);
      rec.set("plan", q3_plan_name(w.plans[pi]));
      rec.set("queries_per_s", summary_json(qps));
      rec.set("p50_ms", summary_json(p50));
      rec.set("p90_ms", summary_json(p90));
      rec.set("per_round_queries_per_s", Json::array_of(c.qps));
      rec.set("result_rows", c.rows);
      rec.set("rows_read", c.rows_read);
      if (!c.worker_tps.empty()) rec.set("worker_txn_per_s", summary_json(summarize(c.worker_tps)));
      records.push(std::move(rec));
    }
  }
  Json config = Json::object();
  config.set("warehouses", w.scale.warehouses);
  config.set("scale", w.scale_name);
  config.set("customers_per_district", w.scale.customers);
  config.set("orders_per_district", w.scale.orders);
  config.set("new_orders_per_district", w.scale.new_orders);
  config.set("seed", w.scale.seed);
  config.set("queries_per_point_per_round", w.queries);
  config.set("rounds", w.rounds);
  config.set("snapshot_threads", w.snapshot_threads);
  config.set("load_threads", w.load_threads);
  config.set("load_s", load_s);
  config.set("engine", w.engine->describe());
  config.set("quick", w.quick);
  config.set("workers", w.workers);
  if (w.workers) {
    config.set("worker_mix", w.worker_mix);
    config.set("worker_ops_per_thread", w.worker_ops);
    config.set("worker_pace_txn_per_s", w.worker_rate);
    config.set("worker_txn_per_s", worker_tps);
    config.set("worker_abort_rate", worker_abort);
    config.set("freshness_verified", fresh_ok);
  }
  config.set("workload", std::string("Q3 on one thread over a freshly loaded database, ") +
                             (w.workers ? "beside " + std::to_string(w.workers) + " OLTP worker threads running the " +
                                              w.worker_mix + " mix (each cycling through its pre-generated operations" +
                                              (w.worker_rate > 0 ? ", paced together at worker_pace_txn_per_s" : "") + ")"
                                        : std::string("with no OLTP workers")) +
                             "; each query one transaction; selectivity s selects the first round(s * 676) of the 676 "
                             "uniform c_state values; before each selectivity's queries every plan ran once, untimed, "
                             "at one snapshot and gave the same rows");
  config.set("timing", "q/s = queries of one point in one round / their wall time (begin to abort, with the freshness "
                       "check when workers run); p50/p90 latency from begin to the query's end, over that round's "
                       "queries; worker_txn/s = operations the workers completed during that point / its wall time; "
                       "medians and [min, max] over rounds");
  const Json doc = result_document("ch-q3-sweep", "cpu", commit_id(DUET_SOURCE_DIR), utc_now(), config, records);
  std::string err;
  if (!write_result_file(w.out, doc, &err)) {
    std::fprintf(stderr, "duet bench ch: %s\n", err.c_str());
    rc = 1;
  }
  std::printf("results: %s\n", w.out.c_str());
  return rc;
}

}  // namespace duet::bench
