// `duet bench ch`: CH-benCHmark on the txn keyspace, embedded (src/compute/ch.hpp; docs/compute.md,
// "CH-benCHmark"). --threads worker threads run pre-generated TPC-C operations (each a snapshot-
// isolation transaction re-run on conflict) while one query thread runs CH queries, each on one
// SNAPSHOT taken at its start (read by --snapshot-threads threads), through the compute operators on
// the CPU (--query-cpu-threads); by default the query thread is one thread, as the seed's and the
// peer's are. On duet, Q1 and Q6 read the order-line column mirror by default (--query-source
// mirror: versioned columns kept by the commits, scanned at the query's start; docs/compute.md,
// "Column mirror"; on the GPU when one is present, --query-device auto|cpu|gpu), or that SNAPSHOT
// (--query-source snapshot):
//
//   mixes    seed: 90% NewOrder, 10% Delivery, with Q1;  tpcc: 45/43/4/4/4 NewOrder / Payment /
//            Delivery / Order-Status / Stock-Level, with Q1, Q3 and Q6 in turn
//   systems  duet: the txn keyspace;  server: `duet server` on this machine, each operation one
//            FCALL of its procedure in libduet_ch_proc.so (ch_proc.cpp, the same transaction
//            code) from one connection per worker, and Q1 (and Q6 in turn on the tpcc mix) as
//            FCALL_RO from the query thread's, from the mirror that `ch.mirror` attaches after
//            the load (--query-source mirror, the default) or from a SNAPSHOT per query;  rocksdb: RocksDB 7.8's TransactionDB
//            (pessimistic, memtable only, WAL off) running the same transaction code
//            (src/compute/ch_procs.hpp) on the same pre-generated work and threads, with Q1 by an
//            iterator scan of its snapshot (Q1 only)
//
// Every run starts from a freshly loaded database. Before each query begins, the query thread reads
// every worker's newest acknowledged NewOrder; the freshness check then requires the query's
// snapshot to contain each of those orders (and, on duet, a start timestamp at or after each
// commit): "freshness verified" counts queries that passed, and any failure fails the run. After
// each duet run TPC-C's consistency conditions 1-4 are checked. Medians over --reps runs with
// [min, max]; a short table, and JSON in bench/results/compute-ch/.
//
// Flags: --warehouses 10  --scale full|small  --threads 1,2  --ops 20000 (per thread)  --reps 3
//        --mixes seed,tpcc  --systems duet,rocksdb  --query-cpu-threads 1  --snapshot-threads 1
//        --load-threads 2  --query-source mirror|snapshot  --query-device auto|cpu|gpu
//        --queries on|off  --q3-plan snapshot-keys (the TPC-C mix's Q3)  --seed 1  --out FILE  --quick
//        --server-bin PATH --proc PATH --server-threads N: the server system's duet binary, procedure
//        library (default: beside this program) and I/O threads (default: the server's)
//        --q3-sweep default|S,...  --q3-plans read,snapshot-keys,snapshot-tables  --q3-queries 5: instead
//        of the mixes, Q3 by each plan while its selectivity varies (ch_q3_sweep.hpp; --reps rounds),
//        alone or, with --q3-workers N [--q3-worker-mix seed|tpcc] [--q3-worker-rate TXN/S], beside N
//        OLTP workers (--ops each, cycled; paced together, or unpaced)
//        --export DIR: instead, copy one loaded database out for DuckDB (ch_export.hpp)
#include "bench/compute/ch_bench.hpp"
#include "bench/compute/ch_export.hpp"
#include "bench/compute/ch_load.hpp"
#include "bench/compute/ch_q3_sweep.hpp"
#include "bench/compute/ch_server.hpp"

#include <algorithm>
#include <optional>
#include <array>
#include <map>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "common/json.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "compute/ch.hpp"
#include "compute/ch_procs.hpp"
#include "gpu/device.hpp"

#ifdef DUET_BENCH_HAVE_ROCKSDB
#include <rocksdb/db.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>

#include "common/rocksdb_options.hpp"
#endif

