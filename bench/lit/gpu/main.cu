// duet_bench_lit_gpu: throughput of the GPU LIT (index/lit/gpu_lit.hpp) on the workloads of
// dissertation 6.5, with every batch resident in GPU memory, and the GPU's random 8-byte
// gather rate as the ceiling to compare with.
//
// Workloads (keys drawn from [0, keys), the map prefilled with about half of them):
//   get     100% GET, uniform
//   insrem  50% INSERT, 50% REMOVE, uniform
//   mixed   80% GET, 10% UPDATE (half INSERT, half REMOVE), 10% RANGE of 50 keys, uniform
//   zipf    as mixed, keys Zipfian ordered along the key space (key 0 hottest), per --theta
//   gather  random 8-byte loads over a large array (accesses/s and GB/s of 32-byte sectors)
// A run executes --ops operations in batches of --batch (ranges count as operations); its time
// runs from the first batch's launch to the last batch's completion (the map synchronises its
// stream at the end of every batch), on the host's steady clock. Operations are generated on
// the GPU before timing, fresh for every run. The median of --runs runs is reported.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/json.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"

#ifndef DUET_SOURCE_DIR
#define DUET_SOURCE_DIR "."
#endif

using namespace duet;
using namespace duet::bench;
using lit::GpuOp;
using lit::GpuStatus;
using Clock = std::chrono::steady_clock;

namespace {

#define CK(expr)                                                                          \
  do {                                                                                    \
    cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_));                    \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

struct Options {
  std::vector<std::uint64_t> keys{10000000};
  std::vector<std::string> workloads{"mixed"};
  std::uint64_t ops = std::uint64_t{1} << 24;
  unsigned runs = 5;
  std::uint64_t batch = std::uint64_t{1} << 20;
  std::vector<double> thetas{0.1, 0.5, 0.8, 0.9, 0.99};
  std::uint64_t range_len = 50;
  std::string out;
  bool quick = false;
};

void usage() {
  std::fprintf(stderr,
               "usage: duet_bench_lit_gpu [--keys N[,N...]] [--workload get,insrem,mixed,zipf,gather|all]\n"
               "                          [--ops N] [--runs N] [--batch N] [--theta T[,T...]] [--out PATH] [--quick]\n");
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : std::string(); };
    if (a == "--quick") {
      o->quick = true;
    } else if (a == "--keys") {
      o->keys.clear();
      for (const std::string& s : split_list(val())) {
        auto c = parse_count(s);
        if (!c || *c < 100) return false;
        o->keys.push_back(*c);
      }
      if (o->keys.empty()) return false;
    } else if (a == "--workload") {
      o->workloads = split_list(val());
      if (o->workloads.size() == 1 && o->workloads[0] == "all") o->workloads = {"get", "insrem", "mixed", "zipf", "gather"};
      for (const std::string& w : o->workloads)
        if (w != "get" && w != "insrem" && w != "mixed" && w != "zipf" && w != "gather") return false;
    } else if (a == "--ops" || a == "--batch" || a == "--runs") {
      auto c = parse_count(val());
      if (!c || *c == 0) return false;
      if (a == "--ops") o->ops = *c;
      else if (a == "--batch") o->batch = *c;
      else o->runs = unsigned(*c);
    } else if (a == "--theta") {
      o->thetas.clear();
      for (const std::string& s : split_list(val())) {
        auto d = parse_double(s);
        if (!d || *d <= 0 || *d >= 1) return false;
        o->thetas.push_back(*d);
      }
      if (o->thetas.empty()) return false;
    } else if (a == "--out") {
      o->out = val();
      if (o->out.empty()) return false;
    } else {
      return false;
    }
  }
  if (o->quick) {
    o->keys = {100000};
    o->ops = std::min<std::uint64_t>(o->ops, 1 << 20);
    o->batch = std::min<std::uint64_t>(o->batch, 1 << 16);
    o->runs = std::min(o->runs, 2u);
  }
  return true;
}

