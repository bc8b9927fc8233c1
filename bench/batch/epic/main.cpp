// duet_bench_epic: Epic on YCSB A/B/C/F (plain and field-split, Zipf θ), against the serial executor
// on identical pre-generated epochs. Systems: serial (one thread, single-version tables),
// epic-twin (Epic-CPU with host indexing and planning, the CPU twin: the CI path), epic-twin-counter
// (the twin handing txns to its threads from one counter in serial order, whatever --exec-order
// says: the order before per-thread queues), epic-cpu
// (Epic-CPU: indexing on L-Slab and planning on the GPU, plans copied to the host, CPU threads),
// epic-cpu-hostidx (host indexing, GPU planning, CPU threads: the earlier Epic-CPU), epic-gpu
// (indexing on L-Slab, planning and execution on the GPU; packed transfers), epic-gpu-perarray
// (the same with a pageable copy per array and 16-byte keys: the transfers before packing) and
// epic-gpu-hostidx (GPU epochs indexed on the host), and rocksdb (RocksDB 7.8's TransactionDB in
// memory, WAL off, the same procedures on the same threads: rocksdb_peer.hpp). Per epoch it times indexing, transfers,
// planning, execution and GC; throughput is reported two ways:
//   formula_ops_per_s  txns / (index + transfers + planning + execution), the artifact's formula
//   wall_ops_per_s     txns / the epoch's whole wall time (adds GC and host bookkeeping)
// as the median over epochs 2..N with min and max. JSON goes to bench/results/epic/.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "batch/epic/engine.hpp"
#include "batch/epic/epochs.hpp"
#include "batch/epic/gpu.hpp"
#include "batch/epic/serial.hpp"
#include "batch/epic/tpcc_gen.hpp"
#include "batch/epic/workloads.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "duet/batch.hpp"
#ifdef DUET_HAVE_ROCKSDB
#include "bench/batch/epic/rocksdb_peer.hpp"
#include "tests/checkers/epic_serial_checker.hpp"
#endif

using namespace duet::batch::epic;
namespace b = duet::bench;

namespace {

const char* layout_name(TpccLayout l) { return l == TpccLayout::kSplit ? "split" : "records"; }

struct Config {
  std::uint64_t records = 1000000;
  std::size_t epoch = 100000;
  int epochs = 6;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> workloads{"A", "B", "C", "F"};
  std::vector<double> thetas{0.0, 0.99};
  std::vector<int> splits{0, 1};
  /// --pieces: YCSB txns whole (0) and/or with each op a piece (1, Epic's piece splitting; the
  /// Epic systems, the front ends among them, run the pieces; serial and rocksdb the whole txns).
  std::vector<int> pieces{0};
  /// epic-gpu indexes on the GPU (L-Slab); epic-gpu-hostidx is the same GPU epoch with host indexing.
  std::vector<std::string> systems{"serial", "epic-twin", "epic-cpu", "epic-cpu-hostidx", "epic-gpu", "epic-gpu-perarray",
                                   "epic-gpu-hostidx", "rocksdb"};
  std::string out;
  std::uint32_t np = 0;  ///< > 0: TPC-C with this many warehouses instead of YCSB
  bool full = false;     ///< TPC-C's full mix instead of NP
  /// TPC-C's warehouse, district and customer rows one item per field (Epic's field splitting).
  TpccLayout layout = TpccLayout::kSplit;
  std::vector<std::size_t> sizes;  ///< --epoch-sizes: one pass per epoch size
  std::vector<double> abort_rates{0.0};  ///< --abort-rates: YCSB's injected abort shares
  unsigned backoff_ns = 1024;  ///< the GPU executor's longest sleep between polls
  bool gather_reads = true;    ///< the GPU executor waits for a txn's reads at once (GpuRunner::set_gather_reads)
  ExecOrder exec_order = ExecOrder::kAuto;  ///< --exec-order: how CPU engines hand txns to threads
  int submitters = 1;  ///< --submitters: threads submitting to the epic-submit* front ends (submit_step)
};

/// The GPU executor's settings from the command line (every GPU runner of a run gets the same).
void tune_gpu(GpuRunner& r, const Config& c) {
  r.set_max_backoff_ns(c.backoff_ns);
  r.set_gather_reads(c.gather_reads);
}

struct Sample {
  std::vector<double> formula, wall;
  std::vector<double> index, transfer, plan, exec, gc;
  std::vector<double> retries;  ///< rocksdb: txns retried after a lock timeout or deadlock
  std::vector<double> exec_threads;  ///< CPU engines: threads that executed each epoch (wait fallback)
  std::vector<double> waited;        ///< CPU engines: ms the executing threads spent in long waits
  std::vector<double> affinity, cross;  ///< CPU engines: per-thread queues used (1/0), kAuto's cross share
  std::vector<double> latency_us;    ///< epic-submit: each txn's submit-to-result time (epochs 2..N)
  /// epic-submit-gpuexec: per epoch, 1 when the GPU executed it, 0 when the CPU threads did.
  std::vector<double> on_device;
  std::vector<double> pack, h2d, d2h;  ///< GPU epochs: the transfer phase's parts per epoch (ms)
  /// epic-submit*: per epoch (ms), the submitting threads' time to queue every txn, then the
  /// epoch thread's take, engine and resolve (EpochsStats); the rest of the wall time is the
  /// submitters' collection of results and the threads' hand-offs.
  std::vector<double> submit, take, engine, resolve;
};

/// GPU epochs: the transfer phase per epoch, split (host packing is part of h2d).
void set_transfer_split(b::Json& r, const Sample& s) {
  if (s.h2d.empty()) return;
  auto arr = [](const std::vector<double>& xs) {
    b::Json a = b::Json::array();
    for (double x : xs) a.push(x);
    return a;
  };
  r.set("pack_ms_per_epoch", arr(s.pack)).set("h2d_ms_per_epoch", arr(s.h2d)).set("d2h_ms_per_epoch", arr(s.d2h));
}

/// Per epoch, the threads that executed it (for the JSON), or nothing for systems without.
void set_exec_threads(b::Json& r, const Sample& s) {
  if (s.exec_threads.empty()) return;
  b::Json a = b::Json::array();
  for (double x : s.exec_threads) a.push(static_cast<std::uint64_t>(x));
  r.set("exec_threads_per_epoch", a);
  b::Json w = b::Json::array();
  for (double x : s.waited) w.push(x);
  r.set("long_wait_ms_per_epoch", w);
  b::Json a2 = b::Json::array(), x = b::Json::array();
  for (double v : s.affinity) a2.push(static_cast<std::uint64_t>(v));
  for (double v : s.cross) x.push(v);
  r.set("exec_affinity_per_epoch", a2).set("cross_share_per_epoch", x);
}

/// epic-submit's per-txn latency (submit to result), for the JSON and the table; "" for others.
std::string set_latency(b::Json& r, const Sample& s, int submitters) {
  if (s.latency_us.empty()) return "";
  std::vector<double> lat = s.latency_us;
  const double q[2] = {b::percentile(lat, 0.5), b::percentile(lat, 0.99)};
  r.set("latency_us_p50", q[0]).set("latency_us_p99", q[1]);
  r.set("latency", "per txn, from submit() to its future's result, " + std::to_string(submitters) +
                       " submitting thread(s), epochs 2..N");
  char buf[96];
  std::snprintf(buf, sizeof buf, "  latency p50 %.0f us, p99 %.0f us", q[0], q[1]);
  return buf;
}

/// epic-submit's front-end phases (Sample::submit..resolve), medians of epochs 2..N, for the JSON
/// and the table; "" for others.
std::string set_front_phases(b::Json& r, const Sample& s, int submitters) {
  if (s.submit.size() < 2) return "";
  auto med = [](const std::vector<double>& xs) { return b::summarize(std::vector<double>(xs.begin() + 1, xs.end())).median; };
  const double total = med(s.exec);
  const double sub = med(s.submit), take = med(s.take), eng = med(s.engine), res = med(s.resolve);
  r.set("submitters", submitters).set("submit_ms_median", sub).set("take_ms_median", take);
  r.set("engine_ms_median", eng).set("resolve_ms_median", res);
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "  front end, %d submitter(s), ms per epoch (medians): submit %.1f, take %.1f, engine %.1f, "
                "resolve %.1f, of %.1f in all",
                submitters, sub, take, eng, res, total);
  return buf;
}