namespace duet::bench {
namespace {

using namespace duet::compute;
using namespace duet::compute::ch;

struct Options {
  std::uint32_t warehouses = 10;
  std::string scale = "full";
  std::vector<std::uint64_t> threads{1, 2};
  std::uint64_t ops = 20000;
  unsigned reps = 3;
  std::vector<std::string> mixes{"seed", "tpcc"};
  std::vector<std::string> systems{"duet", "rocksdb"};
  unsigned query_cpu_threads = 1;
  unsigned snapshot_threads = 1;  // TxnConfig::snapshot_threads: the query's SNAPSHOT on one thread
  unsigned load_threads = 2;
  std::string query_source = "mirror";  // duet's Q1 and Q6: the column mirror, or a SNAPSHOT per query
  Device query_device = Device::kAuto;   // where the mirror is scanned (auto: the GPU when present)
  std::uint64_t seed = 1;
  std::string out;
  bool queries = true;  // --queries off: workers alone (to see what the query thread costs them)
  bool quick = false;
  // --q3-sweep: Q3's plans against its selectivity instead of the mixes (ch_q3_sweep.hpp)
  std::vector<double> q3_sweep;
  std::vector<Q3Plan> q3_plans{Q3Plan::kRead, Q3Plan::kSnapshotKeys, Q3Plan::kSnapshotTables};
  unsigned q3_queries = 5;
  unsigned q3_workers = 0;           // OLTP workers beside the sweep
  std::string q3_worker_mix = "seed";
  double q3_worker_rate = 0;         // their total pace, txn/s (0: unpaced)
  // The TPC-C mix's Q3 beside the workers: the fastest plan of the sweep by default
  Q3Plan q3_plan = Q3Plan::kSnapshotKeys;
  std::string export_dir;  // --export: copy the database out for DuckDB instead (ch_export.hpp)
  ChServerConfig server = default_ch_server_config();  // the server system
};

// One run's figures.
struct Run {
  double load_s = 0, secs = 0, tps = 0, qps = 0, p50_us = 0, p99_us = 0, q_p50_ms = 0, q_p99_ms = 0;
  double abort_rate = 0;  // conflicted runs / all runs
  double mirror_s = 0;    // attaching the column mirror after the load (duet, --query-source mirror)
  std::uint64_t mirror_rows = 0, mirror_bytes = 0;  // its row versions and memory at the run's end
  std::uint64_t mirror_collections = 0, mirror_collected = 0, mirror_pause_us = 0, mirror_collection_us = 0;  // its collections
  bool mirror_on_gpu = false;
  std::uint64_t committed = 0, rolled_back = 0, queries = 0, fresh_verified = 0, fresh_failed = 0;
  std::array<std::uint64_t, 3> per_query{};  // Q1, Q3, Q6
  std::array<double, kKinds> kind_mean_us{};   // mean latency per transaction kind
  std::array<std::uint64_t, kKinds> kind_n{};
  std::string consistency = "not checked";
  std::string error;
};

// The query thread's plan: the seed mix runs Q1 only; TPC-C's runs Q1, Q3, Q6 in turn.
int query_of(const std::string& mix, std::uint64_t i) { return mix == "seed" ? 0 : static_cast<int>(i % 3); }

// Worker phase shared by both systems: `run_op(thread, op, &result, &rng)` returns false on a
// failure (recorded in *err); `query(i, &acks)` runs one query and returns false when it failed.
template <class RunOp, class Query>
void drive(const std::vector<std::vector<Op>>& work, AckBoard& board, Run* r, bool queries, RunOp run_op, Query query) {
  const unsigned threads = static_cast<unsigned>(work.size());
  std::vector<std::vector<double>> lat(threads);
  std::vector<std::array<double, kKinds>> ksum(threads);
  std::vector<std::array<std::uint64_t, kKinds>> kn(threads);
  std::atomic<std::uint64_t> committed{0}, rolled_back{0}, runs{0};
  std::atomic<unsigned> done{0};
  std::vector<std::string> errs(threads);
  std::vector<double> qlat;
  const double t0 = now_s();
  std::vector<std::thread> th;
  for (unsigned w = 0; w < threads; ++w) {
    th.emplace_back([&, w] {
      std::uint64_t rng = w + 1, c = 0, rb = 0, n = 0;
      lat[w].reserve(work[w].size());
      for (const Op& op : work[w]) {
        OpResult res;
        const double a = now_s();
        if (!run_op(w, op, &res, &rng, &errs[w])) break;
        const double us = (now_s() - a) * 1e6;
        lat[w].push_back(us);
        ksum[w][static_cast<std::size_t>(op.kind)] += us;
        kn[w][static_cast<std::size_t>(op.kind)] += 1;
        c += res.committed;
        rb += res.rolled_back;
        n += res.attempts;
        if (op.kind == Kind::kNewOrder && res.committed) board.publish(w, Ack{res.commit_ts, op.w, op.d, res.o_id});
      }
      committed += c;
      rolled_back += rb;
      runs += n;
      ++done;
    });
  }
  std::uint64_t qi = 0;
  while (done.load() < threads) {
    if (!queries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    const double a = now_s();
    const int q = static_cast<int>(qi);
    std::string qerr;
    const int ok = query(q, board.read(), &qerr);  // 1 verified, 0 freshness failed, -1 error
    if (ok < 0) {
      r->error = qerr;
      break;
    }
    if (done.load() < threads) {  // count only queries that ended inside the worker phase
      qlat.push_back((now_s() - a) * 1e3);
      ++r->queries;
    }
    (ok ? r->fresh_verified : r->fresh_failed) += 1;
    if (!ok && r->error.empty()) r->error = qerr;
    ++qi;
  }
  for (auto& t : th) t.join();
  r->secs = now_s() - t0;
  for (auto& e : errs)
    if (!e.empty() && r->error.empty()) r->error = e;
  r->committed = committed.load();
  r->rolled_back = rolled_back.load();
  const std::uint64_t completed = r->committed + r->rolled_back;  // TPC-C counts rolled-back NewOrders as done
  r->tps = static_cast<double>(completed) / r->secs;
  r->qps = static_cast<double>(r->queries) / r->secs;
  r->abort_rate = runs.load() ? static_cast<double>(runs.load() - completed) / static_cast<double>(runs.load()) : 0;
  for (std::size_t k = 0; k < kKinds; ++k) {
    double sum = 0;
    for (unsigned w = 0; w < threads; ++w) sum += ksum[w][k], r->kind_n[k] += kn[w][k];
    r->kind_mean_us[k] = r->kind_n[k] ? sum / static_cast<double>(r->kind_n[k]) : 0;
  }
  std::vector<double> all;
  for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  r->p50_us = percentile(all, 0.50);
  r->p99_us = percentile(all, 0.99);
  r->q_p50_ms = percentile(qlat, 0.50);
  r->q_p99_ms = percentile(qlat, 0.99);
}

Run run_duet(const Options& o, const Scale& sc, const std::string& mix, const std::vector<std::vector<Op>>& work,
             std::shared_ptr<Engine> engine) {
  Run r;
  std::shared_ptr<TxnSpace> space;
  std::unique_ptr<Ch> ch;
  TxnConfig tc;
  tc.snapshot_threads = o.snapshot_threads;
  if (Status s = load_ch(sc, tc, o.load_threads, &space, &ch, &r.load_s); !s.ok()) return r.error = s.to_string(), r;
  if (o.query_source == "mirror") {
    const double a = now_s();
    if (Status s = ch->attach_mirror(o.query_cpu_threads, o.query_device); !s.ok()) return r.error = s.to_string(), r;
    r.mirror_s = now_s() - a;
  }
  QueryScratch scratch;  // the query thread's SNAPSHOT buffers, kept from query to query
  AckBoard board(static_cast<unsigned>(work.size()));
  std::unique_ptr<Context> ctx;
  if (Status s = engine->context(Device::kCpu, &ctx); !s.ok()) return r.error = s.to_string(), r;
  drive(
      work, board, &r, o.queries,
      [&](unsigned, const Op& op, OpResult* res, std::uint64_t* rng, std::string* err) {
        const Status s = ch->run(op, res, rng);
        if (!s.ok()) *err = s.to_string();
        return s.ok();
      },
      [&](int qi, const std::vector<Ack>& acks, std::string* err) -> int {
        Txn t;
        if (Status s = space->begin(&t); !s.ok()) return *err = s.to_string(), -1;
        QueryResult q;
        const int which = query_of(mix, static_cast<std::uint64_t>(qi));
        const Status s = which == 0   ? ch->q1(&t, ctx.get(), &q, &scratch)
                         : which == 1 ? ch->q3(&t, ctx.get(), &q, {}, o.q3_plan, &scratch)
                                      : ch->q6(&t, ctx.get(), &q, &scratch);
        if (!s.ok()) return *err = s.to_string(), -1;
        ++r.per_query[static_cast<std::size_t>(which)];
        Status f = Ch::check_fresh(&t, acks);
        if (f.ok() && which != 1) f = ch->check_mirror_fresh(t.start_ts(), acks);  // what Q1 and Q6 read
        t.abort();
        if (!f.ok()) return *err = f.to_string(), 0;
        return 1;
      });
  Txn t;
  if (Status s = space->begin(&t); s.ok()) {
    const Status c = ch->check_consistency(&t);
    r.consistency = c.ok() ? "conditions 1-4 hold" : c.to_string();
    if (!c.ok() && r.error.empty()) r.error = c.to_string();
  }
  if (const ColumnMirror* m = ch->mirror()) {
    const MirrorStats ms = m->stats();
    r.mirror_rows = ms.rows;
    r.mirror_bytes = ms.bytes;
    r.mirror_on_gpu = ms.on_device;
    r.mirror_collections = ms.collections;
    r.mirror_collected = ms.versions_collected;
    r.mirror_pause_us = ms.longest_pause_us;
    r.mirror_collection_us = ms.longest_collection_us;
  }
  return r;
}

// The server system: a fresh `duet server` per run, loaded through ch.load, each operation one
// FCALL from its worker's connection, the queries FCALL_RO from the query thread's.
Run run_server(const Options& o, const Scale& sc, const std::string& mix, const std::vector<std::vector<Op>>& work) {
  Run r;
  std::unique_ptr<ChServer> server;
  if (Status s = ChServer::start(o.server, &server); !s.ok()) return r.error = "server: " + s.to_string(), r;
  const double l0 = now_s();
  if (Status s = server->load(sc, o.load_threads); !s.ok()) return r.error = "server load: " + s.to_string(), r;
  r.load_s = now_s() - l0;
  std::vector<std::unique_ptr<RespConnection>> conns(work.size() + 1);
  for (auto& c : conns)
    if (Status s = RespConnection::open(server->port(), &c); !s.ok()) return r.error = s.to_string(), r;
  if (o.query_source == "mirror") {  // Q1 and Q6 then read the column mirror (ch.mirror)
    const std::string dev = device_name(o.query_device);
    const std::string threads = std::to_string(std::max(1u, o.query_cpu_threads));
    const std::string_view argv[] = {"FCALL", "ch.mirror", "0", dev, threads};
    RespValue v;
    const double a = now_s();
    if (Status s = conns.back()->call(argv, &v); !s.ok()) return r.error = "ch.mirror: " + s.to_string(), r;
    if (v.is_error()) return r.error = "ch.mirror: " + v.text, r;
    r.mirror_s = now_s() - a;
  }
  std::uint64_t calls0 = 0, retries0 = 0, calls1 = 0, retries1 = 0;
  if (Status s = server->procedure_counts(&calls0, &retries0); !s.ok()) return r.error = s.to_string(), r;
  AckBoard board(static_cast<unsigned>(work.size()));
  RespConnection& qc = *conns.back();
  drive(
      work, board, &r, o.queries,
      [&](unsigned w, const Op& op, OpResult* res, std::uint64_t*, std::string* err) {
        return run_ch_op(*conns[w], op, res, err);
      },
      [&](int qi, const std::vector<Ack>& acks, std::string* err) -> int {
        // Q1 (Q1, Q3 and Q6 in turn on the tpcc mix, Q3 by its READ plan), with the acknowledged orders.
        const int which = query_of(mix, static_cast<std::uint64_t>(qi));
        static constexpr std::string_view kNames[] = {"ch.q1", "ch.q3", "ch.q6"};
        std::vector<std::string> ack_args;
        for (const Ack& a : acks)
          for (std::uint32_t x : {a.w, a.d, a.o}) ack_args.push_back(std::to_string(x));
        std::vector<std::string_view> argv{"FCALL_RO", kNames[which], "0"};
        for (auto& x : ack_args) argv.push_back(x);
        RespValue v;
        if (Status s = qc.call(argv, &v); !s.ok()) return *err = s.to_string(), -1;
        if (v.is_error() || v.elems.size() < 3) return *err = "query: " + v.text, -1;
        if (which != 1 && o.query_source == "mirror" && (v.elems.size() != 4 || v.elems[3].text != "mirror"))
          return *err = "query: Q1 and Q6 did not read the mirror", -1;
        ++r.per_query[static_cast<std::size_t>(which)];
        if (v.elems[1].integer != 0)
          return *err = "server freshness: " + std::to_string(v.elems[1].integer) +
                        " acknowledged orders are not in the query's snapshot", 0;
        return 1;
      });
  if (Status s = server->procedure_counts(&calls1, &retries1); s.ok() && calls1 > calls0) {
    const double runs = static_cast<double>(calls1 - calls0 + retries1 - retries0);
    r.abort_rate = static_cast<double>(retries1 - retries0) / runs;
  }
  const std::string w = std::to_string(sc.warehouses);
  const std::string_view check[] = {"FCALL_RO", "ch.check", "0", w};
  RespValue v;
  if (Status s = qc.call(check, &v); !s.ok()) {
    r.consistency = s.to_string();
  } else {
    r.consistency = v.is_error() ? v.text : "conditions 1-4 hold";
    if (v.is_error() && r.error.empty()) r.error = v.text;
  }
  return r;
}

#ifdef DUET_BENCH_HAVE_ROCKSDB
struct RocksAdapter {
  rocksdb::Transaction* t = nullptr;
  rocksdb::ReadOptions ro;
  static rocksdb::Slice sl(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
  bool get(std::string_view k, std::string* v, bool* found, bool for_update) {
    const rocksdb::Status s = for_update ? t->GetForUpdate(ro, sl(k), v) : t->Get(ro, sl(k), v);
    *found = s.ok();
    return s.ok() || s.IsNotFound();
  }
  bool put(std::string_view k, std::string_view v) { return t->Put(sl(k), sl(v)).ok(); }
  bool del(std::string_view k) { return t->Delete(sl(k)).ok(); }
  bool range(std::string_view lo, std::string_view hi, std::size_t limit,
             std::vector<std::pair<std::string, std::string>>* out) {
    std::unique_ptr<rocksdb::Iterator> it(t->GetIterator(ro));
    for (it->Seek(sl(lo)); it->Valid() && it->key().compare(sl(hi)) < 0; it->Next()) {
      out->emplace_back(it->key().ToString(), it->value().ToString());
      if (limit && out->size() >= limit) break;
    }
    return it->status().ok();
  }
};

Run run_rocks(const Options& o, const Scale& sc, const std::vector<std::vector<Op>>& work) {
  Run r;
  const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  const std::string dir = base + "/duet-bench-ch-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  rocksdb::TransactionDB* db = nullptr;
  rocksdb::TransactionDBOptions tdo;
  if (rocksdb::Status s = rocksdb::TransactionDB::Open(memtable_only_rocksdb_options(), tdo, dir, &db); !s.ok())
    return r.error = "rocksdb open: " + s.ToString(), r;
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  const double l0 = now_s();
  {
    std::vector<std::thread> th;
    std::vector<std::string> errs(o.load_threads);
    for (unsigned p = 0; p < o.load_threads; ++p) {
      th.emplace_back([&, p] {
        rocksdb::WriteBatch b;
        auto flush = [&]() -> Status {
          const rocksdb::Status s = db->Write(wo, &b);
          b.Clear();
          return s.ok() ? Status::Ok() : Status::Internal(s.ToString());
        };
        Status s = generate(sc, p, o.load_threads, [&](std::string_view k, std::string_view v) -> Status {
          b.Put(RocksAdapter::sl(k), RocksAdapter::sl(v));
          return b.Count() >= 4096 ? flush() : Status::Ok();
        });
        if (s.ok()) s = flush();
        if (!s.ok()) errs[p] = s.to_string();
      });
    }
    for (auto& t : th) t.join();
    for (auto& e : errs)
      if (!e.empty()) r.error = "rocksdb load: " + e;
  }
  r.load_s = now_s() - l0;
  if (r.error.empty()) {
    AckBoard board(static_cast<unsigned>(work.size()));
    std::vector<RocksAdapter> ad(work.size());
    DeliveryHints hints(sc.warehouses);  // the same starting points as duet's (RocksDB also keeps tombstones)
    const RowCodec& lc = codec(kOrderLine);
    drive(
        work, board, &r, o.queries,
        [&](unsigned w, const Op& op, OpResult* res, std::uint64_t* rng, std::string* err) {
          RocksAdapter& a = ad[w];
          *res = OpResult{};
          for (unsigned attempt = 1; attempt <= 100000; ++attempt) {
            res->attempts = attempt;
            rocksdb::TransactionOptions to;
            to.set_snapshot = true;
            to.lock_timeout = 10;  // ms; locks are taken in operation order, so deadlocks can arise
            to.deadlock_detect = true;
            a.t = db->BeginTransaction(wo, to, a.t);
            a.ro.snapshot = a.t->GetSnapshot();
            const Body b = procs::run(a, op, res, &hints);
            if (b == Body::kMissing) {
              *err = std::string("rocksdb: ") + kind_name(op.kind) + " found a row missing";
              (void)a.t->Rollback();
              return false;
            }
            if (b == Body::kRollback) {
              (void)a.t->Rollback();
              res->rolled_back = true;
              return true;
            }
            if (b == Body::kDone) {
              if (a.t->Commit().ok()) {
                res->committed = true;
                res->commit_ts = 1;  // RocksDB has no commit timestamp to compare; the content check remains
                if (op.kind == Kind::kDelivery) hints.advance(op.w, *res);
                return true;
              }
            }
            (void)a.t->Rollback();
            backoff(attempt, rng);
          }
          *err = "rocksdb: conflicted 100000 times";
          return false;
        },
        [&](int, const std::vector<Ack>& acks, std::string* err) -> int {
          // Q1 by an iterator scan of one snapshot.
          const rocksdb::Snapshot* snap = db->GetSnapshot();
          rocksdb::ReadOptions ro;
          ro.snapshot = snap;
          std::string lo, hi;
          table_range(kOrderLine, &lo, &hi);
          std::map<std::int64_t, Q1Row> q1;
          std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
          for (it->Seek(lo); it->Valid() && it->key().compare(hi) < 0; it->Next()) {
            const std::string_view v(it->value().data(), it->value().size());
            if (get(v, lc, olf::delivery_d) <= kDate2007) continue;
            Q1Row& q = q1[get(v, lc, olf::number)];
            q.sum_qty += get(v, lc, olf::quantity);
            q.sum_amount += get(v, lc, olf::amount);
            ++q.count;
          }
          int ok = it->status().ok() ? 1 : -1;
          if (ok < 0) *err = it->status().ToString();
          ++r.per_query[0];
          std::string v;
          for (const Ack& a : acks) {
            if (ok != 1) break;
            if (!db->Get(ro, order_key(a.w, a.d, a.o), &v).ok()) {
              *err = "rocksdb freshness: an acknowledged order is not in the query's snapshot";
              ok = 0;
            }
          }
          it.reset();
          db->ReleaseSnapshot(snap);
          return ok;
        });
    for (auto& a : ad) delete a.t;
  }
  delete db;
  std::filesystem::remove_all(dir);
  return r;
}
#endif

}  // namespace

int run_ch_bench(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string err;
  const bool parsed = scan_flags(argc, argv, &help, &o.quick, &err, [&](const std::string& f, const std::string& v) {
    auto count = [&](std::uint64_t* out) {
      const auto c = parse_count(v);
      if (!c) err = f + ": not a count: " + v;
      else *out = *c;
      return c.has_value();
    };
    std::uint64_t x = 0;
    if (f == "--warehouses") return count(&x) && (o.warehouses = static_cast<std::uint32_t>(x), true);
    if (f == "--scale") {
      o.scale = v;
      if (v != "full" && v != "small") return err = "--scale: full or small", false;
      return true;
    }
    if (f == "--threads") {
      o.threads.clear();
      for (auto& p : split_list(v)) {
        const auto c = parse_count(p);
        if (!c || *c == 0 || *c > 1024) return err = "--threads: counts 1 .. 1024", false;
        o.threads.push_back(*c);
      }
      return !o.threads.empty() || (err = "--threads: empty", false);
    }
    if (f == "--ops") return count(&o.ops);
    if (f == "--reps") return count(&x) && (o.reps = static_cast<unsigned>(x), true);
    if (f == "--mixes") return o.mixes = split_list(v), true;
    if (f == "--systems") return o.systems = split_list(v), true;
    if (f == "--snapshot-threads") return count(&x) && (o.snapshot_threads = static_cast<unsigned>(x), true);
    if (f == "--query-cpu-threads") return count(&x) && (o.query_cpu_threads = static_cast<unsigned>(x), true);
    if (f == "--load-threads") return count(&x) && (o.load_threads = static_cast<unsigned>(std::max<std::uint64_t>(1, x)), true);
    if (f == "--seed") return count(&o.seed);
    if (f == "--query-source") {
      if (v != "mirror" && v != "snapshot") return err = "--query-source: mirror or snapshot", false;
      return o.query_source = v, true;
    }
    if (f == "--query-device") {
      if (v != "auto" && v != "cpu" && v != "gpu") return err = "--query-device: auto, cpu or gpu", false;
      o.query_device = v == "cpu" ? Device::kCpu : v == "gpu" ? Device::kGpu : Device::kAuto;
      return true;
    }
    if (f == "--out") return o.out = v, true;
    if (f == "--q3-sweep") {
      o.q3_sweep.clear();
      for (auto& p : split_list(v == "default" ? "0.017,0.1,0.2,0.4,0.6,0.8,1.0" : v)) {
        const auto d = parse_double(p);
        if (!d || !(*d >= 0 && *d <= 1)) return err = "--q3-sweep: selectivities in [0, 1], or default", false;
        o.q3_sweep.push_back(*d);
      }
      return !o.q3_sweep.empty() || (err = "--q3-sweep: empty", false);
    }
    const auto plan_of = [](std::string_view p) -> std::optional<Q3Plan> {
      for (Q3Plan q : {Q3Plan::kRead, Q3Plan::kSnapshotKeys, Q3Plan::kSnapshotTables})
        if (p == q3_plan_name(q)) return q;
      return std::nullopt;
    };
    if (f == "--q3-plans") {
      o.q3_plans.clear();
      for (auto& p : split_list(v)) {
        const auto q = plan_of(p);
        if (!q) return err = "--q3-plans: read, snapshot-keys or snapshot-tables", false;
        o.q3_plans.push_back(*q);
      }
      return !o.q3_plans.empty() || (err = "--q3-plans: empty", false);
    }
    if (f == "--q3-plan") {
      const auto q = plan_of(v);
      return q ? (o.q3_plan = *q, true) : (err = "--q3-plan: read, snapshot-keys or snapshot-tables", false);
    }
    if (f == "--export") return o.export_dir = v, !v.empty() || (err = "--export: a directory", false);
    if (f == "--server-bin") return o.server.server_bin = v, true;
    if (f == "--proc") return o.server.proc_lib = v, true;
    if (f == "--server-threads") return count(&x) && (o.server.threads = static_cast<unsigned>(x), true);
    if (f == "--q3-queries") return count(&x) && x > 0 && (o.q3_queries = static_cast<unsigned>(x), true);
    if (f == "--q3-workers") {
      if (!count(&x) || x > 1024) return err = "--q3-workers: a count 0 .. 1024", false;
      return o.q3_workers = static_cast<unsigned>(x), true;
    }
    if (f == "--q3-worker-rate") {
      const auto d = parse_double(v);
      if (!d || !(*d >= 0)) return err = "--q3-worker-rate: txn/s >= 0 (0: unpaced)", false;
      return o.q3_worker_rate = *d, true;
    }
    if (f == "--q3-worker-mix") {
      if (v != "seed" && v != "tpcc") return err = "--q3-worker-mix: seed or tpcc", false;
      return o.q3_worker_mix = v, true;
    }
    if (f == "--queries") {
      if (v != "on" && v != "off") return err = "--queries: on or off", false;
      return o.queries = v == "on", true;
    }
    err = "unknown flag " + f;
    return false;
  });
  if (help) {
    std::printf("duet bench ch [--warehouses 10] [--scale full|small] [--threads 1,2] [--ops 20000] [--reps 3]\n"
                "              [--mixes seed,tpcc] [--systems duet,rocksdb] [--query-cpu-threads 1] [--snapshot-threads 1]\n"
                "              [--load-threads 2] [--query-source mirror|snapshot] [--query-device auto|cpu|gpu]\n"
                "              [--q3-plan read|snapshot-keys|snapshot-tables]\n"
                "              [--queries on|off] [--seed 1]\n"
                "              [--out FILE] [--quick]\n"
                "              [--server-bin PATH] [--proc PATH] [--server-threads N]\n"
                "  systems: duet (embedded), server (duet server, each operation one FCALL), rocksdb\n"
                "duet bench ch --q3-sweep default|S,S,... [--q3-plans read,snapshot-keys,snapshot-tables] [--q3-queries 5]\n"
                "              [--warehouses 1] [--scale full|small] [--reps 3] [--snapshot-threads 1] [--out FILE] [--quick]\n"
                "              [--q3-workers 0] [--q3-worker-mix seed|tpcc] [--q3-worker-rate 0] [--ops 20000]\n"
                "  Q3 by each plan while its customer selectivity varies (default 0.017,0.1,0.2,0.4,0.6,0.8,1.0),\n"
                "  alone or beside --q3-workers OLTP threads, each cycling through --ops pre-generated operations,\n"
                "  together paced at --q3-worker-rate txn/s (0: unpaced; the database grows with every NewOrder)\n"
                "duet bench ch --export DIR [--warehouses 1] [--scale full|small] [--reps 3]\n"
                "  one loaded database copied to DIR as CSV for bench/compute/ch_duckdb.py, with Duet's Q1/Q3/Q6\n"
                "  results and times on the same snapshot\n");
    return 0;
  }
  if (!parsed) {
    std::fprintf(stderr, "duet bench ch: %s\n", err.c_str());
    return 2;
  }
  for (auto& m : o.mixes)
    if (m != "seed" && m != "tpcc") return std::fprintf(stderr, "duet bench ch: unknown mix %s\n", m.c_str()), 2;
  for (auto& s : o.systems)
    if (s != "duet" && s != "server" && s != "rocksdb") return std::fprintf(stderr, "duet bench ch: unknown system %s\n", s.c_str()), 2;
  if (o.quick) {
    o.warehouses = 1;
    o.scale = "small";
    o.ops = 500;
    o.reps = 1;
    o.threads = {2};
    o.q3_queries = 2;
  }
  Scale sc = o.scale == "full" ? Scale::full(o.warehouses) : Scale::small(o.warehouses);
  sc.seed = o.seed;
  if (Status s = sc.check(); !s.ok()) return std::fprintf(stderr, "duet bench ch: %s\n", s.to_string().c_str()), 2;
  if (o.reps == 0 || o.ops == 0) return std::fprintf(stderr, "duet bench ch: --reps and --ops must be positive\n"), 2;

  std::shared_ptr<Engine> engine;
  EngineConfig ec;
  ec.device = Device::kCpu;
  ec.cpu_threads = o.query_cpu_threads;
  if (Status s = Engine::open(ec, &engine); !s.ok())
    return std::fprintf(stderr, "duet bench ch: engine: %s\n", s.to_string().c_str()), 1;

  if (!o.export_dir.empty()) {
    ChExport x;
    x.scale = sc;
    x.scale_name = o.scale;
    x.dir = o.export_dir;
    x.reps = o.reps;
    x.load_threads = o.load_threads;
    x.engine = engine;
    return run_ch_export(x);
  }
  if (!o.q3_sweep.empty()) {
    Q3Sweep w;
    w.scale = sc;
    w.scale_name = o.scale;
    w.selectivities = o.q3_sweep;
    w.plans = o.q3_plans;
    w.queries = o.q3_queries;
    w.rounds = o.reps;
    w.load_threads = o.load_threads;
    w.snapshot_threads = o.snapshot_threads;
    w.workers = o.q3_workers;
    w.worker_mix = o.q3_worker_mix;
    w.worker_ops = o.ops;
    w.worker_rate = o.q3_worker_rate;
    w.quick = o.quick;
    w.engine = engine;
    w.out = o.out.empty() ? "bench/results/compute-ch/q3-sweep-" + utc_now(true) + ".json" : o.out;
    return run_q3_sweep(w);
  }
  const std::string date = utc_now();
  const std::string path =
      o.out.empty() ? "bench/results/compute-ch/ch-" + utc_now(true) + ".json" : o.out;
  std::printf("CH-benCHmark: %u warehouses (%s scale: %u items, %u customers and %u orders per district), "
              "%llu ops per worker thread, %u reps; queries on %s\n",
              sc.warehouses, o.scale.c_str(), sc.items, sc.customers, sc.orders,
              static_cast<unsigned long long>(o.ops), o.reps, engine->describe().c_str());
#ifndef DUET_BENCH_HAVE_ROCKSDB
  std::printf("(built without RocksDB: the rocksdb system is skipped)\n");
#endif
  std::printf("%-5s %-8s %3s %11s %21s %8s %8s %7s %8s %9s %9s %7s\n", "mix", "system", "thr", "txn/s", "[min, max]",
              "p50_us", "p99_us", "abort%", "q/s", "q_p50_ms", "fresh_ok", "load_s");
  Json records = Json::array();
  int rc = 0;
  auto flush = [&]() {
    Json config = Json::object();
    config.set("warehouses", sc.warehouses);
    config.set("scale", o.scale);
    config.set("items", sc.items);
    config.set("customers_per_district", sc.customers);
    config.set("orders_per_district", sc.orders);
    config.set("new_orders_per_district", sc.new_orders);
    config.set("threads", Json::array_of(o.threads));
    config.set("ops_per_thread", o.ops);
    config.set("reps", o.reps);
    config.set("mixes", Json::array_of(o.mixes));
    config.set("systems", Json::array_of(o.systems));
    config.set("query_cpu_threads", o.query_cpu_threads);
    config.set("snapshot_threads", o.snapshot_threads);
    config.set("load_threads", o.load_threads);
    config.set("query_source", o.query_source == "mirror"
                                   ? std::string("duet: Q1 and Q6 scan the order-line column mirror at the query's start (") +
                                         (o.query_device == Device::kCpu ? "CPU, on --query-cpu-threads threads"
                                          : o.query_device == Device::kGpu ? "its GPU copy"
                                                                           : "its GPU copy when a GPU is present, else the CPU") +
                                         "); Q3 by its " + q3_plan_name(o.q3_plan) + " plan"
                                   : std::string("duet: every query SNAPSHOTs its tables at its start; Q3 by its ") +
                                         q3_plan_name(o.q3_plan) + " plan");
    config.set("seed", o.seed);
    config.set("quick", o.quick);
    config.set("queries_on", o.queries);
    config.set("engine", engine->describe());
    config.set("server", "server system: duet server on this machine, --threads " +
                             (o.server.threads ? std::to_string(o.server.threads) : std::string("default")) +
                             ", one txn database, procedure-compute-device auto; one RESP connection per worker thread "
                             "and one for the query thread; each operation one FCALL of libduet_ch_proc.so; abort = "
                             "the procedures' re-runs / all their runs (PROCEDURE LIST); queries Q1 (seed), Q1 and Q6 in "
                             "turn (tpcc)");
    config.set("queries", "seed mix: Q1 on one thread; tpcc mix: Q1, Q3, Q6 in turn on one thread; rocksdb: Q1 only, "
                          "by an iterator scan of a snapshot");
    config.set("rocksdb", "7.8 (Debian librocksdb-dev), TransactionDB (pessimistic, GetForUpdate on rows it "
                          "updates, lock_timeout 10 ms, deadlock detection, set_snapshot), memtable only (8 GiB write "
                          "buffer, no flush, no compaction), WAL off (disableWAL)");
    config.set("timing", "txn/s = completed operations (committed, or NewOrders rolled back by their unused item) / "
                         "wall time of the worker phase (all threads); latency per "
                         "operation from its first BEGIN to its commit or rollback, retries included; abort = conflicted runs / "
                         "all runs; q/s = queries that ended inside the worker phase / its wall time; fresh_ok = "
                         "queries whose snapshot held every NewOrder acknowledged before they began");
    config.set("simplifications", "Order-Status searches the district's last 20 orders; Delivery is one transaction "
                                  "over all 10 districts (as TPC-C: 1% of NewOrders roll back on an unused item, 60% of "
                                  "Payments and Order-Statuses choose their customer by last name)");
    // The GPU's name when the order-line mirror's queries ran there, else "cpu".
    const bool gpu_queries = o.query_source == "mirror" && o.query_device != Device::kCpu && duet::gpu::device().present &&
                             std::find(o.systems.begin(), o.systems.end(), "duet") != o.systems.end();
    const Json doc = result_document("ch", gpu_queries ? duet::gpu::device().name : "cpu", commit_id(DUET_SOURCE_DIR),
                                     date, config, records);
    if (!write_result_file(path, doc, &err)) {
      std::fprintf(stderr, "duet bench ch: %s\n", err.c_str());
      rc = 1;
    }
  };
  for (const std::string& mix : o.mixes) {
    for (std::uint64_t threads : o.threads) {
      std::vector<std::vector<Op>> work(threads);
      for (std::uint64_t t = 0; t < threads; ++t)
        work[t] = make_work(sc, mix == "seed" ? Mix::seed() : Mix::tpcc(), o.ops, t);
      for (const std::string& sys : o.systems) {
#ifndef DUET_BENCH_HAVE_ROCKSDB
        if (sys == "rocksdb") continue;
#endif
        std::vector<Run> runs;
        for (unsigned rep = 0; rep < o.reps; ++rep) {
          Run r;
          if (sys == "duet") r = run_duet(o, sc, mix, work, engine);
          else if (sys == "server") r = run_server(o, sc, mix, work);
#ifdef DUET_BENCH_HAVE_ROCKSDB
          else r = run_rocks(o, sc, work);
#endif
          if (!r.error.empty()) {
            std::fprintf(stderr, "duet bench ch: %s %s %llu threads: %s\n", mix.c_str(), sys.c_str(),
                         static_cast<unsigned long long>(threads), r.error.c_str());
            rc = 1;
          }
          runs.push_back(r);
        }
        auto med = [&](auto f) {
          std::vector<double> v;
          for (auto& r : runs) v.push_back(f(r));
          return summarize(v);
        };
        const Summary tps = med([](const Run& r) { return r.tps; });
        const Summary qps = med([](const Run& r) { return r.qps; });
        std::uint64_t fresh_ok = 0, fresh_bad = 0;
        for (auto& r : runs) fresh_ok += r.fresh_verified, fresh_bad += r.fresh_failed;
        std::printf("%-5s %-8s %3llu %11.0f [%9.0f, %9.0f] %8.0f %8.0f %7.2f %8.2f %9.1f %5llu/%-3llu %7.1f\n",
                    mix.c_str(), sys.c_str(), static_cast<unsigned long long>(threads), tps.median, tps.min, tps.max,
                    med([](const Run& r) { return r.p50_us; }).median, med([](const Run& r) { return r.p99_us; }).median,
                    100 * med([](const Run& r) { return r.abort_rate; }).median, qps.median,
                    med([](const Run& r) { return r.q_p50_ms; }).median, static_cast<unsigned long long>(fresh_ok),
                    static_cast<unsigned long long>(fresh_ok + fresh_bad), med([](const Run& r) { return r.load_s; }).median);
        std::fflush(stdout);
        Json rec = Json::object();
        rec.set("mix", mix);
        rec.set("system", sys);
        rec.set("threads", threads);
        rec.set("txn_per_s", summary_json(tps));
        rec.set("queries_per_s", summary_json(qps));
        rec.set("p50_us", summary_json(med([](const Run& r) { return r.p50_us; })));
        rec.set("p99_us", summary_json(med([](const Run& r) { return r.p99_us; })));
        rec.set("abort_rate", summary_json(med([](const Run& r) { return r.abort_rate; })));
        rec.set("query_p50_ms", summary_json(med([](const Run& r) { return r.q_p50_ms; })));
        rec.set("query_p99_ms", summary_json(med([](const Run& r) { return r.q_p99_ms; })));
        rec.set("load_s", summary_json(med([](const Run& r) { return r.load_s; })));
        rec.set("seconds", summary_json(med([](const Run& r) { return r.secs; })));
        rec.set("freshness_verified", fresh_ok);
        rec.set("freshness_failed", fresh_bad);
        Json per = Json::array();
        for (auto& r : runs) {
          Json x = Json::object();
          x.set("txn_per_s", r.tps);
          x.set("queries_per_s", r.qps);
          x.set("committed", r.committed);
          x.set("rolled_back", r.rolled_back);
          x.set("queries", r.queries);
          x.set("q1", r.per_query[0]);
          x.set("q3", r.per_query[1]);
          x.set("q6", r.per_query[2]);
          x.set("consistency", r.consistency);
          if (sys == "duet" && o.query_source == "mirror") {
            x.set("mirror_attach_s", r.mirror_s);
            x.set("mirror_rows", r.mirror_rows);
            x.set("mirror_bytes", r.mirror_bytes);
            x.set("mirror_on_gpu", r.mirror_on_gpu);
            x.set("mirror_collections", r.mirror_collections);
            x.set("mirror_versions_collected", r.mirror_collected);
            x.set("mirror_longest_collection_pause_us", r.mirror_pause_us);
            x.set("mirror_longest_collection_us", r.mirror_collection_us);
          }
          Json km = Json::object();
          for (std::size_t k = 0; k < kKinds; ++k)
            if (r.kind_n[k]) km.set(kind_name(static_cast<Kind>(k)), r.kind_mean_us[k]);
          x.set("mean_us_by_kind", std::move(km));
          if (!r.error.empty()) x.set("error", r.error);
          per.push(std::move(x));
        }
        rec.set("runs", std::move(per));
        records.push(std::move(rec));
        flush();
      }
    }
  }
  std::printf("results: %s\n", path.c_str());
  return rc;
}

}  // namespace duet::bench
