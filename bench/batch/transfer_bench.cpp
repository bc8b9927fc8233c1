// `duet bench transfer` (also the standalone duet_bench_transfer): OranguTAN's evaluation
// (dissertation §4.6) on the batch engine. Every mode
// runs in the same process on the same pre-generated blocks, back to back, from the same initial
// accounts; each (profile, skew, block size, mode) is repeated and reported as the median and
// range over the repetitions. Also times the DAG builders alone (GPU roots / matrix, CPU twin,
// per-account CPU builder) and key resolution. After each run the accounts are compared with
// the sequential mode's: a mode that disagrees is reported as wrong.
//
//   duet bench transfer [--quick] [--accounts N] [--balance B] [--amount-min A] [--amount-max A]
//       [--gas G] [--threads T] [--blocks N] [--large-blocks N] [--sizes 1000,10000,100000]
//       [--thetas 0,0.4,...] [--profiles smallcoin,smallcoin+] [--modes m1,m2,...] [--reps R]
//       [--out FILE]
// Modes: orangutan, commutative, dag-gpu, dag-cpu, dag-cpu-pairs, sequential, speedex; and for A/B
// runs commutative-vbarrier and sequential-vexact, which validate as the earlier engine did
// (reading every receiver's balance, and in parallel modes a barrier after it),
// commutative-central (the team's central-counter synchronisation) and commutative-v0 (both:
// the engine before these two changes); commutative-adaptive runs each block on the team or
// serially, whichever measured cheaper lately (the keyspace's policy).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "batch/batch_space.hpp"
#include "batch/orangutan/engine.hpp"
#include "batch/orangutan/gpu_dag.hpp"
#include "batch/orangutan/workload.hpp"
#include "bench/batch/transfer_bench.hpp"
#include "common/json.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "gpu/device.hpp"

using namespace duet::batch::orangutan;
using duet::Status;
using duet::bench::Json;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  std::uint32_t accounts = 1000000;
  std::int64_t balance = 100, amount_min = 1, amount_max = 20, gas = 1;
  unsigned threads = 16;
  std::size_t blocks = 100, large_blocks = 20;  ///< blocks per run; large_blocks for 10^5
  std::vector<std::size_t> sizes = {1000, 10000, 100000};
  std::vector<double> thetas = {0, 0.3, 0.4, 0.5, 0.6, 0.8, 0.9, 0.99};
  std::vector<std::string> profiles = {"smallcoin", "smallcoin+"};
  std::vector<std::string> modes = {"orangutan",  "commutative", "commutative-vbarrier", "commutative-central",
                                    "commutative-v0", "dag-gpu", "dag-cpu", "dag-cpu-pairs", "sequential",
                                    "sequential-vexact", "speedex"};
  int reps = 3;
  std::vector<unsigned> thread_sweep = {4, 8, 12, 15, 16};  ///< orangutan and commutative, uniform, 1000
  std::string out;
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<std::string> split(const std::string& s) { return duet::bench::split_list(s); }

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf(
          "duet bench transfer [--quick] [--accounts N] [--balance B] [--amount-min A] [--amount-max A]\n"
          "    [--gas G] [--threads T] [--blocks N] [--large-blocks N] [--sizes 1000,10000,100000]\n"
          "    [--thetas 0,0.4,...] [--profiles smallcoin,smallcoin+] [--modes m1,m2,...] [--reps R]\n"
          "    [--thread-sweep 4,8,...] [--out FILE]\n"
          "modes: orangutan, commutative, dag-gpu, dag-cpu, dag-cpu-pairs, sequential, speedex,\n"
          "    commutative-vbarrier, sequential-vexact (validation as in the earlier engine),\n"
          "    commutative-central (central-counter team sync), commutative-v0 (both, the earlier engine),\n"
          "    commutative-adaptive (team or serial per block, as the keyspace runs)\n"
          "defaults: 1M accounts, balance 100, amounts 1-20, gas 1, 16 threads, 100 blocks per size\n");
      std::exit(0);
    } else if (a == "--quick") {
      o->accounts = 100000;
      o->blocks = 20;
      o->large_blocks = 4;
      o->sizes = {1000, 10000};
      o->thetas = {0, 0.6, 0.9};
      o->reps = 2;
      o->threads = std::min(o->threads, 8u);
    } else if (a == "--accounts") o->accounts = std::stoul(val());
    else if (a == "--balance") o->balance = std::stoll(val());
    else if (a == "--amount-min") o->amount_min = std::stoll(val());
    else if (a == "--amount-max") o->amount_max = std::stoll(val());
    else if (a == "--gas") o->gas = std::stoll(val());
    else if (a == "--threads") o->threads = std::stoul(val());
    else if (a == "--blocks") o->blocks = std::stoul(val());
    else if (a == "--large-blocks") o->large_blocks = std::stoul(val());
    else if (a == "--reps") o->reps = std::stoi(val());
    else if (a == "--out") o->out = val();
    else if (a == "--thread-sweep") {
      o->thread_sweep.clear();
      for (auto& s : split(val())) o->thread_sweep.push_back(std::stoul(s));
    }
    else if (a == "--profiles") o->profiles = split(val());
    else if (a == "--modes") o->modes = split(val());
    else if (a == "--sizes") {
      o->sizes.clear();
      for (auto& s : split(val())) o->sizes.push_back(std::stoul(s));
    } else if (a == "--thetas") {
      o->thetas.clear();
      for (auto& s : split(val())) o->thetas.push_back(std::stod(s));
    } else {
      std::fprintf(stderr, "unknown flag %s (see the header of bench/batch/transfer_bench.cpp)\n", a.c_str());
      return false;
    }
  }
  if (o->accounts < 2 || o->amount_min < 1 || o->amount_max < o->amount_min || o->reps < 1 || o->threads < 1) {
    std::fprintf(stderr, "bad configuration\n");
    return false;
  }
  return true;
}

