// duet_bench_txn: the txn keyspace (SnapKV) beside RocksDB's TransactionDB (pessimistic) and
// OptimisticTransactionDB, both memtable-only with the WAL off (docs/txn.md, "Results").
//
// Experiments (each run on every system with the same pre-generated transactions):
//   ycsbt      YCSB-T: ops per txn, read share, key distribution, key bytes; committed txn/s,
//              abort rate, latency p50/p99/p999 of committed transactions (retries included)
//   smallbank  SmallBank's standard mix, uniform and with a hotspot
//   snapshot   SNAPSHOT of one range of all keys, of 1000 ranges, of all keys as points,
//              while writer threads commit (duet; RocksDB iterates or multi-gets a snapshot);
//              when named in --snapshot-shapes, `packed`: duet's one range then packed into one
//              pinned buffer for the GPU (PackedSnapshot::pack on --pack-threads threads)
//   commit     disjoint writers (one own key per txn) at 1..T threads, and the ts source alone
//   clock      the TSC clock's boundary: the least one-way TSC difference between each ordered
//              pair of CPUs, the skew TxnConfig::tsc_boundary_cycles must cover (x86-64)
//   disjoint   the disjoint writers alone, at exactly the --threads counts (for profiles)
//   longreader writers' commit rate alone, then beside one transaction that stays open for
//              --reader-seconds (10) reading now and then: what a long reader costs writers
#include <algorithm>
#include <ctime>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/json.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "duet/txn.hpp"
#include "clock/tsc.hpp"

#ifdef DUET_BENCH_HAVE_ROCKSDB
#include <rocksdb/db.h>
#include <rocksdb/utilities/optimistic_transaction_db.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>

#include "common/rocksdb_options.hpp"
#endif

using namespace duet;
using namespace duet::bench;
using Clock = std::chrono::steady_clock;

