// `duet bench ch --q3-sweep`: CH's Q3 by each of its three plans (src/compute/ch.hpp, Q3Plan) while
// the selectivity of its customer predicate varies (the seed's Fig. 3.7, READ vs SNAPSHOT). One
// freshly loaded database serves every point; each query is one transaction begun just before it
// and aborted after it, on one thread, with nothing else running. Every round runs every
// (selectivity, plan) point in turn, the plans' order rotating between rounds; the first queries of
// one selectivity's plans must give the same rows, or the run fails.
#include "bench/compute/ch_q3_sweep.hpp"
#include "bench/compute/ch_load.hpp"

#include <cstdio>

#include "common/json.hpp"
#include "common/results.hpp"

namespace duet::bench {
namespace {

using namespace duet::compute;
using namespace duet::compute::ch;

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
  std::printf("loaded in %.1f s; Q3 sweep: %zu selectivities x %zu plans, %u queries per point per round, %u rounds\n",
              load_s, w.selectivities.size(), w.plans.size(), w.queries, w.rounds);

  // samples[point][plan]: per round, the queries' latencies (ms) and their rate.
  struct Cell {
    std::vector<double> qps, p50_ms, p90_ms;
    std::size_t rows = 0, rows_read = 0;
  };
  std::vector<std::vector<Cell>> cells(w.selectivities.size(), std::vector<Cell>(w.plans.size()));
  int rc = 0;
  QueryScratch scratch;  // the query thread's buffers, kept from query to query
  for (unsigned round = 0; round < w.rounds && rc == 0; ++round) {
    for (std::size_t si = 0; si < w.selectivities.size() && rc == 0; ++si) {
      StateFilter f;
      if (Status s = StateFilter::of_selectivity(w.selectivities[si], &f); !s.ok())
        return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 2;
      std::vector<Q3Row> expect;
      bool have_expect = false;
      for (std::size_t k = 0; k < w.plans.size(); ++k) {
        const std::size_t pi = (k + round) % w.plans.size();
        const Q3Plan plan = w.plans[pi];
        std::vector<double> lat;
        const double t0 = now_s();
        for (unsigned q = 0; q < w.queries; ++q) {
          const double a = now_s();
          Txn t;
          QueryResult r;
          Status s = space->begin(&t);
          if (s.ok()) s = ch->q3(&t, ctx.get(), &r, f, plan, &scratch);
          t.abort();
          lat.push_back((now_s() - a) * 1e3);
          if (!s.ok()) {
            std::fprintf(stderr, "duet bench ch: Q3 %s: %s\n", q3_plan_name(plan), s.to_string().c_str());
            rc = 1;
            break;
          }
          cells[si][pi].rows = r.q3.size();
          cells[si][pi].rows_read = r.rows_read;
          if (q > 0) continue;
          // The plans read one unchanging database: all must give the same rows.
          if (!have_expect) expect = r.q3, have_expect = true;
          else if (expect != r.q3) rc = 1;
          if (rc) std::fprintf(stderr, "duet bench ch: Q3 %s gave other rows at selectivity %g\n", q3_plan_name(plan),
                               w.selectivities[si]);
        }
        const double secs = now_s() - t0;
        Cell& c = cells[si][pi];
        c.qps.push_back(static_cast<double>(lat.size()) / secs);
        c.p50_ms.push_back(percentile(lat, 0.50));
        c.p90_ms.push_back(percentile(lat, 0.90));
      }
    }
  }

  std::printf("%-11s %-16s %9s %21s %9s %9s %7s %10s\n", "selectivity", "plan", "q/s", "[min, max]", "p50_ms", "p90_ms",
              "rows", "rows_read");
  Json records = Json::array();
  for (std::size_t si = 0; si < w.selectivities.size(); ++si) {
    for (std::size_t pi = 0; pi < w.plans.size(); ++pi) {
      const Cell& c = cells[si][pi];
      if (c.qps.empty()) continue;
      const Summary qps = summarize(c.qps), p50 = summarize(c.p50_ms), p90 = summarize(c.p90_ms);
      std::printf("%-11g %-16s %9.2f [%9.2f, %9.2f] %9.2f %9.2f %7zu %10zu\n", w.selectivities[si],
                  q3_plan_name(w.plans[pi]), qps.median, qps.min, qps.max, p50.median, p90.median, c.rows, c.rows_read);
      Json rec = Json::object();
      rec.set("selectivity", w.selectivities[si]);
      rec.set("plan", q3_plan_name(w.plans[pi]));
      rec.set("queries_per_s", summary_json(qps));
      rec.set("p50_ms", summary_json(p50));
      rec.set("p90_ms", summary_json(p90));
      rec.set("per_round_queries_per_s", Json::array_of(c.qps));
      rec.set("result_rows", c.rows);
      rec.set("rows_read", c.rows_read);
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
  config.set("workload", "Q3 alone on one thread over a freshly loaded database (no OLTP workers); each query one "
                         "transaction; selectivity s selects the first round(s * 676) of the 676 uniform c_state values");
  config.set("timing", "q/s = queries of one point in one round / their wall time (begin to abort); p50/p90 over that "
                       "round's queries; medians and [min, max] over rounds");
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