struct ModeSpec {
  std::string name;
  Mode mode;
  DagDevice dag;
  bool quick_validation = true;
  TeamSync sync = TeamSync::kAuto;
  bool adaptive = false;
};

bool mode_spec(const std::string& n, ModeSpec* m) {
  if (n == "orangutan") *m = {n, Mode::kOranguTan, DagDevice::kAuto};
  else if (n == "commutative") *m = {n, Mode::kCommutative, DagDevice::kCpuAccounts};
  else if (n == "commutative-vbarrier") *m = {n, Mode::kCommutative, DagDevice::kCpuAccounts, false};
  else if (n == "commutative-central") *m = {n, Mode::kCommutative, DagDevice::kCpuAccounts, true, TeamSync::kCentral};
  else if (n == "commutative-v0") *m = {n, Mode::kCommutative, DagDevice::kCpuAccounts, false, TeamSync::kCentral};
  else if (n == "commutative-adaptive")
    *m = {n, Mode::kCommutative, DagDevice::kCpuAccounts, true, TeamSync::kAuto, true};
  else if (n == "sequential-vexact") *m = {n, Mode::kSequential, DagDevice::kCpuAccounts, false};
  else if (n == "dag-gpu") *m = {n, Mode::kDag, DagDevice::kGpu};
  else if (n == "dag-cpu") *m = {n, Mode::kDag, DagDevice::kCpuAccounts};
  else if (n == "dag-cpu-pairs") *m = {n, Mode::kDag, DagDevice::kCpuPairs};
  else if (n == "sequential") *m = {n, Mode::kSequential, DagDevice::kCpuAccounts};
  else if (n == "speedex") *m = {n, Mode::kSpeedex, DagDevice::kCpuAccounts};
  else return false;
  return true;
}

void reset(std::vector<Account>& acc, const Options& o) {
  for (auto& a : acc) {
    a.bal.store(o.balance, std::memory_order_relaxed);
    a.seq_num.store(0, std::memory_order_relaxed);
    a.sent_events.store(0, std::memory_order_relaxed);
    a.rec_events.store(0, std::memory_order_relaxed);
    a.reserved.store(0, std::memory_order_relaxed);
    a.gas_cost = o.gas;
  }
}

std::uint64_t fingerprint(const std::vector<Account>& acc) {
  std::uint64_t h = 1469598103934665603ull;
  for (const auto& a : acc) {
    const AccountValue v = load(a);
    for (std::int64_t x : {v.bal, v.seq_num, v.sent_events, v.rec_events}) h = (h ^ std::uint64_t(x)) * 1099511628211ull;
  }
  return h;
}