__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Zipfian over [0, n) with the hottest key 0 (Gray et al., as YCSB's generator).
struct Zipf {
  bool on = false;
  double theta = 0, zetan = 0, alpha = 0, eta = 0, half_pow = 0;
  std::uint64_t n = 0;
  static Zipf make(std::uint64_t n, double theta) {
    Zipf z;
    z.on = true;
    z.n = n;
    z.theta = theta;
    double zeta2 = 1 + std::pow(0.5, theta), zn = 0;
    for (std::uint64_t i = 1; i <= n; ++i) zn += 1.0 / std::pow(double(i), theta);
    z.zetan = zn;
    z.alpha = 1.0 / (1.0 - theta);
    z.eta = (1 - std::pow(2.0 / double(n), 1 - theta)) / (1 - zeta2 / zn);
    z.half_pow = std::pow(0.5, theta);
    return z;
  }
  __device__ std::uint64_t draw(std::uint64_t h) const {
    const double u = double(h >> 11) * (1.0 / 9007199254740992.0);
    const double uz = u * zetan;
    if (uz < 1.0) return 0;
    if (uz < 1.0 + half_pow) return n > 1 ? 1 : 0;
    const std::uint64_t k = std::uint64_t(double(n) * pow(eta * u - eta + 1.0, alpha));
    return k < n ? k : n - 1;
  }
};

enum class Mix { kGet, kInsRem, kMixed, kPrefill };

/// Fills a batch: np point operations and nr ranges, from hash stream `seed`.
__global__ void gen_kernel(Mix mix, Zipf z, std::uint64_t keys, std::uint64_t seed, std::uint64_t np, GpuOp* ops,
                           std::uint64_t* k, std::uint64_t* v, std::uint64_t nr, std::uint64_t* rs, std::uint64_t* re,
                           std::uint64_t range_len) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < np + nr;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t h = mix64(seed ^ mix64(i));
    const std::uint64_t h2 = mix64(h);
    const std::uint64_t key = z.on ? z.draw(h) : h % keys;
    if (i < np) {
      GpuOp op = GpuOp::kGet;
      if (mix == Mix::kInsRem) op = (h2 & 1) ? GpuOp::kInsert : GpuOp::kRemove;
      else if (mix == Mix::kMixed) {
        const std::uint64_t p = h2 % 90;
        op = p < 80 ? GpuOp::kGet : p < 85 ? GpuOp::kInsert : GpuOp::kRemove;
      } else if (mix == Mix::kPrefill) op = GpuOp::kInsert;
      ops[i] = op;
      k[i] = mix == Mix::kPrefill ? i + seed : key;  // prefill: seed is the chunk's first key
      v[i] = h2;
    } else {
      const std::uint64_t q = i - np;
      rs[q] = key;
      re[q] = key + range_len - 1 < keys ? key + range_len - 1 : keys - 1;
    }
  }
}

/// Prefill: of a chunk of consecutive keys, the INSERTs of keys whose hash is odd become GETs,
/// so about half of the keys are inserted.
__global__ void prefill_select_kernel(GpuOp* ops, const std::uint64_t* k, std::uint64_t n) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    if (mix64(k[i] * 0x2545F4914F6CDD1Dull) & 1) ops[i] = GpuOp::kGet;
}

__global__ void count_bad_kernel(const GpuStatus* st, std::uint64_t n, unsigned long long* bad) {
  unsigned long long b = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    b += st[i] == GpuStatus::kInvalid || st[i] == GpuStatus::kRetry;
  if (b) atomicAdd(bad, b);
}

__global__ void gather_kernel(const std::uint64_t* __restrict__ a, std::uint64_t mask, unsigned per_thread,
                              std::uint64_t seed, std::uint64_t* sink) {
  const std::uint64_t t = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  std::uint64_t x = mix64(seed ^ t), acc = 0;
  for (unsigned j = 0; j < per_thread; j += 8) {
    std::uint64_t v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      x = mix64(x);
      v[u] = __ldcg(&a[x & mask]);
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) acc ^= v[u];
  }
  if (acc == 0x123456789ull) *sink = acc;
}

template <class T>
struct Dev {
  T* p = nullptr;
  explicit Dev(std::size_t n) { CK(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T))); }
  ~Dev() { cudaFree(p); }
};

struct Sample {
  std::vector<double> ops_per_s;
  std::uint64_t bad = 0;
  std::uint64_t range_entries = 0;
};

Json record(const std::string& workload, std::uint64_t keys, double theta, const Options& o, const Sample& s,
            std::uint64_t ops_per_run) {
  const Summary sm = summarize(s.ops_per_s);
  Json r = Json::object();
  r.set("name", "lit-gpu/" + workload);
  r.set("system", "duet-lit-gpu");
  r.set("workload", workload);
  r.set("op", workload == "get" ? "get" : workload == "insrem" ? "insert/remove" : "get/update/range");
  r.set("keys", keys);
  if (theta > 0) r.set("theta", theta);
  r.set("batch", o.batch);
  r.set("ops_per_run", ops_per_run);
  r.set("runs", o.runs);
  r.set("ops_per_s", sm.median);
  r.set("ops_per_s_min", sm.min);
  r.set("ops_per_s_max", sm.max);
  r.set("ops_per_s_all", Json::array_of(s.ops_per_s));
  r.set("bad_statuses", s.bad);
  if (s.range_entries) r.set("range_entries_last_run", s.range_entries);
  return r;
}