/// epic-submit-gpuexec's sides, one per epoch (1: the GPU), for the JSON and the table; "" for others.
std::string set_sides(b::Json& r, const Sample& s) {
  if (s.on_device.empty()) return "";
  b::Json a = b::Json::array();
  int on = 0;
  for (double x : s.on_device) a.push(static_cast<std::uint64_t>(x)), on += x > 0;
  r.set("on_device_per_epoch", a);
  return "  executed on the GPU: " + std::to_string(on) + " of " + std::to_string(s.on_device.size()) + " epochs";
}

/// Threads that submit to a front end for epic-submit with --submitters N: run(f) calls f(k) on
/// thread k for every k and returns once all have returned. The threads live as long as the pool,
/// so each keeps its one queue of the front end (Epochs queues by submitting thread).
class SubmitterPool {
 public:
  explicit SubmitterPool(int n) {
    for (int k = 0; k < n; ++k) threads_.emplace_back([this, k] { loop(k); });
  }
  ~SubmitterPool() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()); }
  void run(const std::function<void(int)>& f) {
    std::unique_lock<std::mutex> lk(m_);
    f_ = &f, left_ = size(), ++generation_;
    cv_.notify_all();
    done_.wait(lk, [this] { return left_ == 0; });
    f_ = nullptr;
  }

 private:
  void loop(int k) {
    std::uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> lk(m_);
      cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const std::function<void(int)>* f = f_;
      lk.unlock();
      (*f)(k);
      lk.lock();
      if (--left_ == 0) done_.notify_one();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* f_ = nullptr;
  int left_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

/// epic-submit: the epoch's txns submitted one by one through the Epochs front end (a txn in
/// pieces through submit_pieces), then a flush, which closes the epoch: it runs the same epochs
/// as epic-twin (up to 2^19 entries, the front end's largest epoch; a batch with more pieces runs
/// as two epochs). With `submitters` > 1, thread k of a SubmitterPool submits the k-th of that
/// many contiguous runs of the epoch's txns and then collects their results; the threads first
/// submitted in the order 0, 1, .. (enforced on their first txn), and an epoch takes the queues
/// in that order, so the serial order is the batch's and the results are checked as with one.
/// The wall time covers submission, the epoch and collecting every result. Throughput and
/// latency count txns.
template <class Procs>
std::function<bool(const Batch&, Sample&)> submit_step(Engine<Procs>* engine, int submitters, std::string* error) {
  auto front = std::make_shared<std::unique_ptr<Epochs<Procs>>>();
  auto pool = std::make_shared<std::unique_ptr<SubmitterPool>>();
  auto registered = std::make_shared<std::atomic<int>>(0);  // submitters that made their first submission
  auto seen = std::make_shared<int>(0);
  auto device_before = std::make_shared<std::uint64_t>(0);  // the engine's device epochs before this one
  return [engine, submitters, error, front, pool, registered, seen, device_before](const Batch& e, Sample& s) {
    // Epochs close on the flush below (a size would have to match every epoch's entries, which
    // vary with the pieces).
    if (!*front) *front = std::make_unique<Epochs<Procs>>(*engine, EpochsConfig{kMaxTxns / 2, std::chrono::seconds(10)});
    if (submitters > 1 && !*pool) *pool = std::make_unique<SubmitterPool>(submitters);
    const auto later_piece = [&e](std::size_t u) { return u < e.piece.size() && e.piece[u] != 0; };
    std::vector<std::size_t> first_entry;  // per txn, its first entry; then the end
    for (std::size_t u = 0; u < e.size(); ++u)
      if (!later_piece(u)) first_entry.push_back(u);
    const std::size_t txns = first_entry.size();
    first_entry.push_back(e.size());
    std::vector<std::future<TxnResult>> fs(txns);
    std::vector<std::chrono::steady_clock::time_point> at(txns);
    const std::span<const Key> keys(e.keys);
    const std::span<const std::uint32_t> all_args(e.args);
    const int n = std::max(1, submitters);
    // Submitter k's txns: [run(k), run(k + 1)); the empty runs (fewer txns than submitters) last.
    const auto run = [&](int k) { return txns / n * k + std::min<std::size_t>(k, txns % n); };
    const auto submit_run = [&](int k) {
      std::vector<duet::EpicPiece> pieces;  // views into e's arrays, as a caller of EpicDatabase passes spans
      for (std::size_t t = run(k); t < run(k + 1); ++t) {
        // Queues are taken in the order of first submission: thread k's first txn waits for k - 1's.
        const bool registers = n > 1 && t == run(k) && registered->load(std::memory_order_acquire) <= k;
        if (registers)
          while (registered->load(std::memory_order_acquire) < k) std::this_thread::yield();
        pieces.clear();
        for (std::size_t u = first_entry[t]; u < first_entry[t + 1]; ++u) {
          const std::uint32_t b0 = e.op_begin[u], b1 = e.op_begin[u + 1], r1 = b0 + e.nreads[u];
          pieces.push_back({e.proc[u], keys.subspan(b0, r1 - b0), keys.subspan(r1, b1 - r1),
                            all_args.subspan(e.arg_begin[u], e.arg_begin[u + 1] - e.arg_begin[u])});
        }
        at[t] = std::chrono::steady_clock::now();
        const duet::EpicPiece& p = pieces[0];
        if (pieces.size() == 1) fs[t] = (*front)->submit(p.proc, p.reads, p.writes, p.args);
        else fs[t] = (*front)->submit_piece_views(pieces);
        if (registers) registered->store(k + 1, std::memory_order_release);
      }
    };
    std::atomic<bool> failed{false};
    std::vector<std::vector<double>> latency(n);
    const auto collect_run = [&](int k) {
      for (std::size_t t = run(k); t < run(k + 1); ++t) {
        const TxnResult r = fs[t].get();
        if (!r.status.ok()) {
          if (!failed.exchange(true)) {
            *error = r.status.message();
            std::cerr << "epic-submit: txn " << t << ": " << *error << "\n";
          }
          return;
        }
        if (*seen > 0)
          latency[k].push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - at[t]).count());
      }
    };
    const EpochsStats before = (*front)->stats();
    const auto t0 = std::chrono::steady_clock::now();
    const auto on_submitters = [&](const std::function<void(int)>& f) { n == 1 ? f(0) : (*pool)->run(f); };
    on_submitters(submit_run);
    const double submit_ms = ms_since(t0);
    (*front)->flush();
    on_submitters(collect_run);
    const double ms = ms_since(t0);
    const EpochsStats after = (*front)->stats();
    s.submit.push_back(submit_ms), s.take.push_back(after.take_ms - before.take_ms);
    s.engine.push_back(after.engine_ms - before.engine_ms), s.resolve.push_back(after.resolve_ms - before.resolve_ms);
    if (failed) return false;
    for (const auto& l : latency) s.latency_us.insert(s.latency_us.end(), l.begin(), l.end());
    ++*seen;
    if (engine->has_device_executor()) {
      s.on_device.push_back(engine->device_epochs() != *device_before ? 1 : 0);
      *device_before = engine->device_epochs();
    }
    s.formula.push_back(txns / ms * 1e3);
    s.wall.push_back(txns / ms * 1e3);
    s.index.push_back(0), s.transfer.push_back(0), s.plan.push_back(0), s.exec.push_back(ms), s.gc.push_back(0);
    return true;
  };
}

