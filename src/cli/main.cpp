// `duet`: the command-line entry point. `duet demo` (the default) opens a Store with one `kv`
// keyspace on the best available processor, runs a few batches of PUT, GET and DELETE and
// prints what each did and where it ran; `duet info` prints what the build and the machine
// offer; `duet bench NAME` runs a benchmark (builds with benchmarks only): kv, transfer, olda and
// ch in this process, the others (batch, cods, lit, ...) as their own programs beside `duet`.
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "duet/store.hpp"
#include "gpu/device.hpp"
#include "server/server.hpp"
#if DUET_HAVE_BENCH_KV
#include "bench/kv/kv_bench.hpp"
#endif
#if DUET_HAVE_BENCH_TRANSFER
#include "bench/batch/transfer_bench.hpp"
#endif
#if DUET_HAVE_BENCH_OLDA
#include "bench/compute/olda_bench.hpp"
#endif
#if DUET_HAVE_BENCH_CH
#include "bench/compute/ch_bench.hpp"
#endif

namespace {

using duet::KvRequest;

/// A benchmark `duet bench NAME` runs: in this process (`run`, linked in builds with benchmarks)
/// or, for one built as a program of its own under CMake's build/bench/, that program in place
/// of this process (`program`, relative to the directory holding `duet`).
struct Benchmark {
  const char* name;
  const char* about;
  int (*run)(int, char**);          ///< in-process; null for a program, or when not built
  const char* program = nullptr;    ///< null for an in-process benchmark
  const char* alias = nullptr;      ///< a second name
};
#if DUET_HAVE_BENCH_KV
constexpr int (*kRunKv)(int, char**) = duet::bench::run_kv_bench;
#else
constexpr int (*kRunKv)(int, char**) = nullptr;
#endif
#if DUET_HAVE_BENCH_TRANSFER
constexpr int (*kRunTransfer)(int, char**) = duet::bench::run_transfer_bench;
#else
constexpr int (*kRunTransfer)(int, char**) = nullptr;
#endif
#if DUET_HAVE_BENCH_OLDA
constexpr int (*kRunOlda)(int, char**) = duet::bench::run_olda_bench;
#else
constexpr int (*kRunOlda)(int, char**) = nullptr;
#endif
#if DUET_HAVE_BENCH_CH
constexpr int (*kRunCh)(int, char**) = duet::bench::run_ch_bench;
#else
constexpr int (*kRunCh)(int, char**) = nullptr;
#endif
const Benchmark kBenchmarks[] = {
    {"kv", "YCSB workloads and KVCG's experiments (docs/kv.md)", kRunKv},
    {"transfer", "OranguTAN's transfer blocks in every batch mode (docs/batch.md)", kRunTransfer},
    {"olda", "OLDA fraud detection: one transaction per payment with inference (docs/compute.md)", kRunOlda},
    {"ch", "CH-benCHmark: TPC-C transactions with Q1/Q3/Q6 on snapshots (docs/compute.md)", kRunCh},
    {"batch", "Epic's epochs on YCSB and TPC-C: GPU, Epic-CPU, serial, RocksDB (docs/epic.md)", nullptr,
     "bench/duet_bench_epic", "epic"},
    {"cods", "CODS list, hash set and B-link tree: CPU, GPU, simulated remote (docs/cods.md)", nullptr,
     "bench/duet_bench_cods"},
    {"lit", "LIT, the ordered map, against libcds and oneTBB (docs/lit.md)", nullptr, "bench/duet_bench_lit"},
    {"lslab", "L-Slab hash map batches against peer hash maps (docs/lslab.md)", nullptr, "bench/duet_bench_lslab"},
    {"mvrlu", "MV-RLU against RLU, liburcu, libcds and locks (docs/mvrlu.md)", nullptr, "bench/duet_bench_mvrlu"},
    {"hydralist", "Hydralist against ordered peers on YCSB (docs/hydralist.md)", nullptr,
     "bench/duet_bench_hydralist"},
    {"txn", "the txn keyspace on YCSB-T and SmallBank against RocksDB (docs/txn.md)", nullptr, "bench/duet_bench_txn"},
    {"compute", "the compute operators on the CPU and the GPU (docs/compute.md)", nullptr, "bench/duet_bench_compute"},
    {"net", "a RESP load driver for duet server or Redis (docs/server.md)", nullptr, "bench/net/duet_bench_net"},
};

/// Runs the program benchmark `b` (exec: it replaces this process) with args[0..n). Returns only
/// on failure: 2 when this build has no such program (benchmarks not built), 1 when exec fails.
int run_program_bench(const Benchmark& b, int n, char** args) {
  std::string self(4096, '\0');
  const ssize_t len = readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string dir = len > 0 ? self.substr(0, static_cast<std::size_t>(len)) : std::string();
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  const std::string path = dir + b.program;
  if (access(path.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "duet bench: this build has no %s benchmark (%s is missing; configure with -DDUET_BENCH=ON)\n",
                 b.name, path.c_str());
    return 2;
  }
  std::vector<char*> argv{const_cast<char*>(path.c_str())};
  argv.insert(argv.end(), args, args + n);
  argv.push_back(nullptr);
  std::fflush(nullptr);
  execv(path.c_str(), argv.data());
  std::fprintf(stderr, "duet bench: cannot run %s: %s\n", path.c_str(), std::strerror(errno));
  return 1;
}

int usage(FILE* f) {
  std::fprintf(f,
               "usage: duet [demo [--device auto|cpu|gpu] [--keys N]] | server [settings] | info [--measure-devices] |\n"
               "       bench NAME [options] | help\n"
               "  server    serve the Redis protocol (RESP2/RESP3) on 127.0.0.1:6379 (duet server --help)\n"
               "  demo      open a store with a kv keyspace, run PUT/GET/DELETE batches, print what\n"
               "            happened (default)\n"
               "  info      print the build's and the machine's capabilities; --measure-devices: also\n"
               "            run the same probe workload on the GPU and the CPU store and say which is faster\n");
  for (const Benchmark& b : kBenchmarks) std::fprintf(f, "  bench %s  %s\n", b.name, b.about);
  std::fprintf(f, "  (every benchmark takes --help)\n");
  return f == stderr ? 2 : 0;
}

/// `duet info [--measure-devices]`: the build and the machine; with --measure-devices also what
/// --device auto would choose by measurement (measure_devices with its default probe).
int info(int argc, char** argv) {
  const auto& d = duet::gpu::device();
  std::printf("duet 0.1.0\nbuild with CUDA: %s\nprocessor: %s\nhardware threads: %u\n", d.cuda_build ? "yes" : "no",
              duet::gpu::describe().c_str(), std::thread::hardware_concurrency());
  if (argc > 2 && std::string(argv[2]) == "--measure-devices") {
    duet::DeviceMeasurement m;
    const duet::Status s = duet::measure_devices(duet::StoreConfig{}, duet::DeviceProbe{}, &m);
    if (!s.ok()) {
      std::fprintf(stderr, "duet info: measuring the devices failed: %s\n", s.to_string().c_str());
      return 1;
    }
    std::printf("device auto chooses: %s\n", m.reason.c_str());
  } else if (argc > 2) {
    std::fprintf(stderr, "duet info: unknown option '%s' (the one option is --measure-devices)\n", argv[2]);
    return 2;
  }
  return 0;
}

/// The demo's keys and values: readable byte strings longer than the inline 8 bytes.
std::string demo_key(std::uint64_t i) {
  char b[32];
  std::snprintf(b, sizeof b, "user:%08llu", static_cast<unsigned long long>(i));
  return b;
}
std::string demo_value(std::uint64_t i, int generation) {
  char b[48];
  std::snprintf(b, sizeof b, "profile-%llu-v%d", static_cast<unsigned long long>(i), generation);
  return b;
}

/// Runs requests on key numbers `ids` in batches and prints one line: requests, found, share
/// answered by the Hot Cache, rate, and whether every outcome was the expected one.
/// `expect_found` < 0 skips the found check; `generation` >= 0 checks GET values (or previous
/// values of PUT and DELETE) against demo_value(id, generation).
bool run_batches(duet::KvSpace& kv, const char* what, KvRequest::Op op, const std::vector<std::uint64_t>& ids,
                 int put_generation, int expect_found, int generation) {
  constexpr std::size_t kBatch = 4096;
  std::vector<std::string> keys(kBatch), values(kBatch);
  std::vector<KvRequest> reqs(kBatch);
  std::vector<duet::KvTrace> trace(kBatch);  // which component answered each request
  std::uint64_t found = 0, hot = 0, wrong = 0;
  duet::Status first;
  double seconds = 0;
  for (std::size_t begin = 0; begin < ids.size(); begin += kBatch) {
    const std::size_t n = std::min(kBatch, ids.size() - begin);
    for (std::size_t i = 0; i < n; ++i) {
      keys[i] = demo_key(ids[begin + i]);
      reqs[i].op = op;
      reqs[i].key = keys[i];
      if (op == KvRequest::Op::kPut) {
        values[i] = demo_value(ids[begin + i], put_generation);
        reqs[i].value = values[i];
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    const duet::Status s = kv.execute(std::span<KvRequest>(reqs.data(), n), std::span<duet::KvTrace>(trace.data(), n));
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!s.ok() && first.ok()) first = s;
    for (std::size_t i = 0; i < n; ++i) {
      const KvRequest& r = reqs[i];
      found += r.found;
      hot += trace[i].path == duet::KvPath::kHot;
      if (expect_found >= 0 && r.found != (expect_found == 1)) ++wrong;
      else if (r.found && generation >= 0 && r.result != demo_value(ids[begin + i], generation)) ++wrong;
    }
  }
  const bool ok = first.ok() && wrong == 0;
  std::printf("  %-36s %8zu requests %8llu found  %5.1f%% hot  %7.2f M ops/s  %s\n", what, ids.size(),
              static_cast<unsigned long long>(found), ids.empty() ? 0.0 : 100.0 * static_cast<double>(hot) / ids.size(),
              seconds > 0 ? ids.size() / seconds / 1e6 : 0.0,
              !first.ok() ? first.to_string().c_str() : wrong ? "WRONG RESULTS" : "ok");
  return ok;
}

int demo(duet::DeviceChoice device, std::uint64_t keys) {
  duet::StoreConfig cfg;
  cfg.device = device;
  cfg.expected_keys = keys;
  cfg.router.mode = duet::RouterMode::kLearned;
  // A bin is hot when it draws more than 0.5% of the sampled requests: here, the bins of the
  // handful of popular keys below.
  cfg.router.threshold = 0.005;
  cfg.router.auto_switch = false;
  std::unique_ptr<duet::Store> store;
  duet::Status s = duet::Store::open(cfg, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "duet: cannot open a store: %s\n", s.to_string().c_str());
    return 1;
  }
  std::shared_ptr<duet::KvSpace> kv;
  s = store->create_kv("demo", &kv);
  if (!s.ok()) {
    std::fprintf(stderr, "duet: cannot create the kv keyspace: %s\n", s.to_string().c_str());
    return 1;
  }
  std::printf("duet demo: kv keyspace \"%s\", Canonical Store on %s; %llu keys like \"%s\"\n", kv->name().c_str(),
              store->device_description().c_str(), static_cast<unsigned long long>(keys), demo_key(0).c_str());

  std::vector<std::uint64_t> all(keys);
  for (std::uint64_t i = 0; i < keys; ++i) all[i] = i;
  // A skewed stream: 90% of the requests go to 16 popular keys, the rest anywhere.
  std::vector<std::uint64_t> skewed(keys);
  std::uint64_t x = 0x2545f4914f6cdd1dull;
  for (std::uint64_t i = 0; i < keys; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    skewed[i] = x % 10 < 9 ? (x >> 8) % std::min<std::uint64_t>(16, keys) : (x >> 8) % keys;
  }

  bool ok = run_batches(*kv, "PUT (insert new keys)", KvRequest::Op::kPut, all, 1, 0, -1);
  ok &= run_batches(*kv, "GET (every key present)", KvRequest::Op::kGet, all, 0, 1, 1);
  ok &= run_batches(*kv, "GET (90% on 16 popular keys)", KvRequest::Op::kGet, skewed, 0, 1, 1);
  const auto t0 = std::chrono::steady_clock::now();
  s = kv->router().switch_model();
  const double switch_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  duet::KvStats st = kv->stats();
  std::printf("  %-36s %8llu hot bins, installed in %.1f ms  %s\n", "switch_model (router learns)",
              static_cast<unsigned long long>(st.hot_bins), switch_ms, s.ok() ? "ok" : s.to_string().c_str());
  ok &= s.ok();
  ok &= run_batches(*kv, "GET (same stream, learned router)", KvRequest::Op::kGet, skewed, 0, 1, 1);
  ok &= run_batches(*kv, "PUT (overwrite every key)", KvRequest::Op::kPut, all, 2, 1, 1);
  ok &= run_batches(*kv, "DELETE (every key)", KvRequest::Op::kDelete, all, 0, 1, 2);
  ok &= run_batches(*kv, "GET (every key gone)", KvRequest::Op::kGet, all, 0, 0, -1);
  st = kv->stats();
  std::printf("  store: %s backend, %llu hot-cache entries, %llu batches to the Canonical Store, router %s\n",
              st.store_backend.c_str(), static_cast<unsigned long long>(st.hot_entries),
              static_cast<unsigned long long>(st.batches), st.router_model.c_str());
  std::printf("duet demo: %s\n", ok ? "done" : "FAILED");
  return ok ? 0 : 1;
}

/// `duet bench NAME [options]`: runs the named benchmark, or says which exist; a build without
/// benchmarks (-DDUET_BENCH=OFF) says so and returns 2.
int bench(int argc, char** argv) {
  const std::string name = argc >= 3 ? argv[2] : "";
  for (const Benchmark& b : kBenchmarks) {
    if (name != b.name && !(b.alias && name == b.alias)) continue;
    if (b.program) return run_program_bench(b, argc - 3, argv + 3);
    if (b.run) return b.run(argc - 2, argv + 2);
    std::fprintf(stderr, "duet bench: this build has no %s benchmark (configure with -DDUET_BENCH=ON)\n", b.name);
    return 2;
  }
  if (name.empty()) std::fprintf(stderr, "duet bench: name the benchmark to run:\n");
  else std::fprintf(stderr, "duet bench: '%s' is not a benchmark; they are:\n", name.c_str());
  return usage(stderr);
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "demo";
  if (cmd == "help" || cmd == "--help" || cmd == "-h") return usage(stdout);
  if (cmd == "info") return info(argc, argv);
  if (cmd == "server") return duet::server::run_server(argc - 2, argv + 2);
  if (cmd == "bench") return bench(argc, argv);
  if (cmd != "demo") return usage(stderr);
  duet::DeviceChoice device = duet::DeviceChoice::kAuto;
  std::uint64_t keys = 1u << 17;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      if (!duet::parse_device_choice(argv[++i], &device).ok()) {
        std::fprintf(stderr, "duet: --device takes auto, cpu or gpu\n");
        return 2;
      }
    } else if (a == "--keys" && i + 1 < argc) {
      char* end = nullptr;
      keys = std::strtoull(argv[++i], &end, 10);
      if (!end || *end || keys == 0 || keys > (1ull << 24)) {
        std::fprintf(stderr, "duet: --keys takes an integer from 1 to 2^24\n");
        return 2;
      }
    } else {
      return usage(stderr);
    }
  }
  return demo(device, keys);
}