namespace {

// ---------------------------------------------------------------- systems

/// One thread's transaction handle on a system.
struct Client {
  virtual ~Client() = default;
  virtual void begin() = 0;
  /// false: the key is absent.
  virtual bool get(const std::string& k, std::string* v) = 0;
  /// false: the transaction must abort (a lock or write conflict).
  virtual bool put(const std::string& k, const std::string& v) = 0;
  /// true: committed; false: aborted by a conflict.
  virtual bool commit() = 0;
  virtual void abort() = 0;
};

/// --snapshot-threads, for DuetSystem's keyspace (the snapshot pool is made once per process).
unsigned g_snapshot_threads = 0;
TxnClock g_clock = TxnClock::kCounter;  ///< duet's TxnConfig::clock (--clock)
std::uint64_t g_tsc_boundary = TxnConfig{}.tsc_boundary_cycles;  ///< --tsc-boundary
/// --pack-threads: PackedSnapshot::pack's threads in the `packed` shape (0: the snapshot pool).
unsigned g_pack_threads = 0;

struct System {
  virtual ~System() = default;
  virtual std::string name() const = 0;
  virtual std::unique_ptr<Client> client() = 0;
  /// SNAPSHOT-style read of [lo, hi] (or the given points); returns pairs read.
  virtual std::size_t range(Client& c, const std::string& lo, const std::string& hi) = 0;
  virtual std::size_t points(Client& c, const std::vector<std::string>& keys) = 0;
  /// range(), then the result packed into one pinned buffer for the GPU; 0 when the system has
  /// no such buffer (the shape is then left out).
  virtual std::size_t range_packed(Client&, const std::string&, const std::string&) { return 0; }
};

struct DuetClient final : Client {
  std::shared_ptr<TxnSpace> s;
  Txn t;
  /// The SNAPSHOT output, reused from call to call as a GPU pipeline reuses its staging
  /// buffer (TxnSnapshot::clear keeps capacity): the first call also pays for fresh pages.
  TxnSnapshot snap;
  PackedSnapshot packed;  ///< the `packed` shape's pinned buffer, reused likewise
  explicit DuetClient(std::shared_ptr<TxnSpace> sp) : s(std::move(sp)) {}
  void begin() override { (void)s->begin(&t); }
  bool get(const std::string& k, std::string* v) override {
    bool f = false;
    (void)t.get(k, v, &f);
    return f;
  }
  bool put(const std::string& k, const std::string& v) override { return t.put(k, v).ok(); }
  bool commit() override {
    CommitResult r;
    return t.commit(&r).ok() && r.outcome == TxnOutcome::kCommitted;
  }
  void abort() override { t.abort(); }
};

struct DuetSystem final : System {
  std::shared_ptr<TxnSpace> s;
  DuetSystem() {
    TxnConfig c;
    c.snapshot_threads = g_snapshot_threads;
    c.clock = g_clock;
    c.tsc_boundary_cycles = g_tsc_boundary;
    if (Status st = TxnSpace::open("bench", c, &s); !st.ok()) {
      std::fprintf(stderr, "duet_bench_txn: %s\n", st.message().c_str());
      std::exit(2);
    }
  }
  std::string name() const override { return "duet"; }
  std::unique_ptr<Client> client() override { return std::make_unique<DuetClient>(s); }
  std::size_t range(Client& c, const std::string& lo, const std::string& hi) override {
    auto& d = static_cast<DuetClient&>(c);
    std::vector<SnapshotArg> args = {SnapshotArg::of(TxnRange::closed(lo, hi))};
    (void)d.t.snapshot(args, &d.snap);
    return d.snap.size();
  }
  std::size_t range_packed(Client& c, const std::string& lo, const std::string& hi) override {
    const std::size_t n = range(c, lo, hi);
    auto& d = static_cast<DuetClient&>(c);
    if (!PackedSnapshot::pack(d.snap, &d.packed, g_pack_threads).ok()) std::abort();
    return n;
  }
  std::size_t points(Client& c, const std::vector<std::string>& keys) override {
    auto& d = static_cast<DuetClient&>(c);
    std::vector<SnapshotArg> args;
    args.reserve(keys.size());
    for (auto& k : keys) args.push_back(SnapshotArg::point(k));
    (void)d.t.snapshot(args, &d.snap);
    return d.snap.size();
  }
};

#ifdef DUET_BENCH_HAVE_ROCKSDB
std::string rocks_dir(const char* tag) {
  const std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  std::string d = base + "/duet-bench-txn-" + std::to_string(getpid()) + "-" + tag;
  std::filesystem::remove_all(d);
  return d;
}

struct RocksClient final : Client {
  rocksdb::DB* db;
  std::function<rocksdb::Transaction*(rocksdb::Transaction*)> make;
  rocksdb::Transaction* t = nullptr;
  rocksdb::ReadOptions ro;
  bool pessimistic;
  RocksClient(rocksdb::DB* d, std::function<rocksdb::Transaction*(rocksdb::Transaction*)> m, bool p)
      : db(d), make(std::move(m)), pessimistic(p) {}
  ~RocksClient() override { delete t; }
  void begin() override {
    t = make(t);  // reuses the transaction object
    ro.snapshot = t->GetSnapshot();
  }
  bool get(const std::string& k, std::string* v) override { return t->Get(ro, k, v).ok(); }
  bool put(const std::string& k, const std::string& v) override { return t->Put(k, v).ok(); }
  bool commit() override { return t->Commit().ok(); }
  void abort() override { (void)t->Rollback(); }
};

struct RocksSystem final : System {
  bool pessimistic;
  std::string dir;
  rocksdb::DB* db = nullptr;
  rocksdb::TransactionDB* tdb = nullptr;
  rocksdb::OptimisticTransactionDB* odb = nullptr;
  rocksdb::WriteOptions wo;
  explicit RocksSystem(bool p) : pessimistic(p), dir(rocks_dir(p ? "pess" : "opt")) {
    wo.disableWAL = true;
    rocksdb::Status s;
    if (p) {
      rocksdb::TransactionDBOptions to;
      s = rocksdb::TransactionDB::Open(memtable_only_rocksdb_options(), to, dir, &tdb);
      db = tdb;
    } else {
      s = rocksdb::OptimisticTransactionDB::Open(memtable_only_rocksdb_options(), dir, &odb);
      db = odb;
    }
    if (!s.ok()) {
      std::fprintf(stderr, "rocksdb open: %s\n", s.ToString().c_str());
      std::abort();
    }
  }
  ~RocksSystem() override {
    delete db;
    std::filesystem::remove_all(dir);
  }
  std::string name() const override { return pessimistic ? "rocksdb-pessimistic" : "rocksdb-optimistic"; }
  std::unique_ptr<Client> client() override {
    if (pessimistic) {
      return std::make_unique<RocksClient>(
          db,
          [this](rocksdb::Transaction* old) {
            rocksdb::TransactionOptions to;
            to.set_snapshot = true;
            to.lock_timeout = 10;  // ms; keys are locked in operation order, so deadlocks can arise
            to.deadlock_detect = true;
            return tdb->BeginTransaction(wo, to, old);
          },
          true);
    }
    return std::make_unique<RocksClient>(
        db,
        [this](rocksdb::Transaction* old) {
          rocksdb::OptimisticTransactionOptions to;
          to.set_snapshot = true;
          return odb->BeginTransaction(wo, to, old);
        },
        false);
  }
  std::size_t range(Client& c, const std::string& lo, const std::string& hi) override {
    auto& r = static_cast<RocksClient&>(c);
    std::unique_ptr<rocksdb::Iterator> it(r.t->GetIterator(r.ro));
    std::size_t n = 0;
    std::vector<char> keys, vals;
    for (it->Seek(lo); it->Valid() && it->key().compare(hi) <= 0; it->Next()) {
      keys.insert(keys.end(), it->key().data(), it->key().data() + it->key().size());
      vals.insert(vals.end(), it->value().data(), it->value().data() + it->value().size());
      ++n;
    }
    return n;
  }
  std::size_t points(Client& c, const std::vector<std::string>& keys) override {
    auto& r = static_cast<RocksClient&>(c);
    std::size_t n = 0;
    std::string v;
    for (auto& k : keys) n += r.t->Get(r.ro, k, &v).ok();
    return n;
  }
};
#endif

// ---------------------------------------------------------------- workload

struct Options {
  std::uint64_t keys = 1000000;
  std::vector<unsigned> threads = {2};
  std::uint64_t txns = 20000;  // per thread per set
  unsigned sets = 3;
  std::vector<std::string> experiments = {"ycsbt", "smallbank", "snapshot", "commit"};
  std::vector<std::string> systems = {"duet", "rocksdb-pessimistic", "rocksdb-optimistic"};
  std::string out = "bench/results/txn";
  bool quick = false;
  std::uint64_t seed = 42;
  double reader_seconds = 10;
  // YCSB-T's grid (empty: every value); --ops, --reads, --dists, --key-bytes pick a subset.
  std::vector<unsigned> ops, key_bytes;
  std::vector<double> reads, thetas;
  unsigned snapshot_threads = 0;  ///< duet's TxnConfig::snapshot_threads (0: its default)
  /// SNAPSHOT shapes to run: range (one range of all keys), ranges (1000), points (empty: all).
  std::vector<std::string> snapshot_shapes;
};

std::string key_of(std::uint64_t id, unsigned bytes) {
  // Big-endian id, so byte order is numeric order; 24-byte keys share a 16-byte prefix.
  std::string k(bytes, '\0');
  if (bytes > 8) std::memcpy(k.data(), "user:account:key", 16);
  for (int i = 0; i < 8; ++i) k[bytes - 1 - i] = static_cast<char>(id >> (8 * i));
  return k;
}

struct Zipf {  // YCSB's zipfian (Gray et al.), scrambled by a hash as YCSB does
  std::uint64_t n;
  double theta, alpha, zetan, eta;
  Zipf(std::uint64_t n_, double th) : n(n_), theta(th) {
    double z = 0;
    for (std::uint64_t i = 1; i <= n; ++i) z += 1.0 / std::pow(double(i), theta);
    zetan = z;
    const double zeta2 = 1 + 1 / std::pow(2.0, theta);
    alpha = 1 / (1 - theta);
    eta = (1 - std::pow(2.0 / n, 1 - theta)) / (1 - zeta2 / zetan);
  }
  std::uint64_t operator()(std::mt19937_64& r) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(r);
    const double uz = u * zetan;
    std::uint64_t v = uz < 1 ? 0 : uz < 1 + std::pow(0.5, theta) ? 1 : std::uint64_t(n * std::pow(eta * u - eta + 1, alpha));
    v = std::min(v, n - 1);
    std::uint64_t h = v * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    return h % n;
  }
};