/// The RocksDB peer's run of one batch (empty when the peer is not built or not selected):
/// true on success, with the retried txns in *retries.
using PeerRun = std::function<bool(const Batch&, std::uint64_t* retries, std::string* err)>;

/// The peer's memtable bound: never reached in practice (the memtable grows in 1 MiB blocks as
/// used), so no flush runs during a measurement.
constexpr std::size_t kPeerMemtable = std::size_t{8} << 30;

void load(Database& db, SerialStore* s, const TableSpec& spec) {
  std::vector<std::uint32_t> d(spec.record_words);
  for (std::uint64_t k = 0; k < spec.capacity; ++k) {
    for (std::uint32_t i = 0; i < d.size(); ++i) d[i] = ycsb_initial(k, i);
    if (s) s->put(0, k, d.data());
    else db.load(0, k, d.data());
  }
}

/// A GPU system: its name, its uploaded database and the runner that holds it.
struct GpuSystem {
  std::string name;
  Database* db;
  GpuRunner* runner;
};

/// Where each system indexes, plans, executes, and how its inputs cross the bus (for the JSON).
/// An Epic-CPU engine: `threads` CPU threads over `specs`, indexing and planning on a GPU runner
/// of its own (a runner holds one index); with `small_on_host`, epochs under EpicDatabase's
/// default min_device_epoch_ops plan on the host, as EpicDatabase does. Null without a GPU.
template <class Procs>
std::unique_ptr<Engine<Procs>> epic_cpu_engine(const std::vector<TableSpec>& specs, int threads, ProcSet set,
                                               bool small_on_host) {
  std::string why;
  std::shared_ptr<GpuRunner> runner(make_gpu_runner(set, &why).release());
  if (!runner) return nullptr;
  runner->set_host_threads(threads);
  auto e = std::make_unique<Engine<Procs>>(specs, threads);
  e->set_device_planner(std::move(runner));
  if (small_on_host) e->set_min_device_epoch_ops(duet::EpicConfig{}.min_device_epoch_ops);
  return e;
}

/// An engine that executes on the GPU through a DeviceExecutor (EpicDatabase's gpu-exec): `threads`
/// CPU threads for the epochs the device does not take, the GPU runner of its own for the rest;
/// small epochs as EpicDatabase's default. Null without a GPU.
template <class Procs>
std::unique_ptr<Engine<Procs>> epic_gpu_exec_engine(const std::vector<TableSpec>& specs, int threads, ProcSet set,
                                                    const Config& c) {
  std::string why;
  std::shared_ptr<GpuRunner> runner(make_gpu_runner(set, &why).release());
  if (!runner) return nullptr;
  runner->set_host_threads(threads);
  tune_gpu(*runner, c);
  auto e = std::make_unique<Engine<Procs>>(specs, threads);
  e->set_device_executor(std::make_shared<GpuExecutor>(std::move(runner)));
  e->set_min_device_epoch_ops(duet::EpicConfig{}.min_device_epoch_ops);
  return e;
}

/// Whether `system` ran the pieces of a run with pieces (serial and rocksdb run the whole txns:
/// measure_systems' `whole`; the front ends submit the pieces through submit_pieces).
bool runs_pieces(bool pieces, const std::string& system) { return pieces && system != "serial" && system != "rocksdb"; }

void describe(b::Json& r, const std::string& system) {
  const char *index = "cpu", *plan = "cpu", *exec = "cpu", *xfer = "none";
  if (system == "epic-cpu" || system == "epic-submit-gpu") index = "gpu", plan = "gpu", xfer = "packed";
  else if (system == "epic-submit-gpuexec") index = "gpu", plan = "gpu", exec = "gpu", xfer = "packed";
  else if (system == "epic-cpu-hostidx") plan = "gpu", xfer = "per-array";
  else if (system == "epic-gpu") index = "gpu", plan = "gpu", exec = "gpu", xfer = "packed";
  else if (system == "epic-gpu-perarray") index = "gpu", plan = "gpu", exec = "gpu", xfer = "per-array";
  else if (system == "epic-gpu-hostidx") plan = "gpu", exec = "gpu", xfer = "per-array";
  else if (system == "serial" || system == "rocksdb") index = "none", plan = "none";
  r.set("indexing", index).set("planning", plan).set("execution", exec).set("transfers", xfer);
}

/// After a run with the serial executor: every Epic system's tables (those on a GPU downloaded
/// first) equal the serial executor's, record by record and in what is present
/// (tests/checkers' compare_state). False, printing the first difference, when one differs.
template <class Procs>
bool same_tables_as_serial(const SerialStore& serial, const std::vector<std::pair<std::string, Engine<Procs>*>>& cpus,
                           const std::vector<GpuSystem>& gpus, std::string* error) {
  const auto differs = [&](const std::string& name, const Database& db) {
    const std::string d = test::compare_state(db, serial);
    if (!d.empty()) std::cerr << "check: " << name << "'s tables differ from serial execution: " << d << "\n";
    return !d.empty();
  };
  for (const auto& [name, engine] : cpus) {
    if (!engine) continue;
    if (!engine->sync(error)) return std::cerr << "check: " << name << ": " << *error << "\n", false;
    if (differs(name, engine->db())) return *error = name + " differs from serial execution", false;
  }
  for (const GpuSystem& g : gpus) {
    if (!g.db) continue;
    if (!g.runner->download(*g.db, error)) return std::cerr << "check: " << g.name << ": " << *error << "\n", false;
    if (differs(g.name, *g.db)) return *error = g.name + " differs from serial execution", false;
  }
  std::printf("check: every system's tables equal serial execution's\n");
  return true;
}