double pct(std::vector<double> xs, double p) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  return xs[std::min(xs.size() - 1, static_cast<std::size_t>(p * xs.size()))];
}

}  // namespace

int duet::bench::run_transfer_bench(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  const auto& dev = duet::gpu::device();
  const std::string device = dev.present ? dev.name : "cpu";
  const std::string date = duet::bench::utc_now();
  std::printf("duet bench transfer: %u accounts, balance %lld, amounts %lld-%lld, gas %lld, %u threads, device %s\n",
              o.accounts, (long long)o.balance, (long long)o.amount_min, (long long)o.amount_max, (long long)o.gas,
              o.threads, device.c_str());
  std::vector<Account> acc(o.accounts);
  Json records = Json::array();

  // Key resolution: 1M random-looking keys in the account index, a block's keys looked up.
  {
    duet::batch::AccountIndex index;
    for (std::uint32_t i = 0; i < o.accounts; ++i) index.insert(std::uint64_t(i) * 0x9E3779B97F4A7C15ull, i);
    WorkloadConfig w;
    w.accounts = o.accounts;
    TransferGenerator gen(w);
    const auto block = gen.block(1000);
    std::vector<double> us;
    std::uint64_t sink = 0;
    for (int r = 0; r < 200; ++r) {
      const auto t0 = Clock::now();
      for (const Tx& t : block)
        sink += index.find(std::uint64_t(t.sender) * 0x9E3779B97F4A7C15ull) + index.find(std::uint64_t(t.receiver) * 0x9E3779B97F4A7C15ull);
      us.push_back(seconds_since(t0) * 1e6);
    }
    std::printf("key resolution, 1000-transfer block, one thread: p50 %.1f us (sink %llu)\n", pct(us, 0.5),
                (unsigned long long)(sink & 1));
    records.push(Json::object().set("kind", "resolve").set("block", 1000).set("p50_us", pct(us, 0.5)).set("p99_us", pct(us, 0.99)));
  }

  // The DAG builders alone.
  {
    Team team(o.threads);
    std::unique_ptr<GpuDag> g;
    const bool have_gpu = make_gpu_dag(*std::max_element(o.sizes.begin(), o.sizes.end()), &g).ok();
    std::vector<std::uint32_t> first(o.accounts, UINT32_MAX);
    std::printf("\n%-10s %6s %5s %12s %12s %12s %12s\n", "dag", "block", "theta", "gpu-roots", "gpu-matrix", "cpu-pairs", "cpu-accts");
    for (std::size_t n : o.sizes)
      for (double theta : {0.0, 0.9}) {
        WorkloadConfig w;
        w.accounts = o.accounts;
        w.theta = theta;
        TransferGenerator gen(w);
        const auto block = gen.block(n);
        std::vector<std::uint32_t> parent(n), root(n);
        const int reps = n >= 100000 ? 5 : 30;
        auto time_us = [&](auto&& f) {
          std::vector<double> us;
          for (int r = 0; r < reps; ++r) {
            const auto t0 = Clock::now();
            if (!f()) return -1.0;
            us.push_back(seconds_since(t0) * 1e6);
          }
          return pct(us, 0.5);
        };
        const double gr = have_gpu ? time_us([&] {
          const std::uint32_t* r = nullptr;
          return g->launch(block.data(), n, DagForm::kRoots).ok() && g->wait(&r).ok();
        }) : -1;
        const double gm = have_gpu && n <= kMaxMatrixTxs ? time_us([&] {
          const std::uint32_t* r = nullptr;
          return g->launch(block.data(), n, DagForm::kMatrix).ok() && g->wait(&r).ok();
        }) : -1;
        const double cp = n <= 10000 ? time_us([&] {
          build_dag_cpu_pairs(team, block.data(), n, parent.data(), root.data());
          return true;
        }) : -1;
        const double ca = time_us([&] {
          build_dag_cpu_accounts(team, block.data(), n, first.data(), parent.data(), root.data());
          return true;
        });
        std::printf("%-10s %6zu %5.2f %12.1f %12.1f %12.1f %12.1f\n", "p50 us", n, theta, gr, gm, cp, ca);
        records.push(Json::object().set("kind", "dag").set("block", n).set("theta", theta).set("gpu_roots_us", gr)
                         .set("gpu_matrix_us", gm).set("cpu_pairs_us", cp).set("cpu_accounts_us", ca));
      }
  }

  // Thread count: the fast path on uniform 1000-transfer blocks.
  if (!o.thread_sweep.empty()) {
    WorkloadConfig w;
    w.accounts = o.accounts;
    w.seed = 42;
    TransferGenerator gen(w);
    std::vector<std::vector<Tx>> blocks;
    for (std::size_t b = 0; b < o.blocks; ++b) blocks.push_back(gen.block(1000));
    std::vector<std::vector<Outcome>> outs(o.blocks, std::vector<Outcome>(1000));
    std::vector<BlockView> views;
    for (std::size_t b = 0; b < o.blocks; ++b) views.push_back({blocks[b], outs[b]});
    std::printf("\nthreads (smallcoin, uniform, 1000-transfer blocks): Mtx/s median (range), p50 block us\n");
    for (const char* mname : {"orangutan", "commutative", "commutative-v0", "commutative-adaptive"})
      for (unsigned t : o.thread_sweep) {
        ModeSpec ms;
        mode_spec(mname, &ms);
        EngineConfig ec;
        ec.mode = ms.mode;
        ec.threads = t;
        ec.dag = ms.dag;
        ec.quick_validation = ms.quick_validation;
        ec.team_sync = ms.sync;
        ec.adaptive = ms.adaptive;
        std::unique_ptr<Engine> engine;
        if (!Engine::create(ec, acc.data(), acc.size(), &engine).ok()) continue;
        std::vector<double> mtx, p50;
        for (int r = 0; r < std::max(3, o.reps); ++r) {
          reset(acc, o);
          engine->accounts_changed();
          std::vector<BlockStats> st;
          const auto t0 = Clock::now();
          if (!engine->run_blocks(ProfileKind::kSmallCoin, views, &st).ok()) return 1;
          mtx.push_back(1000.0 * o.blocks / seconds_since(t0) / 1e6);
          std::vector<double> lat;
          for (const auto& b : st) lat.push_back(b.total_ns / 1e3);
          p50.push_back(pct(lat, 0.5));
        }
        const auto m = duet::bench::summarize(mtx);
        std::printf("  %-12s %3u threads: %7.2f (%.2f-%.2f)  p50 %.1f us\n", mname, t, m.median, m.min, m.max,
                    duet::bench::summarize(p50).median);
        records.push(Json::object().set("kind", "threads").set("mode", mname).set("threads", t)
                         .set("mtx_per_s", summary_json(summarize(mtx))).set("p50_block_us", summary_json(summarize(p50))));
      }
  }

  std::printf("\n%-11s %5s %6s %-14s %10s %8s %8s %9s %8s %8s %s\n", "profile", "theta", "block", "mode", "Mtx/s",
              "p50 us", "p99 us", "fastfail", "rerun", "aborts", "range Mtx/s");
  for (const std::string& pname : o.profiles) {
    const ProfileKind profile = pname == "smallcoin+" ? ProfileKind::kSmallCoinPlus : ProfileKind::kSmallCoin;
    for (std::size_t size : o.sizes)
      for (double theta : o.thetas) {
        const std::size_t nblocks = size >= 100000 ? o.large_blocks : o.blocks;
        WorkloadConfig w;
        w.accounts = o.accounts;
        w.theta = theta;
        w.amount_min = o.amount_min;
        w.amount_max = o.amount_max;
        w.seed = 42;
        TransferGenerator gen(w);
        std::vector<std::vector<Tx>> blocks;
        for (std::size_t b = 0; b < nblocks; ++b) blocks.push_back(gen.block(size));
        std::vector<std::vector<Outcome>> outs(nblocks, std::vector<Outcome>(size));
        std::vector<BlockView> views;
        for (std::size_t b = 0; b < nblocks; ++b) views.push_back({blocks[b], outs[b]});
        std::uint64_t reference = 0;
        bool have_reference = false;
        for (const std::string& mname : o.modes) {
          ModeSpec ms;
          if (!mode_spec(mname, &ms)) {
            std::fprintf(stderr, "unknown mode %s\n", mname.c_str());
            return 2;
          }
          if (ms.dag == DagDevice::kCpuPairs && size > 10000) continue;
          if (ms.dag == DagDevice::kGpu && !dev.present) continue;
          EngineConfig ec;
          ec.mode = ms.mode;
          ec.threads = ms.mode == Mode::kSequential ? 1 : o.threads;
          ec.dag = ms.dag;
          ec.quick_validation = ms.quick_validation;
          ec.team_sync = ms.sync;
          ec.adaptive = ms.adaptive;
          std::unique_ptr<Engine> engine;
          Status s = Engine::create(ec, acc.data(), acc.size(), &engine);
          if (!s.ok()) {
            std::fprintf(stderr, "%s: %s\n", mname.c_str(), s.to_string().c_str());
            continue;
          }
          std::vector<double> mtx, p50, p99;
          double fastfail = 0, rerun = 0, aborts = 0;
          bool agrees = true;
          for (int r = 0; r < o.reps; ++r) {
            reset(acc, o);
            engine->accounts_changed();
            std::vector<BlockStats> st;
            const auto t0 = Clock::now();
            s = engine->run_blocks(profile, views, &st);
            const double secs = seconds_since(t0);
            if (!s.ok()) {
              std::fprintf(stderr, "%s: %s\n", mname.c_str(), s.to_string().c_str());
              return 1;
            }
            const std::uint64_t fp = fingerprint(acc);
            if (!have_reference) {
              reference = fp;
              have_reference = true;
            } else if (fp != reference) {
              agrees = false;
            }
            std::vector<double> lat;
            std::uint64_t ff = 0, rr = 0, ab = 0;
            for (const auto& b : st) {
              lat.push_back(b.total_ns / 1e3);
              ff += b.part1_failures;
              rr += b.rerun_txs;
              ab += b.aborted + b.gas_only;
            }
            const double txs = double(size) * nblocks;
            mtx.push_back(txs / secs / 1e6);
            p50.push_back(pct(lat, 0.5));
            p99.push_back(pct(lat, 0.99));
            fastfail = ff / txs;
            rerun = rr / txs;
            aborts = ab / txs;
          }
          const auto m = duet::bench::summarize(mtx);
          std::printf("%-11s %5.2f %6zu %-14s %10.2f %8.1f %8.1f %8.2f%% %7.2f%% %7.2f%% %.2f-%.2f%s\n", pname.c_str(),
                      theta, size, mname.c_str(), m.median, duet::bench::summarize(p50).median,
                      duet::bench::summarize(p99).median, 100 * fastfail, 100 * rerun, 100 * aborts, m.min, m.max,
                      agrees ? "" : "  WRONG: accounts differ from the first mode's");
          std::fflush(stdout);
          records.push(Json::object()
                           .set("kind", "run")
                           .set("profile", pname)
                           .set("theta", theta)
                           .set("block", size)
                           .set("blocks", nblocks)
                           .set("mode", mname)
                           .set("dag", engine->dag_description())
                           .set("mtx_per_s", summary_json(summarize(mtx)))
                           .set("p50_block_us", summary_json(summarize(p50)))
                           .set("p99_block_us", summary_json(summarize(p99)))
                           .set("fast_path_failure_rate", fastfail)
                           .set("rerun_share", rerun)
                           .set("final_abort_rate", aborts)
                           .set("agrees_with_first_mode", agrees));
        }
      }
  }

  if (!o.out.empty()) {
    Json config = Json::object()
                      .set("accounts", o.accounts)
                      .set("balance", o.balance)
                      .set("amount_min", o.amount_min)
                      .set("amount_max", o.amount_max)
                      .set("gas", o.gas)
                      .set("threads", o.threads)
                      .set("blocks", o.blocks)
                      .set("large_blocks", o.large_blocks)
                      .set("reps", o.reps)
                      .set("sizes", Json::array_of(o.sizes))
                      .set("thetas", Json::array_of(o.thetas))
                      .set("profiles", Json::array_of(o.profiles))
                      .set("modes", Json::array_of(o.modes));
    const Json doc = duet::bench::result_document("transfer", device, duet::bench::commit_id(DUET_SOURCE_DIR), date,
                                                  std::move(config), std::move(records));
    std::string err;
    if (!duet::bench::write_result_file(o.out, doc, &err)) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    std::printf("\nwrote %s\n", o.out.c_str());
  }
  return 0;
}