struct Op {
  bool read;
  std::uint32_t key;
};
using TxnOps = std::vector<Op>;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Measure {
  double seconds = 0;
  std::uint64_t committed = 0, aborts = 0;
  std::vector<double> lat_us;
};

void load(System& s, std::uint64_t keys, unsigned kb, const std::string& value) {
  auto c = s.client();
  for (std::uint64_t i = 0; i < keys;) {
    c->begin();
    for (std::uint64_t j = 0; j < 1000 && i < keys; ++j, ++i) (void)c->put(key_of(i, kb), value);
    if (!c->commit()) std::abort();
  }
}

/// Runs every thread's transactions (retrying each until it commits) and measures.
template <class Body>
Measure run_threads(System& s, unsigned threads, std::uint64_t txns, Body body) {
  std::vector<std::unique_ptr<Client>> cs;
  for (unsigned t = 0; t < threads; ++t) cs.push_back(s.client());
  std::vector<Measure> per(threads);
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> th;
  for (unsigned t = 0; t < threads; ++t)
    th.emplace_back([&, t] {
      per[t].lat_us.reserve(txns);
      ready++;
      while (!go.load()) std::this_thread::yield();
      for (std::uint64_t i = 0; i < txns; ++i) {
        const auto t0 = Clock::now();
        for (;;) {
          if (body(*cs[t], t, i)) break;
          per[t].aborts++;
        }
        per[t].committed++;
        per[t].lat_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = Clock::now();
  go = true;
  for (auto& x : th) x.join();
  Measure m;
  m.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& p : per) {
    m.committed += p.committed;
    m.aborts += p.aborts;
    m.lat_us.insert(m.lat_us.end(), p.lat_us.begin(), p.lat_us.end());
  }
  return m;
}

std::unique_ptr<System> make_system(const std::string& name) {
  if (name == "duet") return std::make_unique<DuetSystem>();
#ifdef DUET_BENCH_HAVE_ROCKSDB
  if (name == "rocksdb-pessimistic") return std::make_unique<RocksSystem>(true);
  if (name == "rocksdb-optimistic") return std::make_unique<RocksSystem>(false);
#endif
  return nullptr;
}

struct Report {
  Json records = Json::array();
  void row(const std::string& exp, const std::string& cfg, const std::string& sys, unsigned thr,
           std::vector<Measure>& sets, Json extra = Json::object()) {
    std::vector<double> tput, abort_rate;
    std::vector<double> lat;
    for (auto& m : sets) {
      tput.push_back(m.committed / m.seconds);
      abort_rate.push_back(m.committed ? double(m.aborts) / double(m.aborts + m.committed) : 0);
      lat.insert(lat.end(), m.lat_us.begin(), m.lat_us.end());
    }
    const Summary t = summarize(tput), a = summarize(abort_rate);
    const double p50 = duet::bench::percentile(lat, 0.5), p99 = duet::bench::percentile(lat, 0.99),
                 p999 = duet::bench::percentile(lat, 0.999);
    std::printf("%-10s %-34s %-20s %3u %10.0f [%8.0f, %8.0f] %6.2f%% %8.1f %8.1f %9.1f\n", exp.c_str(), cfg.c_str(),
                sys.c_str(), thr, t.median, t.min, t.max, 100 * a.median, p50, p99, p999);
    std::fflush(stdout);
    Json r = Json::object();
    r.set("experiment", exp).set("config", cfg).set("system", sys).set("threads", thr);
    r.set("txn_per_s_median", t.median).set("txn_per_s_min", t.min).set("txn_per_s_max", t.max);
    r.set("abort_rate_median", a.median).set("p50_us", p50).set("p99_us", p99).set("p999_us", p999);
    r.set("sets", static_cast<unsigned>(sets.size())).set("extra", extra);
    records.push(r);
  }
};

// ---------------------------------------------------------------- experiments

void ycsbt(const Options& o, Report& rep) {
  const std::string value(100, 'v');
  std::vector<unsigned> opss = o.quick ? std::vector<unsigned>{4} : std::vector<unsigned>{4, 16};
  std::vector<double> reads = o.quick ? std::vector<double>{0.5} : std::vector<double>{0.5, 0.95};
  std::vector<double> thetas = o.quick ? std::vector<double>{0} : std::vector<double>{0, 0.99};
  std::vector<unsigned> kbs = o.quick ? std::vector<unsigned>{8} : std::vector<unsigned>{8, 24};
  auto pick = [](auto grid, const auto& want) { return want.empty() ? grid : want; };
  opss = pick(opss, o.ops);
  reads = pick(reads, o.reads);
  thetas = pick(thetas, o.thetas);
  kbs = pick(kbs, o.key_bytes);
  for (unsigned kb : kbs) {
    std::vector<std::unique_ptr<System>> systems;
    for (auto& n : o.systems)
      if (auto s = make_system(n)) {
        load(*s, o.keys, kb, value);
        systems.push_back(std::move(s));
      }
    for (double theta : thetas) {
      std::unique_ptr<Zipf> z;
      if (theta > 0) z = std::make_unique<Zipf>(o.keys, theta);
      for (unsigned ops : opss)
        for (double rd : reads)
          for (unsigned thr : o.threads) {
            // Pre-generated work: the same transactions for every system.
            std::vector<std::vector<TxnOps>> work(thr);
            for (unsigned t = 0; t < thr; ++t) {
              std::mt19937_64 rng(o.seed + t);
              work[t].resize(o.txns);
              for (auto& tx : work[t]) {
                tx.resize(ops);
                for (auto& op : tx) {
                  op.read = std::uniform_real_distribution<double>(0, 1)(rng) < rd;
                  op.key = static_cast<std::uint32_t>(z ? (*z)(rng) : rng() % o.keys);
                }
              }
            }
            char cfg[96];
            std::snprintf(cfg, sizeof cfg, "ops=%u read=%.0f%% %s keys=%llu kb=%u", ops, rd * 100,
                          theta > 0 ? "zipf0.99" : "uniform", (unsigned long long)o.keys, kb);
            for (auto& s : systems) {
              std::vector<Measure> sets;
              for (unsigned set = 0; set < o.sets; ++set)
                sets.push_back(run_threads(*s, thr, o.txns, [&](Client& c, unsigned t, std::uint64_t i) {
                  c.begin();
                  std::string v;
                  for (const Op& op : work[t][i]) {
                    const std::string k = key_of(op.key, kb);
                    if (op.read) (void)c.get(k, &v);
                    else if (!c.put(k, value)) {
                      c.abort();
                      return false;
                    }
                  }
                  return c.commit();
                }));
              rep.row("ycsbt", cfg, s->name(), thr, sets);
            }
          }
    }
  }
}

std::int64_t as_int(const std::string& v) {
  std::int64_t x = 0;
  if (v.size() == 8) std::memcpy(&x, v.data(), 8);
  return x;
}
std::string of_int(std::int64_t x) { return std::string(reinterpret_cast<const char*>(&x), 8); }

void smallbank(const Options& o, Report& rep) {
  const std::uint64_t n = o.keys;
  auto sav = [](std::uint64_t a) { return "s" + key_of(a, 8).substr(1); };
  auto chk = [](std::uint64_t a) { return "c" + key_of(a, 8).substr(1); };
  std::vector<std::unique_ptr<System>> systems;
  for (auto& name : o.systems)
    if (auto s = make_system(name)) {
      auto c = s->client();
      for (std::uint64_t i = 0; i < n;) {
        c->begin();
        for (int j = 0; j < 500 && i < n; ++j, ++i) {
          (void)c->put(sav(i), of_int(10000));
          (void)c->put(chk(i), of_int(10000));
        }
        if (!c->commit()) std::abort();
      }
      systems.push_back(std::move(s));
    }
  struct Tx {
    std::uint8_t kind;
    std::uint32_t a, b;
    std::int32_t v;
  };
  for (bool hot : {false, true})
    for (unsigned thr : o.threads) {
      std::vector<std::vector<Tx>> work(thr);
      for (unsigned t = 0; t < thr; ++t) {
        std::mt19937_64 rng(o.seed * 7 + t);
        auto acct = [&] {
          if (hot && rng() % 100 < 90) return static_cast<std::uint32_t>(rng() % 100);
          return static_cast<std::uint32_t>(rng() % n);
        };
        for (std::uint64_t i = 0; i < o.txns; ++i) {
          const unsigned p = rng() % 100;
          // Amalgamate 15, Balance 15, DepositChecking 15, SendPayment 25, TransactSavings 15,
          // WriteCheck 15.
          const std::uint8_t kind = p < 15 ? 0 : p < 30 ? 1 : p < 45 ? 2 : p < 70 ? 3 : p < 85 ? 4 : 5;
          std::uint32_t a = acct(), b = acct();
          while (b == a) b = acct();
          work[t].push_back(Tx{kind, a, b, static_cast<std::int32_t>(1 + rng() % 100)});
        }
      }
      const std::string cfg = std::string(hot ? "hotspot(90% on 100)" : "uniform") + " accounts=" + std::to_string(n);
      for (auto& s : systems) {
        std::vector<Measure> sets;
        for (unsigned set = 0; set < o.sets; ++set)
          sets.push_back(run_threads(*s, thr, o.txns, [&](Client& c, unsigned t, std::uint64_t i) {
            const Tx& x = work[t][i];
            std::string v1, v2, v3;
            c.begin();
            bool ok = true;
            switch (x.kind) {
              case 0: {  // Amalgamate
                c.get(sav(x.a), &v1);
                c.get(chk(x.a), &v2);
                c.get(chk(x.b), &v3);
                ok = c.put(sav(x.a), of_int(0)) && c.put(chk(x.a), of_int(0)) &&
                     c.put(chk(x.b), of_int(as_int(v3) + as_int(v1) + as_int(v2)));
                break;
              }
              case 1:  // Balance
                c.get(sav(x.a), &v1);
                c.get(chk(x.a), &v2);
                break;
              case 2:  // DepositChecking
                c.get(chk(x.a), &v1);
                ok = c.put(chk(x.a), of_int(as_int(v1) + x.v));
                break;
              case 3:  // SendPayment
                c.get(chk(x.a), &v1);
                c.get(chk(x.b), &v2);
                if (as_int(v1) >= x.v) ok = c.put(chk(x.a), of_int(as_int(v1) - x.v)) && c.put(chk(x.b), of_int(as_int(v2) + x.v));
                break;
              case 4:  // TransactSavings
                c.get(sav(x.a), &v1);
                ok = c.put(sav(x.a), of_int(as_int(v1) + x.v));
                break;
              default: {  // WriteCheck
                c.get(sav(x.a), &v1);
                c.get(chk(x.a), &v2);
                const std::int64_t pen = as_int(v1) + as_int(v2) < x.v ? 1 : 0;
                ok = c.put(chk(x.a), of_int(as_int(v2) - x.v - pen));
              }
            }
            if (!ok) {
              c.abort();
              return false;
            }
            return c.commit();
          }));
        rep.row("smallbank", cfg, s->name(), thr, sets);
      }
    }
}

void snapshot_exp(const Options& o, Report& rep) {
  const std::string value(100, 'v');
  const unsigned writers = std::max(1u, o.threads.back() > 1 ? o.threads.back() - 1 : 1u);
  for (auto& name : o.systems) {
    auto s = make_system(name);
    if (!s) continue;
    load(*s, o.keys, 8, value);
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> wcommits{0};
    std::vector<std::thread> ws;
    for (unsigned w = 0; w < writers; ++w)
      ws.emplace_back([&, w] {
        auto c = s->client();
        std::mt19937_64 rng(o.seed + 99 + w);
        while (!stop.load()) {
          c->begin();
          for (int j = 0; j < 4; ++j) (void)c->put(key_of(rng() % o.keys, 8), value);
          if (c->commit()) wcommits++;
        }
      });
    auto c = s->client();
    struct Shape {
      const char* name;
      const char* tag;  ///< --snapshot-shapes name
      std::function<std::size_t()> run;
    };
    std::vector<std::string> pts;
    for (std::uint64_t i = 0; i < o.keys; ++i) pts.push_back(key_of(i, 8));
    const std::uint64_t nr = 1000, per = std::max<std::uint64_t>(1, o.keys / nr);
    std::vector<Shape> shapes = {
        {"one range of all keys", "range", [&] { return s->range(*c, key_of(0, 8), key_of(o.keys - 1, 8)); }},
        {"1000 ranges", "ranges", [&] {
           std::size_t n = 0;
           for (std::uint64_t r = 0; r < nr; ++r) n += s->range(*c, key_of(r * per, 8), key_of(r * per + per - 1, 8));
           return n;
         }},
        {"all keys as points", "points", [&] { return s->points(*c, pts); }},
        {"one range of all keys, packed for the GPU", "packed",
         [&] { return s->range_packed(*c, key_of(0, 8), key_of(o.keys - 1, 8)); }},
    };
    for (auto& sh : shapes) {
      if (!o.snapshot_shapes.empty() &&
          std::find(o.snapshot_shapes.begin(), o.snapshot_shapes.end(), sh.tag) == o.snapshot_shapes.end())
        continue;
      // `packed` runs only when named, on duet (the peers have no pinned buffer).
      if (std::string_view(sh.tag) == "packed" && (o.snapshot_shapes.empty() || s->name() != "duet")) continue;
      std::vector<Measure> sets;
      std::vector<double> cpu_rate;  // pairs per second of the calling thread's CPU time
      std::size_t pairs = 0;
      for (unsigned set = 0; set < o.sets; ++set) {
        c->begin();
        const double c0 = thread_cpu_seconds();
        const auto t0 = Clock::now();
        pairs = sh.run();
        Measure m;
        m.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        cpu_rate.push_back(static_cast<double>(pairs) / std::max(1e-9, thread_cpu_seconds() - c0));
        c->abort();
        m.committed = pairs;  // pairs per second in the txn/s columns
        sets.push_back(m);
      }
      Json extra = Json::object();
      extra.set("pairs", static_cast<unsigned long long>(pairs)).set("writer_threads", writers).set("unit", "pairs/s");
      // On a shared machine wall time counts time the reader was not running; the calling
      // thread's CPU time does not (it leaves out the pool threads' time: exact for one thread).
      const Summary cs = summarize(cpu_rate);
      extra.set("calling_thread_cpu_pairs_per_s_median", cs.median).set("calling_thread_cpu_pairs_per_s_min", cs.min)
          .set("calling_thread_cpu_pairs_per_s_max", cs.max);
      std::printf("%-10s %-34s calling thread's CPU time: %.0f pairs/s [%.0f, %.0f]\n", "snapshot", sh.tag, cs.median,
                  cs.min, cs.max);
      rep.row("snapshot", std::string(sh.name) + " keys=" + std::to_string(o.keys), s->name(), 1, sets, extra);
    }
    stop = true;
    for (auto& w : ws) w.join();
  }
}

/// `commit`: disjoint writers at 1, 2, 4, .. up to the largest --threads, then the ts source.
/// `disjoint` (only_listed): disjoint writers at exactly the --threads counts and nothing else,
/// so that a profile of one thread count is not diluted by the others or by the ts loop.
void commit_exp(const Options& o, Report& rep, bool only_listed = false) {
  const std::string value(100, 'v');
  const unsigned maxt = *std::max_element(o.threads.begin(), o.threads.end());
  std::vector<unsigned> counts;
  if (only_listed) counts = o.threads;
  else
    for (unsigned thr = 1; thr <= maxt; thr *= 2) counts.push_back(thr);
  for (auto& name : o.systems) {
    auto s = make_system(name);
    if (!s) continue;
    for (unsigned thr : counts) {
      std::vector<Measure> sets;
      for (unsigned set = 0; set < o.sets; ++set)
        sets.push_back(run_threads(*s, thr, o.txns, [&](Client& c, unsigned t, std::uint64_t i) {
          c.begin();
          (void)c.put(key_of((std::uint64_t(t) << 32) | (i % 1024), 8), value);
          return c.commit();
        }));
      rep.row("commit", "disjoint writers, 1 key per txn", s->name(), thr, sets);
    }
  }
  if (only_listed) return;
  // The timestamp sources alone, at 1, 2, 4, .. threads: `take` is one timestamp.
  auto alone = [&](const char* cfg, auto take) {
    for (unsigned thr = 1; thr <= maxt; thr *= 2) {
      std::vector<Measure> sets;
      for (unsigned set = 0; set < o.sets; ++set) {
        std::vector<std::thread> th;
        std::atomic<std::uint64_t> sink{0};
        const std::uint64_t per = o.txns * 20;
        const auto t0 = Clock::now();
        for (unsigned t = 0; t < thr; ++t)
          th.emplace_back([&] {
            std::uint64_t x = 0;
            for (std::uint64_t i = 0; i < per; ++i) x += take();
            sink.fetch_add(x, std::memory_order_relaxed);
          });
        for (auto& x : th) x.join();
        Measure m;
        m.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        m.committed = per * thr;
        sets.push_back(m);
      }
      rep.row("commit", cfg, "duet", thr, sets);
    }
  };
  // The counter clock: one atomic counter incremented by every thread.
  std::atomic<std::uint64_t> counter{0};
  alone("ts source alone (atomic fetch_add)", [&] { return counter.fetch_add(1, std::memory_order_seq_cst); });
#if defined(__x86_64__)
  // The TSC clock: a fenced TSC read per timestamp (no shared line).
  alone("ts source alone (fenced TSC read)", duet::clock::fenced_tsc);
#endif
}

/// `clock`: the skew the TSC clock's boundary must cover (TxnConfig::tsc_boundary_cycles): ORDO's
/// bound (clock::ordo_pair_bound, 2,000 rounds each way) for every pair of the first 16 CPUs this
/// process may run on, whose largest is the least boundary this machine needs; the boundary a
/// keyspace measures (clock::measure_ordo_boundary, 300 rounds); the TSC's rate against
/// steady_clock.
void clock_exp(const Options& o, Report& rep) {
#if !defined(__x86_64__)
  (void)o;
  (void)rep;
  std::printf("clock: no TSC on this CPU (skipped)\n");
#else
  const std::vector<int> cpus = duet::clock::allowed_cpus(16);
  const int rounds = o.quick ? 200 : 2000;
  std::vector<double> bounds;
  bool pinned = true;
  std::int64_t worst = -1;
  int worst_a = -1, worst_b = -1;
  for (std::size_t i = 0; i < cpus.size(); ++i)
    for (std::size_t j = i + 1; j < cpus.size(); ++j) {
      const std::int64_t b = duet::clock::ordo_pair_bound(cpus[i], cpus[j], rounds, &pinned);
      bounds.push_back(static_cast<double>(b));
      if (b > worst) worst = b, worst_a = cpus[i], worst_b = cpus[j];
    }
  std::string detail;
  const std::uint64_t measured = duet::clock::measure_ordo_boundary(&detail);
  const auto w0 = Clock::now();
  const std::uint64_t c0 = duet::clock::fenced_tsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(o.quick ? 20 : 200));
  const std::uint64_t c1 = duet::clock::fenced_tsc();
  const double ghz = double(c1 - c0) / std::chrono::duration<double, std::nano>(Clock::now() - w0).count();
  std::sort(bounds.begin(), bounds.end());
  const double med = bounds.empty() ? 0 : bounds[bounds.size() / 2];
  std::printf("clock      %zu CPU pairs%s, ORDO bound per pair: min %.0f, median %.0f, max %lld cycles (CPUs %d, %d); "
              "TSC %.3f GHz; a keyspace's measurement: %s\n",
              bounds.size(), pinned ? "" : " (not pinned)", bounds.empty() ? 0.0 : bounds.front(), med,
              static_cast<long long>(worst), worst_a, worst_b, ghz, detail.c_str());
  Json r = Json::object();
  r.set("experiment", "clock").set("config", "ORDO bound per pair of CPUs (the larger direction's least one-way TSC difference)");
  r.set("pairs", static_cast<unsigned>(bounds.size())).set("rounds_per_pair", rounds).set("pinned", pinned);
  r.set("min_cycles", bounds.empty() ? 0.0 : bounds.front()).set("median_cycles", med);
  r.set("max_cycles", static_cast<double>(worst)).set("max_pair", Json::array_of(std::vector<int>{worst_a, worst_b}));
  r.set("tsc_ghz", ghz).set("measured_boundary_cycles", static_cast<unsigned long long>(measured));
  rep.records.push(r);
#endif
}

/// Writers (the largest thread count less one, at least one) commit 4-key transactions on
/// uniform keys for D seconds alone, then D seconds while one transaction stays open, reading a
/// random key every millisecond (so collection cannot free what it could see). Reports both
/// rates per set and the reader's cost, 1 - beside / alone.
void longreader_exp(const Options& o, Report& rep) {
  const std::string value(100, 'v');
  const unsigned writers = std::max(1u, *std::max_element(o.threads.begin(), o.threads.end()) - 1);
  const double d = o.quick ? 0.2 : o.reader_seconds;
  for (auto& name : o.systems) {
    auto s = make_system(name);
    if (!s) continue;
    load(*s, o.keys, 8, value);
    std::vector<Measure> alone, beside;
    for (unsigned set = 0; set < o.sets; ++set) {
      for (bool with_reader : {false, true}) {
        std::atomic<bool> stop{false};
        std::atomic<std::uint64_t> commits{0}, aborts{0};
        std::vector<std::thread> ws;
        std::thread reader;
        if (with_reader)
          reader = std::thread([&] {
            auto c = s->client();
            std::mt19937_64 rng(o.seed + 7 + set);
            std::string v;
            c->begin();
            while (!stop.load()) {
              (void)c->get(key_of(rng() % o.keys, 8), &v);
              std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            c->abort();
          });
        const auto t0 = Clock::now();
        for (unsigned w = 0; w < writers; ++w)
          ws.emplace_back([&, w] {
            auto c = s->client();
            std::mt19937_64 rng(o.seed + 1000 * set + w);
            std::uint64_t mine = 0, lost = 0;
            while (!stop.load(std::memory_order_relaxed)) {
              c->begin();
              bool ok = true;
              for (int j = 0; j < 4 && ok; ++j) ok = c->put(key_of(rng() % o.keys, 8), value);
              if (ok && c->commit()) ++mine;
              else {
                if (ok) ++lost;
                else c->abort(), ++lost;
              }
            }
            commits += mine;
            aborts += lost;
          });
        std::this_thread::sleep_for(std::chrono::duration<double>(d));
        stop = true;
        for (auto& w : ws) w.join();
        Measure m;
        m.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        if (reader.joinable()) reader.join();
        m.committed = commits.load();
        m.aborts = aborts.load();
        (with_reader ? beside : alone).push_back(m);
      }
    }
    const double a = summarize([&] {
      std::vector<double> v;
      for (auto& m : alone) v.push_back(m.committed / m.seconds);
      return v;
    }()).median;
    const double b = summarize([&] {
      std::vector<double> v;
      for (auto& m : beside) v.push_back(m.committed / m.seconds);
      return v;
    }()).median;
    Json extra = Json::object();
    extra.set("reader_seconds", d).set("writer_threads", writers);
    rep.row("longreader", "writers alone, 4-key txns, keys=" + std::to_string(o.keys), s->name(), writers, alone, extra);
    extra.set("cost_to_writers", a > 0 ? 1 - b / a : 0.0);
    rep.row("longreader", "writers beside one open reader, keys=" + std::to_string(o.keys), s->name(), writers, beside,
            extra);
    std::printf("longreader %s: a %.1f s reader costs %u writers %.1f%% of their commits\n", s->name().c_str(), d, writers,
                a > 0 ? 100 * (1 - b / a) : 0.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string err;
  bool ok = scan_flags(argc, argv, &help, &o.quick, &err, [&](const std::string& f, const std::string& v) {
    if (f == "--keys") {
      auto x = parse_count(v);
      if (!x || *x == 0) return err = "bad --keys", false;
      o.keys = *x;
    } else if (f == "--threads") {
      o.threads.clear();
      for (auto& t : split_list(v)) {
        auto x = parse_count(t);
        if (!x || *x == 0 || *x > 1024) return err = "bad --threads", false;
        o.threads.push_back(static_cast<unsigned>(*x));
      }
    } else if (f == "--txns") {
      auto x = parse_count(v);
      if (!x || *x == 0) return err = "bad --txns", false;
      o.txns = *x;
    } else if (f == "--sets") {
      auto x = parse_count(v);
      if (!x || *x == 0) return err = "bad --sets", false;
      o.sets = static_cast<unsigned>(*x);
    } else if (f == "--experiments") {
      o.experiments = split_list(v);
    } else if (f == "--reader-seconds") {
      char* end = nullptr;
      o.reader_seconds = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(o.reader_seconds > 0)) return err = "bad --reader-seconds", false;
    } else if (f == "--ops" || f == "--key-bytes") {
      auto& dst = f == "--ops" ? o.ops : o.key_bytes;
      dst.clear();
      for (auto& t : split_list(v)) {
        auto x = parse_count(t);
        if (!x || *x == 0 || *x > 4096) return err = "bad " + f, false;
        dst.push_back(static_cast<unsigned>(*x));
      }
    } else if (f == "--snapshot-threads") {
      auto x = parse_count(v);
      if (!x || *x == 0 || *x > 256) return err = "bad --snapshot-threads", false;
      o.snapshot_threads = static_cast<unsigned>(*x);
    } else if (f == "--pack-threads") {
      auto x = parse_count(v);
      if (!x || *x > 256) return err = "bad --pack-threads", false;
      g_pack_threads = static_cast<unsigned>(*x);
    } else if (f == "--snapshot-shapes") {
      o.snapshot_shapes = split_list(v);
      for (auto& t : o.snapshot_shapes)
        if (t != "range" && t != "ranges" && t != "points" && t != "packed")
          return err = "bad --snapshot-shapes (range, ranges, points, packed)", false;
    } else if (f == "--reads") {  // percentages
      o.reads.clear();
      for (auto& t : split_list(v)) {
        auto x = parse_count(t);
        if (!x || *x > 100) return err = "bad --reads", false;
        o.reads.push_back(static_cast<double>(*x) / 100);
      }
    } else if (f == "--dists") {  // uniform, zipf (0.99)
      o.thetas.clear();
      for (auto& t : split_list(v)) {
        if (t == "uniform") o.thetas.push_back(0);
        else if (t == "zipf") o.thetas.push_back(0.99);
        else return err = "bad --dists (uniform, zipf)", false;
      }
    } else if (f == "--clock") {
      if (!parse_txn_clock(v, &g_clock).ok()) return err = "bad --clock (counter, tsc)", false;
    } else if (f == "--tsc-boundary") {
      auto x = parse_count(v);
      if (!x || *x > (1u << 20)) return err = "bad --tsc-boundary (0 .. 2^20 cycles)", false;
      g_tsc_boundary = *x;
    } else if (f == "--systems") {
      o.systems = split_list(v);
    } else if (f == "--out") {
      o.out = v;
    } else {
      return err = "unknown flag " + f, false;
    }
    return true;
  });
  if (help || !ok) {
    if (!ok) std::fprintf(stderr, "duet_bench_txn: %s\n", err.c_str());
    std::printf(
        "duet_bench_txn [--quick] [--keys N] [--threads 1,2,..] [--txns N per thread per set] [--sets N]\n"
        "               [--experiments ycsbt,smallbank,snapshot,commit,disjoint,longreader,clock] [--reader-seconds S]\n"
        "               [--clock counter|tsc] [--tsc-boundary CYCLES]\n"
        "               [--systems duet,rocksdb-pessimistic,rocksdb-optimistic] [--out DIR]\n"
        "               [--ops 4,16] [--reads 50,95] [--dists uniform,zipf] [--key-bytes 8,24]\n"
        "               [--snapshot-threads N] [--snapshot-shapes range,ranges,points,packed] [--pack-threads N]\n");
    return ok ? 0 : 2;
  }
  g_snapshot_threads = o.snapshot_threads;
  if (o.quick) {
    o.keys = std::min<std::uint64_t>(o.keys, 100000);
    o.txns = std::min<std::uint64_t>(o.txns, 2000);
    o.sets = 1;
  }
#ifndef DUET_BENCH_HAVE_ROCKSDB
  std::printf("rocksdb peers unavailable in this build (librocksdb-dev not found)\n");
#endif
  const std::string date = utc_now();
  Json config = Json::object();
  config.set("keys", static_cast<unsigned long long>(o.keys)).set("threads", Json::array_of(o.threads));
  config.set("txns_per_thread_per_set", static_cast<unsigned long long>(o.txns)).set("sets", o.sets);
  config.set("experiments", Json::array_of(o.experiments)).set("systems", Json::array_of(o.systems));
  config.set("quick", o.quick).set("seed", static_cast<unsigned long long>(o.seed));
  config.set("value_bytes", 100).set("reader_seconds", o.reader_seconds);
  config.set("snapshot_threads", o.snapshot_threads);
  config.set("pack_threads", g_pack_threads);
  config.set("clock", txn_clock_name(g_clock));
  if (g_clock == TxnClock::kTsc) {
    if (g_tsc_boundary == TxnConfig::kMeasureBoundary)
      config.set("tsc_boundary_cycles", "measured: " + std::to_string(duet::clock::measure_ordo_boundary(nullptr)));
    else config.set("tsc_boundary_cycles", static_cast<unsigned long long>(g_tsc_boundary));
  }
  if (!o.snapshot_shapes.empty()) config.set("snapshot_shapes", Json::array_of(o.snapshot_shapes));
  if (!o.ops.empty()) config.set("ycsbt_ops", Json::array_of(o.ops));
  if (!o.key_bytes.empty()) config.set("ycsbt_key_bytes", Json::array_of(o.key_bytes));
  if (!o.reads.empty()) config.set("ycsbt_reads", Json::array_of(o.reads));
  if (!o.thetas.empty()) config.set("ycsbt_thetas", Json::array_of(o.thetas));
  config.set("rocksdb", "7.8 (Debian librocksdb-dev), memtable only (8 GiB write buffer, no flush, no compaction), "
                        "WAL off (disableWAL), set_snapshot=true; pessimistic: lock_timeout 10 ms, deadlock detection");
  config.set("retries", "a transaction that aborts is retried until it commits; latency covers its retries");
  std::printf("%-10s %-34s %-20s %3s %10s %21s %7s %8s %8s %9s\n", "exp", "config", "system", "thr", "txn/s",
              "[min, max]", "abort", "p50 us", "p99 us", "p999 us");
  Report rep;
  for (auto& e : o.experiments) {
    if (e == "ycsbt") ycsbt(o, rep);
    else if (e == "smallbank") smallbank(o, rep);
    else if (e == "snapshot") snapshot_exp(o, rep);
    else if (e == "commit") commit_exp(o, rep);
    else if (e == "disjoint") commit_exp(o, rep, true);
    else if (e == "longreader") longreader_exp(o, rep);
    else if (e == "clock") clock_exp(o, rep);
    else std::fprintf(stderr, "unknown experiment %s (skipped)\n", e.c_str());
  }
  const Json doc = result_document("txn", "cpu", commit_id(DUET_SOURCE_DIR), date, config, rep.records);
  const std::string path = o.out + "/txn-" + utc_now(true) + ".json";
  if (!write_result_file(path, doc, &err)) {
    std::fprintf(stderr, "duet_bench_txn: %s\n", err.c_str());
    return 1;
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
