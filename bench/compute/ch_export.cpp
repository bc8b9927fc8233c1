// `duet bench ch --export DIR`: one freshly loaded CH database copied out for a peer that queries
// a copy (bench/compute/ch_duckdb.py, DuckDB), with Duet's own Q1, Q3 and Q6 on the same snapshot:
// their results (the peer must match them) and their times. The copy is what the queries read:
// order_line, customer, orders and new_order as CSV with the columns they use.
#include "bench/compute/ch_export.hpp"
#include "bench/compute/ch_load.hpp"

#include <cstdio>
#include <filesystem>
#include <functional>

#include "common/json.hpp"
#include "common/results.hpp"

namespace duet::bench {
namespace {

using namespace duet::compute;
using namespace duet::compute::ch;

// Writes `cols` of table `t` (integer columns, or 2-byte kBytes written as text) to path as CSV.
bool write_csv(const Table& t, const std::vector<std::string>& cols, const std::string& path, std::string* err) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return *err = "cannot write " + path, false;
  std::vector<const Column*> cs;
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const Column* c = t.get(cols[i]);
    if (!c) return std::fclose(f), *err = "no column " + cols[i], false;
    cs.push_back(c);
    std::fprintf(f, "%s%s", i ? "," : "", cols[i].c_str());
  }
  std::fputc('\n', f);
  for (std::size_t r = 0; r < t.rows(); ++r) {
    for (std::size_t i = 0; i < cs.size(); ++i) {
      if (i) std::fputc(',', f);
      if (cs[i]->type() == Type::kBytes) {
        const std::string_view b = cs[i]->bytes_at(r);
        std::fwrite(b.data(), 1, b.substr(0, b.find('\0')).size(), f);
      } else {
        std::fprintf(f, "%lld", static_cast<long long>(cs[i]->i64()[r]));
      }
    }
    std::fputc('\n', f);
  }
  const bool ok = std::fclose(f) == 0;
  if (!ok) *err = "write failed: " + path;
  return ok;
}

Json times_json(const std::vector<double>& ms) {
  Json j = summary_json(summarize(ms));
  j.set("all", Json::array_of(ms));
  return j;
}

Json q3_json(const std::vector<Q3Row>& rows) {
  Json a = Json::array();
  for (const Q3Row& r : rows) {
    Json x = Json::array();
    x.push(r.o_id);
    x.push(r.w_id);
    x.push(r.d_id);
    x.push(r.revenue);
    x.push(r.entry_d);
    a.push(std::move(x));
  }
  return a;
}

}  // namespace