/// Builds a map over [0, keys) prefilled with about half of the keys.
std::unique_ptr<lit::GpuMap> build_map(std::uint64_t keys, std::uint64_t batch) {
  lit::GpuConfig c;
  c.universe_min = 0;
  c.universe_max = keys - 1;
  c.predicted_min = 0;
  c.predicted_max = keys - 1;
  c.bucket_width = 10;
  std::unique_ptr<lit::GpuMap> m;
  Status s = lit::GpuMap::create(c, &m);
  if (!s.ok()) {
    std::fprintf(stderr, "create: %s\n", s.to_string().c_str());
    std::exit(1);
  }
  const std::uint64_t chunk = std::max<std::uint64_t>(batch, 1 << 22);
  Dev<GpuOp> ops(chunk);
  Dev<std::uint64_t> k(chunk), v(chunk), out(chunk);
  Dev<GpuStatus> st(chunk);
  const int blocks = gpu::device().sm_count * 8;
  for (std::uint64_t first = 0; first < keys; first += chunk) {
    const std::uint64_t n = std::min(chunk, keys - first);
    gen_kernel<<<blocks, 256>>>(Mix::kPrefill, Zipf{}, keys, first, n, ops.p, k.p, v.p, 0, nullptr, nullptr, 0);
    prefill_select_kernel<<<blocks, 256>>>(ops.p, k.p, n);
    CK(cudaDeviceSynchronize());
    s = m->execute_resident({ops.p, k.p, v.p, n}, {st.p, out.p}, nullptr, nullptr);
    if (!s.ok()) {
      std::fprintf(stderr, "prefill: %s\n", s.to_string().c_str());
      std::exit(1);
    }
  }
  return m;
}