/// What every report adds to a system's record past its medians (the parts that apply to it:
/// threads and waits, transfers, latency, sides, front-end phases, where each phase runs),
/// printing the lines that go under its row of the table.
void add_details(b::Json& r, const Sample& s, const std::string& system, int submitters) {
  set_exec_threads(r, s);
  set_transfer_split(r, s);
  for (const std::string& line : {set_latency(r, s, submitters), set_sides(r, s), set_front_phases(r, s, submitters)})
    if (!line.empty()) std::printf("%s\n", line.c_str());
  describe(r, system);
}

/// Runs `epochs` on each system present (serial execution, the RocksDB peer, the CPU engines,
/// each GPU runner over its database) and hands each system's samples to report(name, sample).
/// Epochs are interleaved: epoch e runs on every system before epoch e + 1 runs on any, so on a
/// shared machine a change of load falls on all systems alike rather than on whichever ran last.
/// False (after printing the error) when an epoch fails.
/// With `whole` (piece splitting: `epochs` holds the same txns split into pieces), serial and
/// rocksdb run `whole` instead, epoch for epoch.
template <class Procs, class Report>
bool measure_systems(const std::vector<Batch>& epochs, SerialStore* serial, const PeerRun& rocks,
                     const std::vector<std::pair<std::string, Engine<Procs>*>>& cpus,
                     const std::vector<GpuSystem>& gpus, ExecOrder order, int submitters, Report&& report,
                     std::string* error,
                     const std::vector<Batch>* whole = nullptr) {
  struct System {
    std::string name;
    std::function<bool(const Batch&, Sample&)> step;
    Sample s;
    bool runs_whole = false;  ///< runs `whole`'s txns (see above)
  };
  std::vector<System> systems;
  std::vector<std::uint32_t> outcome, out;
  if (serial)
    systems.push_back({"serial", [&](const Batch& e, Sample& s) {
                         const auto t0 = std::chrono::steady_clock::now();
                         run_serial<Procs>(*serial, e, &outcome, &out);
                         const double ms = ms_since(t0);
                         s.formula.push_back(e.size() / ms * 1e3);
                         s.wall.push_back(e.size() / ms * 1e3);
                         s.index.push_back(0), s.transfer.push_back(0), s.plan.push_back(0), s.exec.push_back(ms), s.gc.push_back(0);
                         return true;
                       }, {}, true});
  if (rocks)
    systems.push_back({"rocksdb", [&](const Batch& e, Sample& s) {
                         std::uint64_t retries = 0;
                         const auto t0 = std::chrono::steady_clock::now();
                         if (!rocks(e, &retries, error)) {
                           std::cerr << "rocksdb epoch: " << *error << "\n";
                           return false;
                         }
                         const double ms = ms_since(t0);
                         s.formula.push_back(e.size() / ms * 1e3);
                         s.wall.push_back(e.size() / ms * 1e3);
                         s.index.push_back(0), s.transfer.push_back(0), s.plan.push_back(0), s.exec.push_back(ms), s.gc.push_back(0);
                         s.retries.push_back(static_cast<double>(retries));
                         return true;
                       }, {}, true});
  for (const auto& [name, eng] : cpus) {
    if (!eng) continue;
    Engine<Procs>* engine = eng;
    // epic-twin-counter: the twin with one counter in serial order, whatever --exec-order says.
    engine->set_exec_order(name == "epic-twin-counter" ? ExecOrder::kSerial : order);
    if (name == "epic-submit" || name == "epic-submit-gpu" || name == "epic-submit-gpuexec") {
      systems.push_back({name, submit_step<Procs>(engine, submitters, error), {}});
      continue;
    }
    systems.push_back({name, [engine, error](const Batch& e, Sample& s) {
                         EpochOutput out;
                         if (!engine->run_epoch(e, &out, error)) {
                           std::cerr << "epoch: " << *error << "\n";
                           return false;
                         }
                         const EpochStats& st = out.stats;
                         // epic-cpu-hostidx's plan time includes its H2D and D2H copies (GpuRunner::plan);
                         // epic-cpu reports its copies apart (transfer_ms).
                         s.formula.push_back(st.txns / (st.index_ms + st.transfer_ms + st.plan_ms + st.exec_ms) * 1e3);
                         s.wall.push_back(st.txns / st.total_ms * 1e3);
                         s.index.push_back(st.index_ms), s.transfer.push_back(st.transfer_ms), s.plan.push_back(st.plan_ms);
                         s.exec.push_back(st.exec_ms), s.gc.push_back(st.gc_ms);
                         s.exec_threads.push_back(st.exec_threads);
                         s.waited.push_back(static_cast<double>(st.waited_ns) / 1e6);
                         s.affinity.push_back(st.exec_affinity ? 1 : 0), s.cross.push_back(st.cross_share);
                         return true;
                       }, {}});
  }
  for (const GpuSystem& g : gpus) {
    if (!g.db) continue;
    const GpuSystem gs = g;
    systems.push_back({g.name, [gs, error](const Batch& e, Sample& s) {
                         EpochOutput out;
                         GpuTimes gt;
                         const auto t0 = std::chrono::steady_clock::now();
                         if (!gs.runner->run_epoch(*gs.db, e, &out, error, &gt)) {
                           std::cerr << "gpu epoch: " << *error << "\n";
                           return false;
                         }
                         const double wall = ms_since(t0);
                         const EpochStats& st = out.stats;
                         s.formula.push_back(st.txns / (st.index_ms + gt.h2d_ms + gt.plan_ms + gt.exec_ms + gt.d2h_ms) * 1e3);
                         s.wall.push_back(st.txns / wall * 1e3);
                         s.index.push_back(st.index_ms), s.transfer.push_back(gt.h2d_ms + gt.d2h_ms), s.plan.push_back(gt.plan_ms);
                         s.exec.push_back(gt.exec_ms), s.gc.push_back(gt.gc_ms);
                         s.pack.push_back(gt.pack_ms), s.h2d.push_back(gt.h2d_ms), s.d2h.push_back(gt.d2h_ms);
                         return true;
                       }, {}});
  }
  for (std::size_t e = 0; e < epochs.size(); ++e)
    for (System& sys : systems)
      if (!sys.step(whole && sys.runs_whole ? (*whole)[e] : epochs[e], sys.s)) return false;
  for (System& sys : systems) report(sys.name, sys.s);
  return !serial || same_tables_as_serial(*serial, cpus, gpus, error);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  bool help = false, quick = false;
  std::string error;
  auto list = [](const std::string& v) { return b::split_list(v); };
  const bool ok = b::scan_flags(argc, argv, &help, &quick, &error, [&](const std::string& f, const std::string& v) {
    if (f == "--records") c.records = b::parse_count(v).value_or(0);
    else if (f == "--epoch") c.epoch = b::parse_count(v).value_or(0);
    else if (f == "--abort-rates") {
      c.abort_rates.clear();
      for (auto& x : list(v)) c.abort_rates.push_back(b::parse_double(x).value_or(-1));
    } else if (f == "--epoch-sizes") {
      for (auto& x : list(v)) c.sizes.push_back(b::parse_count(x).value_or(0));
    } else if (f == "--epochs") c.epochs = static_cast<int>(b::parse_count(v).value_or(0));
    else if (f == "--threads") c.threads = static_cast<int>(b::parse_count(v).value_or(0));
    else if (f == "--workloads") c.workloads = list(v);
    else if (f == "--thetas") {
      c.thetas.clear();
      for (auto& x : list(v)) c.thetas.push_back(b::parse_double(x).value_or(-1));
    } else if (f == "--split") {
      c.splits.clear();
      for (auto& x : list(v)) c.splits.push_back(x == "1");
    } else if (f == "--pieces") {
      c.pieces.clear();
      for (auto& x : list(v)) {
        if (x != "0" && x != "1") return error = "--pieces takes 0, 1 or 0,1", false;
        c.pieces.push_back(x == "1");
      }
    } else if (f == "--systems") c.systems = list(v);
    else if (f == "--out") c.out = v;
    else if (f == "--submitters") c.submitters = static_cast<int>(b::parse_count(v).value_or(0));
    else if (f == "--exec-order") {
      if (const duet::Status s = duet::parse_epic_exec_order(v, &c.exec_order); !s.ok()) return error = s.message(), false;
    } else if (f == "--gpu-backoff") c.backoff_ns = static_cast<unsigned>(b::parse_count(v).value_or(0));
    else if (f == "--gpu-gather") {
      if (v != "0" && v != "1") return error = "--gpu-gather takes 0 or 1", false;
      c.gather_reads = v == "1";
    }
    else if (f == "--tpcc-layout") {
      if (v != "records" && v != "split") return error = "--tpcc-layout takes records or split", false;
      c.layout = v == "split" ? TpccLayout::kSplit : TpccLayout::kRecords;
    } else if (f == "--mix") {
      if (v != "np" && v != "full") return error = "--mix takes np or full", false;
      c.full = v == "full";
    } else if (f == "--np") c.np = static_cast<std::uint32_t>(b::parse_count(v).value_or(0));
    else return error = "unknown flag " + f, false;
    return true;
  });
  if (!ok || help) {
    std::cerr << (ok ? "" : error + "\n")
              << "usage: duet_bench_epic [--quick] [--records N] [--epoch N] [--epoch-sizes N,N..] [--epochs N] [--threads N]\n"
                 "  [--workloads A,B,C,F,U (U: ten read-updates)] [--abort-rates 0,0.25] [--thetas 0,0.99] [--split 0,1] [--pieces 0,1 (0): YCSB's ops, TPC-C's Payments as pieces] [--systems serial,epic-twin,epic-twin-counter,epic-submit,epic-submit-gpu,epic-submit-gpuexec,epic-cpu,epic-cpu-hostidx,epic-gpu,epic-gpu-perarray,epic-gpu-hostidx,rocksdb]\n"
                 "  [--out FILE] [--np WAREHOUSES: TPC-C instead of YCSB] [--mix np|full] [--tpcc-layout records|split (split)]\n  [--gpu-backoff NS (1024)] [--gpu-gather 0|1 (1)]\n  [--exec-order serial|partitioned|auto (auto): how CPU engines hand txns to threads]\n"
                 "  [--submitters N (1): threads submitting each epoch's txns to the epic-submit* front ends]\n";
    return ok ? 0 : 2;
  }
  if (quick) c.records = 100000, c.epoch = 10000, c.epochs = 4;
  const bool bad_size = std::any_of(c.sizes.begin(), c.sizes.end(), [](std::size_t x) { return x == 0 || x > kMaxTxns; }) ||
                        std::any_of(c.abort_rates.begin(), c.abort_rates.end(), [](double x) { return x < 0 || x > 1; });
  if (c.records == 0 || c.epoch == 0 || c.epoch > kMaxTxns || bad_size || c.epochs < 2 || c.threads < 1 ||
      c.submitters < 1 || c.submitters > 256) {
    std::cerr << "bad configuration: records, epoch sizes (at most 2^20), threads >= 1, epochs >= 2, abort rates in [0, 1], submitters 1..256\n";
    return 2;
  }
  if (c.pieces.empty() || (c.np && c.pieces.size() != 1)) {
    std::cerr << "--pieces: TPC-C takes 0 or 1 (one run each: its epochs build on each other), YCSB 0, 1 or 0,1\n";
    return 2;
  }
  std::string why;
  const bool gpu = gpu_available(&why);
  std::shared_ptr<GpuRunner> runner;
  if (gpu) runner.reset(make_gpu_runner(ProcSet::kYcsb, &why).release());
  if (runner) tune_gpu(*runner, c);
  // The host-indexing GPU runner (epic-gpu-hostidx), for comparison in the same run.
  std::shared_ptr<GpuRunner> hrunner;
  if (gpu && std::find(c.systems.begin(), c.systems.end(), "epic-gpu-hostidx") != c.systems.end() && !c.np) {
    hrunner.reset(make_gpu_runner(ProcSet::kYcsb, &why).release());
    if (hrunner) tune_gpu(*hrunner, c), hrunner->set_index_on(IndexOn::kHost);
  }
  const std::string date = b::utc_now(), device = gpu_name();
  b::Json records = b::Json::array();
  std::printf("%-4s %-5s %-5s %-10s %14s %14s %9s %9s %9s %9s\n", "wl", "theta", "split", "system", "formula op/s",
              "wall op/s", "index ms", "xfer ms", "plan ms", "exec ms");
  // One pass per epoch size (--epoch-sizes: the latency sweep), on epochs generated for it.
  const Config base = c;
  const std::vector<std::size_t> sizes = base.sizes.empty() ? std::vector<std::size_t>{base.epoch} : base.sizes;
  for (const std::size_t size : sizes) {
    Config c = base;
    c.epoch = size;
    auto has = [&](const char* s) { return std::find(c.systems.begin(), c.systems.end(), s) != c.systems.end(); };
    if (c.np) {
      // TPC-C NP: every system gets its own tables, loaded alike, and runs the same epochs.
      const std::uint32_t orders = static_cast<std::uint32_t>(c.epoch * c.epochs / 2 + 1000);
      const auto specs = tpcc_tables(c.np, orders, orders, c.layout);
      std::shared_ptr<GpuRunner> np_runner, np_hrunner, np_prunner;
      if (gpu && (has("epic-cpu-hostidx") || has("epic-gpu"))) {
        np_runner.reset(make_gpu_runner(ProcSet::kTpcc, &why).release());
        if (!np_runner) {
          std::cerr << "gpu runner: " << why << "\n";
          return 1;
        }
        tune_gpu(*np_runner, c);
      }
      if (gpu && has("epic-gpu-hostidx")) {
        np_hrunner.reset(make_gpu_runner(ProcSet::kTpcc, &why).release());
        if (!np_hrunner) {
          std::cerr << "gpu runner: " << why << "\n";
          return 1;
        }
        tune_gpu(*np_hrunner, c);
        np_hrunner->set_index_on(IndexOn::kHost);
      }
      // Per-array GPU epochs hold an index: their own runner (as each Epic-CPU engine has).
      if (gpu && has("epic-gpu-perarray")) {
        np_prunner.reset(make_gpu_runner(ProcSet::kTpcc, &why).release());
        if (np_prunner) tune_gpu(*np_prunner, c), np_prunner->set_packed_transfers(false);
      }
      std::unique_ptr<SerialStore> serial;
      PeerRun rocks_run;
#ifdef DUET_HAVE_ROCKSDB
      std::unique_ptr<peer::RocksPeer> rocks;
      if (has("rocksdb")) {
        rocks = peer::RocksPeer::open(specs, kPeerMemtable, &error);
        if (!rocks) {
          std::cerr << error << "\n";
          return 1;
        }
        rocks_run = [&rocks, threads = c.threads](const Batch& e, std::uint64_t* retries, std::string* err) {
          std::vector<std::uint32_t> outcome, out;
          peer::RocksStats st;
          const bool ok = rocks->run<TpccProcs>(e, threads, &outcome, &out, &st, err);
          *retries = st.retries;
          return ok;
        };
      }
#endif
      std::unique_ptr<Engine<TpccProcs>> twin, twin_counter, epic_cpu, epic_cpu_h, submit, submit_gpu, submit_gpux;
      std::unique_ptr<Database> gpu_db, gpu_hdb, gpu_pdb;
      if (has("serial")) serial = std::make_unique<SerialStore>(specs);
      if (has("epic-twin")) twin = std::make_unique<Engine<TpccProcs>>(specs, c.threads);
      if (has("epic-twin-counter")) twin_counter = std::make_unique<Engine<TpccProcs>>(specs, c.threads);
      if (has("epic-submit")) submit = std::make_unique<Engine<TpccProcs>>(specs, c.threads);
      if (gpu && has("epic-submit-gpu")) submit_gpu = epic_cpu_engine<TpccProcs>(specs, c.threads, ProcSet::kTpcc, true);
      if (gpu && has("epic-submit-gpuexec")) submit_gpux = epic_gpu_exec_engine<TpccProcs>(specs, c.threads, ProcSet::kTpcc, c);
      if (gpu && has("epic-cpu")) epic_cpu = epic_cpu_engine<TpccProcs>(specs, c.threads, ProcSet::kTpcc, false);
      if (np_runner && has("epic-cpu-hostidx"))
        epic_cpu_h = std::make_unique<Engine<TpccProcs>>(specs, c.threads, gpu_planner(np_runner));
      if (np_runner && has("epic-gpu")) gpu_db = std::make_unique<Database>(specs);
      if (np_hrunner) gpu_hdb = std::make_unique<Database>(specs);
      if (np_prunner) gpu_pdb = std::make_unique<Database>(specs);
      tpcc_load(c.np, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
        if (serial) serial->put(t, k, d);
#ifdef DUET_HAVE_ROCKSDB
        if (rocks && !rocks->load(t, k, d)) error = "rocksdb load failed";
#endif
        if (twin) twin->db().load(t, k, d);
        if (twin_counter) twin_counter->db().load(t, k, d);
        if (submit) submit->db().load(t, k, d);
        if (submit_gpu) submit_gpu->db().load(t, k, d);
        if (submit_gpux) submit_gpux->db().load(t, k, d);
        if (epic_cpu) epic_cpu->db().load(t, k, d);
        if (epic_cpu_h) epic_cpu_h->db().load(t, k, d);
        if (gpu_db) gpu_db->load(t, k, d);
        if (gpu_hdb) gpu_hdb->load(t, k, d);
        if (gpu_pdb) gpu_pdb->load(t, k, d);
      }, c.layout);
      if ((gpu_db && !np_runner->upload(*gpu_db, &error)) || (gpu_hdb && !np_hrunner->upload(*gpu_hdb, &error)) ||
          (gpu_pdb && !np_prunner->upload(*gpu_pdb, &error))) {
        std::cerr << "upload: " << error << "\n";
        return 1;
      }
      if (!error.empty()) {
        std::cerr << error << "\n";
        return 1;
      }
      TpccGenerator gen(c.np, 42, c.full ? TpccMix::kFull : TpccMix::kNp, c.layout);
      if (!gen.error().empty()) {
        std::cerr << gen.error() << "\n";
        return 1;
      }
      std::vector<Batch> epochs(c.epochs), whole;
      for (int e = 0; e < c.epochs; ++e) gen.generate(c.epoch, &epochs[e], e * c.epoch);
      // Pieces: the same txns from a second generator on the same seed, each Payment in three
      // pieces; serial and rocksdb run the whole txns.
      const bool pieces = c.pieces.back() == 1;
      if (pieces) {
        whole = std::move(epochs);
        TpccGenerator pgen(c.np, 42, c.full ? TpccMix::kFull : TpccMix::kNp, c.layout);
        pgen.set_split_payments(true);
        epochs.assign(c.epochs, Batch{});
        for (int e = 0; e < c.epochs; ++e) pgen.generate(c.epoch, &epochs[e], e * c.epoch);
      }
      const std::uint64_t entries = epochs.empty() ? 0 : epochs[0].size();
      const std::string wl = c.full ? "tpcc-full" : "tpcc-np";
      auto report = [&](const std::string& system, const Sample& p) {
        std::vector<double> f(p.formula.begin() + 1, p.formula.end()), w(p.wall.begin() + 1, p.wall.end());
        auto med = [](const std::vector<double>& xs) {
          return xs.size() < 2 ? 0.0 : b::summarize(std::vector<double>(xs.begin() + 1, xs.end())).median;
        };
        const b::Summary fs = b::summarize(f), ws = b::summarize(w);
        std::printf("%-4s w%-4u %-5s %-10s %14.0f %14.0f %9.2f %9.2f %9.2f %9.2f  formula range %.0f-%.0f\n", c.full ? "full" : "np", c.np, "",
                    system.c_str(), fs.median, ws.median, med(p.index), med(p.transfer), med(p.plan), med(p.exec), fs.min,
                    fs.max);
        std::fflush(stdout);
        b::Json r = b::Json::object();
        r.set("name", wl).set("system", system).set("workload", wl).set("op", "txn");
        r.set("warehouses", c.np).set("epoch_txns", static_cast<std::uint64_t>(c.epoch)).set("tpcc_layout", layout_name(c.layout));
        const bool ran_pieces = runs_pieces(pieces, system);
        r.set("pieces", ran_pieces).set("entries_per_epoch", ran_pieces ? entries : static_cast<std::uint64_t>(c.epoch));
        r.set("formula_ops_per_s", fs.median).set("formula_ops_per_s_min", fs.min).set("formula_ops_per_s_max", fs.max);
        r.set("wall_ops_per_s", ws.median).set("wall_ops_per_s_min", ws.min).set("wall_ops_per_s_max", ws.max);
        r.set("epoch_wall_ms_median", ws.median > 0 ? c.epoch / ws.median * 1e3 : 0.0);
        r.set("index_ms_median", med(p.index)).set("transfer_ms_median", med(p.transfer));
        r.set("plan_ms_median", med(p.plan)).set("exec_ms_median", med(p.exec)).set("gc_ms_median", med(p.gc));
        if (system.rfind("epic-gpu", 0) == 0) r.set("max_backoff_ns", c.backoff_ns).set("gather_reads", c.gather_reads);
        if (system == "rocksdb") r.set("retries_median", med(p.retries)), r.set("storage", "memtable only, WAL off, MemEnv");
        add_details(r, p, system, c.submitters);
        records.push(r);
      };
      // Reruns (a mispredicted order id) are not resubmitted here; reconnaissance over one
      // generator predicts every id, so none occur.
      if (!measure_systems<TpccProcs>(epochs, serial.get(), rocks_run,
                                      {{"epic-twin", twin.get()}, {"epic-twin-counter", twin_counter.get()},
                                       {"epic-cpu", epic_cpu.get()},
                                       {"epic-cpu-hostidx", epic_cpu_h.get()}, {"epic-submit", submit.get()},
                                       {"epic-submit-gpu", submit_gpu.get()}, {"epic-submit-gpuexec", submit_gpux.get()}},
                                      {{"epic-gpu", gpu_db.get(), np_runner.get()},
                                       {"epic-gpu-perarray", gpu_pdb.get(), np_prunner.get()},
                                       {"epic-gpu-hostidx", gpu_hdb.get(), np_hrunner.get()}},
                                      c.exec_order, c.submitters, report, &error, pieces ? &whole : nullptr))
        return 1;
      c.splits.clear();
    }
    for (int split : c.splits) {
      YcsbConfig base = YcsbConfig::workload('A', 0, split);
      base.records = c.records;
      const TableSpec spec = ycsb_table(base);
      // One set of tables per system for this layout; workloads run on them one after another.
      std::unique_ptr<Database> twin_db, cpu_db, gpu_db, gpu_hdb, gpu_pdb;
      std::unique_ptr<SerialStore> serial;
      PeerRun rocks_run;
#ifdef DUET_HAVE_ROCKSDB
      std::unique_ptr<peer::RocksPeer> rocks;
      if (has("rocksdb")) {
        rocks = peer::RocksPeer::open({spec}, kPeerMemtable, &error);
        if (!rocks) {
          std::cerr << error << "\n";
          return 1;
        }
        std::vector<std::uint32_t> d(spec.record_words);
        for (std::uint64_t k = 0; k < spec.capacity; ++k) {
          for (std::uint32_t i = 0; i < d.size(); ++i) d[i] = ycsb_initial(k, i);
          if (!rocks->load(0, k, d.data())) {
            std::cerr << "rocksdb load failed\n";
            return 1;
          }
        }
        rocks_run = [&rocks, threads = c.threads](const Batch& e, std::uint64_t* retries, std::string* err) {
          std::vector<std::uint32_t> outcome, out;
          peer::RocksStats st;
          const bool ok = rocks->run<YcsbProcs>(e, threads, &outcome, &out, &st, err);
          *retries = st.retries;
          return ok;
        };
      }
#endif
      std::unique_ptr<Engine<YcsbProcs>> twin, twin_counter, epic_cpu, epic_cpu_h, submit, submit_gpu, submit_gpux;
      std::shared_ptr<GpuRunner> prunner;
      if (has("serial")) {
        serial = std::make_unique<SerialStore>(std::vector<TableSpec>{spec});
        Database dummy({});
        load(dummy, serial.get(), spec);
      }
      if (has("epic-twin")) {
        twin = std::make_unique<Engine<YcsbProcs>>(std::vector<TableSpec>{spec}, c.threads);
        load(twin->db(), nullptr, spec);
      }
      if (has("epic-twin-counter")) {
        twin_counter = std::make_unique<Engine<YcsbProcs>>(std::vector<TableSpec>{spec}, c.threads);
        load(twin_counter->db(), nullptr, spec);
      }
      if (has("epic-submit")) {
        submit = std::make_unique<Engine<YcsbProcs>>(std::vector<TableSpec>{spec}, c.threads);
        load(submit->db(), nullptr, spec);
      }
      for (auto [name, engine, small_on_host] : {std::tuple{"epic-submit-gpu", &submit_gpu, true},
                                                  std::tuple{"epic-cpu", &epic_cpu, false}})
        if (gpu && has(name) && (*engine = epic_cpu_engine<YcsbProcs>({spec}, c.threads, ProcSet::kYcsb, small_on_host)))
          load((*engine)->db(), nullptr, spec);
      if (gpu && has("epic-submit-gpuexec") &&
          (submit_gpux = epic_gpu_exec_engine<YcsbProcs>({spec}, c.threads, ProcSet::kYcsb, c)))
        load(submit_gpux->db(), nullptr, spec);
      if (has("epic-cpu-hostidx") && runner) {
        epic_cpu_h = std::make_unique<Engine<YcsbProcs>>(std::vector<TableSpec>{spec}, c.threads, gpu_planner(runner));
        load(epic_cpu_h->db(), nullptr, spec);
      }
      if (has("epic-gpu-perarray") && gpu) {
        prunner.reset(make_gpu_runner(ProcSet::kYcsb, &why).release());
        if (prunner) {
          tune_gpu(*prunner, c);
          prunner->set_packed_transfers(false);
          gpu_pdb = std::make_unique<Database>(std::vector<TableSpec>{spec});
          load(*gpu_pdb, nullptr, spec);
          if (!prunner->upload(*gpu_pdb, &error)) {
            std::cerr << "upload: " << error << "\n";
            return 1;
          }
        }
      }
      if (has("epic-gpu") && runner) {
        gpu_db = std::make_unique<Database>(std::vector<TableSpec>{spec});
        load(*gpu_db, nullptr, spec);
        if (!runner->upload(*gpu_db, &error)) {
          std::cerr << "upload: " << error << "\n";
          return 1;
        }
      }
      if (has("epic-gpu-hostidx") && hrunner) {
        gpu_hdb = std::make_unique<Database>(std::vector<TableSpec>{spec});
        load(*gpu_hdb, nullptr, spec);
        if (!hrunner->upload(*gpu_hdb, &error)) {
          std::cerr << "upload: " << error << "\n";
          return 1;
        }
      }
      for (const auto& wl : c.workloads)
        for (double theta : c.thetas)
        for (double abort_rate : c.abort_rates)
        for (int pieces : c.pieces) {
          if (pieces && abort_rate > 0) continue;  // a txn that may abort is never split
          YcsbConfig y = YcsbConfig::workload(wl.empty() ? 'A' : wl[0], theta, split);
          y.records = c.records;
          y.seed = 42;
          y.abort_rate = abort_rate;
          YcsbGenerator gen(y);
          std::vector<Batch> epochs(c.epochs), whole;
          for (int e = 0; e < c.epochs; ++e) gen.generate(c.epoch, &epochs[e], e * c.epoch);
          std::size_t entries = epochs.empty() ? 0 : epochs[0].size();
          if (pieces) {
            // The same txns (same seed), each op a piece; the whole ones stay for serial and the peers.
            whole = std::move(epochs);
            y.pieces = true;
            YcsbGenerator pgen(y);
            epochs.assign(c.epochs, Batch{});
            for (int e = 0; e < c.epochs; ++e) pgen.generate(c.epoch, &epochs[e], e * c.epoch);
            entries = epochs.empty() ? 0 : epochs[0].size();
          }
          auto report = [&](const std::string& system, const Sample& s) {
            std::vector<double> f(s.formula.begin() + 1, s.formula.end()), w(s.wall.begin() + 1, s.wall.end());
            auto med = [](std::vector<double> xs) { return b::summarize(std::vector<double>(xs.begin() + 1, xs.end())).median; };
            std::printf("%-4s %-5.2f %-5d %-10s %14.0f %14.0f %9.2f %9.2f %9.2f %9.2f%s%s\n", wl.c_str(), theta, split,
                        system.c_str(), b::summarize(f).median, b::summarize(w).median, med(s.index), med(s.transfer),
                        med(s.plan), med(s.exec),
                        abort_rate > 0 ? ("  aborts " + std::to_string(static_cast<int>(abort_rate * 100)) + "%").c_str() : "",
                        pieces ? "  pieces" : "");
            std::fflush(stdout);
            b::Json r = b::Json::object();
            r.set("name", "ycsb-" + wl).set("system", system).set("workload", "ycsb-" + wl).set("op", "txn");
            r.set("theta", theta).set("split", split == 1).set("epoch_txns", static_cast<std::uint64_t>(c.epoch));
            r.set("abort_rate", abort_rate);
            // Pieces: what the Epic systems planned and executed per epoch (serial and rocksdb ran
            // the whole txns); throughput counts txns either way.
            const bool ran_pieces = runs_pieces(pieces, system);
            r.set("pieces", ran_pieces).set("entries_per_epoch", static_cast<std::uint64_t>(ran_pieces ? entries : c.epoch));
            const b::Summary fs = b::summarize(f), ws = b::summarize(w);
            r.set("formula_ops_per_s", fs.median).set("formula_ops_per_s_min", fs.min).set("formula_ops_per_s_max", fs.max);
            r.set("wall_ops_per_s", ws.median).set("wall_ops_per_s_min", ws.min).set("wall_ops_per_s_max", ws.max);
            r.set("epoch_wall_ms_median", ws.median > 0 ? c.epoch / ws.median * 1e3 : 0.0);
            r.set("index_ms_median", med(s.index)).set("transfer_ms_median", med(s.transfer));
            r.set("plan_ms_median", med(s.plan)).set("exec_ms_median", med(s.exec)).set("gc_ms_median", med(s.gc));
            if (system.rfind("epic-gpu", 0) == 0) r.set("max_backoff_ns", c.backoff_ns).set("gather_reads", c.gather_reads);
            if (system == "rocksdb") r.set("retries_median", med(s.retries)), r.set("storage", "memtable only, WAL off, MemEnv");
            add_details(r, s, system, c.submitters);
            records.push(r);
          };
          if (!measure_systems<YcsbProcs>(epochs, serial.get(), rocks_run,
                                          {{"epic-twin", twin.get()}, {"epic-twin-counter", twin_counter.get()},
                                       {"epic-cpu", epic_cpu.get()},
                                           {"epic-cpu-hostidx", epic_cpu_h.get()}, {"epic-submit", submit.get()},
                                           {"epic-submit-gpu", submit_gpu.get()},
                                           {"epic-submit-gpuexec", submit_gpux.get()}},
                                          {{"epic-gpu", gpu_db.get(), runner.get()},
                                           {"epic-gpu-perarray", gpu_pdb.get(), prunner.get()},
                                           {"epic-gpu-hostidx", gpu_hdb.get(), hrunner.get()}},
                                          c.exec_order, c.submitters, report, &error, pieces ? &whole : nullptr))
            return 1;
        }
    }
  }
  b::Json config = b::Json::object();
  b::Json size_list = b::Json::array();
  for (auto x : sizes) size_list.push(static_cast<std::uint64_t>(x));
  config.set("records", c.records).set("epoch_txns", static_cast<std::uint64_t>(c.epoch)).set("epoch_sizes", size_list).set("epochs", c.epochs);
  b::Json piece_list = b::Json::array();
  for (int x : c.pieces) piece_list.push(static_cast<std::uint64_t>(x));
  config.set("pieces", piece_list);
  config.set("threads", c.threads).set("submitters", c.submitters).set("ops_per_txn", 10).set("record_bytes", 1000).set("field_bytes", 100);
  config.set("np_warehouses", c.np).set("tpcc_mix", c.full ? "full" : "np").set("tpcc_layout", layout_name(c.layout)).set("gpu_max_backoff_ns", c.backoff_ns).set("gpu_gather_reads", c.gather_reads).set("exec_order", epic_exec_order_name(c.exec_order)).set("median_over", "epochs 2..N").set("gpu", gpu ? device : "none: " + why);
  config.set("command", "bench/batch/epic: duet_bench_epic" + std::string(quick ? " --quick" : ""));
#ifdef DUET_HAVE_ROCKSDB
  config.set("rocksdb", "RocksDB " + std::to_string(ROCKSDB_MAJOR) + "." + std::to_string(ROCKSDB_MINOR) + "." +
                            std::to_string(ROCKSDB_PATCH) +
                            " pessimistic TransactionDB: in memory (MemEnv, memtable only, no flush), WAL off; 2PL "
                            "(shared locks on reads, exclusive on written keys), read-only txns on a snapshot; "
                            "same procedures and threads as Epic");
#else
  config.set("rocksdb", "not built (librocksdb-dev missing)");
#endif
  const b::Json doc = b::result_document(c.np ? (c.full ? "epic-tpcc" : "epic-np") : "epic-ycsb", device, b::commit_id(DUET_SOURCE_DIR), date, config, records);
  const std::string path = c.out.empty() ? std::string(DUET_SOURCE_DIR) + "/bench/results/epic/epic-" + (c.np ? "np-" : "ycsb-") +
                                               (gpu ? "gpu" : "cpu") + "-" + b::utc_now(true) + ".json"
                                         : c.out;
  if (!b::write_result_file(path, doc, &error)) {
    std::cerr << error << "\n";
    return 1;
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