int run_ch_export(const ChExport& e) {
  std::error_code ec;
  std::filesystem::create_directories(e.dir, ec);
  if (ec) return std::fprintf(stderr, "duet bench ch: cannot create %s\n", e.dir.c_str()), 1;
  std::shared_ptr<TxnSpace> space;
  std::unique_ptr<Ch> ch;
  std::printf("loading %u warehouses ...\n", e.scale.warehouses);
  std::fflush(stdout);
  double load_s = 0;
  if (Status s = load_ch(e.scale, TxnConfig{}, e.load_threads, &space, &ch, &load_s); !s.ok())
    return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  std::unique_ptr<Context> ctx;
  if (Status s = e.engine->context(Device::kCpu, &ctx); !s.ok())
    return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;

  // The copy: one transaction's snapshot of the four tables.
  Txn t;
  if (Status s = space->begin(&t); !s.ok()) return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  const double x0 = now_s();
  struct Out {
    Tag tag;
    const char* file;
    std::vector<std::string> cols;
  };
  const Out outs[] = {
      {kOrderLine, "order_line.csv",
       {"ol_w_id", "ol_d_id", "ol_o_id", "ol_number", "ol_delivery_d", "ol_quantity", "ol_amount"}},
      {kCustomer, "customer.csv", {"c_w_id", "c_d_id", "c_id", "c_state"}},
      {kOrder, "orders.csv", {"o_w_id", "o_d_id", "o_id", "o_c_id", "o_entry_d"}},
      {kNewOrder, "new_order.csv", {"no_w_id", "no_d_id", "no_o_id"}},
  };
  std::string err;
  for (const Out& o : outs) {
    Table tab;
    if (Status s = read_table(&t, o.tag, &tab); !s.ok())
      return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
    if (!write_csv(tab, o.cols, e.dir + "/" + o.file, &err)) return std::fprintf(stderr, "duet bench ch: %s\n", err.c_str()), 1;
  }
  const double export_s = now_s() - x0;
  std::printf("loaded in %.1f s; copied the four tables to %s in %.1f s; timing Duet's queries (%u each) ...\n", load_s,
              e.dir.c_str(), export_s, e.reps);
  std::fflush(stdout);

  // Duet's queries on the same snapshot: results once, then times.
  QueryResult q;
  if (Status s = ch->q1(&t, ctx.get(), &q); !s.ok()) return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  if (Status s = ch->q6(&t, ctx.get(), &q); !s.ok()) return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  if (Status s = ch->q3(&t, ctx.get(), &q); !s.ok()) return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 1;
  QueryScratch scratch;
  auto time = [&](const std::function<Status(QueryResult*)>& run, std::vector<double>* ms) {
    for (unsigned i = 0; i < e.reps; ++i) {
      QueryResult r;
      const double a = now_s();
      if (Status s = run(&r); !s.ok()) return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), false;
      ms->push_back((now_s() - a) * 1e3);
    }
    return true;
  };
  std::vector<double> q1_ms, q6_ms, q3_tables_ms, q3_keys_ms, q3_read_ms;
  const bool ok =
      time([&](QueryResult* r) { return ch->q1(&t, ctx.get(), r, &scratch); }, &q1_ms) &&
      time([&](QueryResult* r) { return ch->q6(&t, ctx.get(), r, &scratch); }, &q6_ms) &&
      time([&](QueryResult* r) { return ch->q3(&t, ctx.get(), r, {}, Q3Plan::kSnapshotTables, &scratch); }, &q3_tables_ms) &&
      time([&](QueryResult* r) { return ch->q3(&t, ctx.get(), r, {}, Q3Plan::kSnapshotKeys, &scratch); }, &q3_keys_ms) &&
      time([&](QueryResult* r) { return ch->q3(&t, ctx.get(), r, {}, Q3Plan::kRead, &scratch); }, &q3_read_ms);
  t.abort();
  if (!ok) return 1;
  std::printf("Duet (queries on one snapshot, %s), median ms: Q1 %.1f, Q6 %.1f, Q3 snapshot-tables %.1f, "
              "snapshot-keys %.1f, read %.1f\n",
              e.engine->describe().c_str(), summarize(q1_ms).median, summarize(q6_ms).median,
              summarize(q3_tables_ms).median, summarize(q3_keys_ms).median, summarize(q3_read_ms).median);

  Json results = Json::object();
  Json q1 = Json::array();
  for (const Q1Row& r : q.q1) {
    Json x = Json::array();
    x.push(r.number);
    x.push(r.sum_qty);
    x.push(r.sum_amount);
    x.push(r.count);
    q1.push(std::move(x));
  }
  results.set("q1", std::move(q1));
  results.set("q6", q.q6);
  results.set("q3", q3_json(q.q3));
  Json times = Json::object();
  times.set("q1_ms", times_json(q1_ms));
  times.set("q6_ms", times_json(q6_ms));
  times.set("q3_snapshot_tables_ms", times_json(q3_tables_ms));
  times.set("q3_snapshot_keys_ms", times_json(q3_keys_ms));
  times.set("q3_read_ms", times_json(q3_read_ms));
  Json config = Json::object();
  config.set("warehouses", e.scale.warehouses);
  config.set("scale", e.scale_name);
  config.set("seed", e.scale.seed);
  config.set("reps", e.reps);
  config.set("engine", e.engine->describe());
  config.set("load_s", load_s);
  config.set("export_s", export_s);
  config.set("files", "order_line.csv, customer.csv, orders.csv, new_order.csv beside this file");
  Json records = Json::array();
  Json rec = Json::object();
  rec.set("system", "duet");
  rec.set("results", std::move(results));
  rec.set("times", std::move(times));
  records.push(std::move(rec));
  const Json doc = result_document("ch-export", "cpu", commit_id(DUET_SOURCE_DIR), utc_now(), config, records);
  const std::string path = e.dir + "/duet.json";
  if (!write_result_file(path, doc, &err)) return std::fprintf(stderr, "duet bench ch: %s\n", err.c_str()), 1;
  std::printf("results: %s\n", path.c_str());
  return 0;
}

}  // namespace duet::bench