Sample run_workload(lit::GpuMap& m, Mix mix, const Zipf& z, std::uint64_t keys, const Options& o, std::uint64_t* ops_run) {
  const std::uint64_t batch = std::min(o.batch, o.ops);
  const std::uint64_t nbatches = (o.ops + batch - 1) / batch;
  const std::uint64_t nr = mix == Mix::kMixed ? batch / 10 : 0;
  const std::uint64_t np = batch - nr;
  *ops_run = nbatches * batch;
  Dev<GpuOp> ops(np * nbatches);
  Dev<std::uint64_t> k(np * nbatches), v(np * nbatches), out(np), rs(nr * nbatches + 1), re(nr * nbatches + 1);
  Dev<GpuStatus> st(np);
  Dev<unsigned long long> bad(1);
  const int blocks = gpu::device().sm_count * 8;
  Sample s;
  for (unsigned run = 0; run < o.runs + 1; ++run) {  // run 0 warms up and is not reported
    for (std::uint64_t b = 0; b < nbatches; ++b)
      gen_kernel<<<blocks, 256>>>(mix, z, keys, mix64(run * 1000003 + b + 17), np, ops.p + b * np, k.p + b * np,
                                  v.p + b * np, nr, rs.p + b * nr, re.p + b * nr, o.range_len);
    CK(cudaMemset(bad.p, 0, sizeof(unsigned long long)));
    CK(cudaDeviceSynchronize());
    std::uint64_t entries = 0;
    const auto t0 = Clock::now();
    for (std::uint64_t b = 0; b < nbatches; ++b) {
      lit::GpuRangeBatch rb{rs.p + b * nr, re.p + b * nr, nr, 0};
      lit::GpuRangeDeviceResults rr;
      const Status es = m.execute_resident({ops.p + b * np, k.p + b * np, v.p + b * np, np}, {st.p, out.p},
                                           nr ? &rb : nullptr, nr ? &rr : nullptr);
      if (!es.ok()) {
        std::fprintf(stderr, "batch: %s\n", es.to_string().c_str());
        s.bad += 1;
      }
      if (nr) entries += rr.total;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    // Statuses of the last batch are checked (the map is verified by the unit tests).
    count_bad_kernel<<<blocks, 256>>>(st.p, np, bad.p);
    unsigned long long h_bad = 0;
    CK(cudaMemcpy(&h_bad, bad.p, sizeof(h_bad), cudaMemcpyDeviceToHost));
    s.bad += h_bad;
    if (run > 0) s.ops_per_s.push_back(double(*ops_run) / secs);
    s.range_entries = entries;
  }
  return s;
}

Json gather_record(const Options& o) {
  std::size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  std::uint64_t words = std::uint64_t{1} << 20;
  while (words * 16 <= std::min<std::uint64_t>(free_b / 2, std::uint64_t{16} << 30)) words *= 2;
  if (o.quick) words = std::min<std::uint64_t>(words, std::uint64_t{1} << 24);
  Dev<std::uint64_t> a(words), sink(1);
  CK(cudaMemset(a.p, 1, words * 8));
  const int sms = gpu::device().sm_count;
  const unsigned threads = 256, blocks = unsigned(sms) * 8, per = 512;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<double> rates;
  for (unsigned r = 0; r < o.runs + 1; ++r) {
    CK(cudaEventRecord(e0));
    gather_kernel<<<blocks, threads>>>(a.p, words - 1, per, r * 7919 + 1, sink.p);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (r > 0) rates.push_back(double(blocks) * threads * per / (ms * 1e-3));
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const Summary sm = summarize(rates);
  Json rec = Json::object();
  rec.set("name", "gpu/random-gather");
  rec.set("system", "gpu");
  rec.set("workload", "gather");
  rec.set("op", "random 8-byte load");
  rec.set("array_bytes", words * 8);
  rec.set("accesses_per_s", sm.median);
  rec.set("sector_bytes_per_s", sm.median * 32);
  rec.set("accesses_per_s_all", Json::array_of(rates));
  std::printf("%-8s %12s %6s %14.3e accesses/s  %8.1f GB/s of 32-byte sectors (array %.1f GiB)\n", "gather", "-", "-",
              sm.median, sm.median * 32 / 1e9, double(words * 8) / double(1ull << 30));
  return rec;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    usage();
    return 1;
  }
  const gpu::DeviceInfo& dev = gpu::device();
  if (!dev.present) {
    std::fprintf(stderr, "duet_bench_lit_gpu: no GPU (%s)\n", dev.reason.c_str());
    return 1;
  }
  const std::string date = utc_now(false), stamp = utc_now(true);
  Json records = Json::array();
  bool ok = true;
  std::printf("%-8s %12s %6s %14s %14s %14s\n", "workload", "keys", "theta", "ops/s median", "min", "max");
  bool want_gather = false;
  for (const std::uint64_t keys : o.keys) {
    std::unique_ptr<lit::GpuMap> map;
    for (const std::string& w : o.workloads) {
      if (w == "gather") {
        want_gather = true;
        continue;
      }
      if (!map) map = build_map(keys, o.batch);
      std::vector<double> thetas = w == "zipf" ? o.thetas : std::vector<double>{0};
      for (const double theta : thetas) {
        const Mix mix = w == "get" ? Mix::kGet : w == "insrem" ? Mix::kInsRem : Mix::kMixed;
        const Zipf z = theta > 0 ? Zipf::make(keys, theta) : Zipf{};
        std::uint64_t per_run = 0;
        const Sample s = run_workload(*map, mix, z, keys, o, &per_run);
        const Summary sm = summarize(s.ops_per_s);
        std::printf("%-8s %12llu %6.2f %14.3e %14.3e %14.3e%s\n", w.c_str(), (unsigned long long)keys, theta, sm.median,
                    sm.min, sm.max, s.bad ? "  BAD STATUSES" : "");
        std::fflush(stdout);
        ok &= s.bad == 0;
        records.push(record(w, keys, theta, o, s, per_run));
      }
    }
    if (map) {
      const lit::GpuStats st = map->stats();
      std::printf("         map: %llu buckets, %llu of %llu pool nodes touched, %llu recycled\n",
                  (unsigned long long)st.buckets, (unsigned long long)st.nodes_touched,
                  (unsigned long long)st.node_capacity, (unsigned long long)st.nodes_recycled);
    }
  }
  if (want_gather) records.push(gather_record(o));

  Json config = Json::object();
  config.set("keys", Json::array_of(o.keys));
  config.set("workloads", Json::array_of(o.workloads));
  config.set("ops_per_run", o.ops);
  config.set("runs", o.runs);
  config.set("batch", o.batch);
  config.set("thetas", Json::array_of(o.thetas));
  config.set("range_len", o.range_len);
  config.set("bucket_width", 10);
  config.set("prefill", "about half of the keys");
  config.set("timing", "steady clock from the first batch's launch to the last batch's stream sync");
  config.set("quick", o.quick);
  const std::string path = o.out.empty() ? "bench/results/lit-gpu/lit-gpu-" + stamp + ".json" : o.out;
  const Json doc = result_document("lit-gpu", dev.name, commit_id(DUET_SOURCE_DIR), date, std::move(config),
                                   std::move(records));
  std::string error;
  if (!write_result_file(path, doc, &error)) {
    std::fprintf(stderr, "duet_bench_lit_gpu: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  return ok ? 0 : 2;
}
