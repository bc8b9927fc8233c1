// duet_bench_compute: the compute operators' throughput on the CPU (all cores) and the GPU (one
// stream, inputs copied in and results out in every call, as inside a transaction), beside the
// measured limits: host memory read bandwidth (all cores) and, for the GPU, pinned host-to-device
// copy bandwidth (every GPU operator first copies its inputs over PCIe) and device copy
// bandwidth. Then MLP inference from concurrent callers, each launching its own inference
// against all of them going through the Batcher. Every system runs the same pre-generated
// tables; medians over --reps repetitions with [min, max]. JSON in bench/results/.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/json.hpp"
#include "common/parse.hpp"
#include "common/results.hpp"
#include "compute/compute.hpp"
#include "gpu/device.hpp"

using namespace duet::compute;
using duet::bench::Json;

namespace {

struct Options {
  std::uint64_t rows = 1ull << 24;
  std::uint64_t mlp_rows = 1ull << 16;
  unsigned reps = 5;
  unsigned callers = 0;  // 0: hardware threads
  std::uint64_t calls = 2000;
  std::string systems = "cpu,gpu";
  std::string out;
  bool quick = false;
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void must(const duet::Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "duet_bench_compute: %s: %s\n", what, s.to_string().c_str());
    std::exit(1);
  }
}

// Host read bandwidth with every core: each thread sums its slice of a 1 GiB array.
double host_read_bandwidth(unsigned threads) {
  const std::size_t n = (1ull << 30) / 8;
  std::vector<std::uint64_t> a(n, 1);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::atomic<std::uint64_t> sink{0};
    const double t0 = now_s();
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        std::uint64_t s = 0;
        for (std::size_t i = n * t / threads; i < n * (t + 1) / threads; ++i) s += a[i];
        sink += s;
      });
    for (auto& t : ts) t.join();
    best = std::max(best, n * 8.0 / (now_s() - t0));
  }
  return best;
}

Table make_table(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> k1(n), k2(n), price(n), qty(n);
  std::vector<std::string> tag(n);
  static const char* tags[] = {"AIR", "MAIL", "SHIP", "TRUCK", "RAIL"};
  for (std::uint64_t i = 0; i < n; ++i) {
    k1[i] = static_cast<std::int64_t>(rng() % (2 * n));
    k2[i] = static_cast<std::int64_t>(rng() % 4);
    price[i] = static_cast<std::int64_t>(rng() % 100000);
    qty[i] = static_cast<std::int64_t>(rng() % 50 + 1);
    tag[i] = tags[rng() % 5];
  }
  Table t;
  must(t.add("k1", Column::of_int64(k1)), "table");
  must(t.add("k2", Column::of_int64(k2)), "table");
  must(t.add("price", Column::of_int64(price, Type::kMoney)), "table");
  must(t.add("qty", Column::of_int64(qty)), "table");
  must(t.add("tag", Column::of_bytes(tag, 5)), "table");
  return t;
}

// The join's build side: n distinct keys drawn from the left side's key range, shuffled, and a
// sorted copy for the index join.
void make_dim(std::uint64_t n, std::uint64_t range, Table* shuffled, Table* sorted) {
  std::mt19937_64 rng(99);
  std::vector<std::int64_t> k(n);
  for (std::uint64_t i = 0; i < n; ++i) k[i] = static_cast<std::int64_t>(i * (range / n));
  std::vector<std::int64_t> v(n);
  for (auto& x : v) x = static_cast<std::int64_t>(rng() % 1000);
  must(sorted->add("k", Column::of_int64(k)), "dim");
  must(sorted->add("v", Column::of_int64(v)), "dim");
  std::shuffle(k.begin(), k.end(), rng);
  must(shuffled->add("k", Column::of_int64(k)), "dim");
  must(shuffled->add("v", Column::of_int64(v)), "dim");
}

struct Op {
  std::string name, what;
  std::uint64_t rows = 0, bytes = 0;  // rows processed, input bytes
  std::function<duet::Status(Context&)> run;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string err;
  const bool ok = duet::bench::scan_flags(argc, argv, &help, &o.quick, &err, [&](const std::string& f, const std::string& v) {
    auto count = [&](std::uint64_t* x) {
      auto c = duet::bench::parse_count(v);
      if (!c || *c == 0) {
        err = f + ": a positive count";
        return false;
      }
      *x = *c;
      return true;
    };
    std::uint64_t x = 0;
    if (f == "--rows") return count(&o.rows);
    if (f == "--mlp-rows") return count(&o.mlp_rows);
    if (f == "--calls") return count(&o.calls);
    if (f == "--reps") {
      if (!count(&x)) return false;
      o.reps = static_cast<unsigned>(x);
      return true;
    }
    if (f == "--callers") {
      if (!count(&x)) return false;
      o.callers = static_cast<unsigned>(x);
      return true;
    }
    if (f == "--systems") {
      o.systems = v;
      return true;
    }
    if (f == "--out") {
      o.out = v;
      return true;
    }
    err = "unknown flag " + f;
    return false;
  });
  if (help) {
    std::printf("duet_bench_compute [--rows N] [--mlp-rows N] [--reps R] [--callers T] [--calls N] [--systems cpu,gpu] "
                "[--out file.json] [--quick]\n");
    return 0;
  }
  if (!ok) {
    std::fprintf(stderr, "duet_bench_compute: %s\n", err.c_str());
    return 2;
  }
  if (o.quick) {
    o.rows = std::min<std::uint64_t>(o.rows, 1 << 20);
    o.mlp_rows = std::min<std::uint64_t>(o.mlp_rows, 1 << 12);
    o.calls = std::min<std::uint64_t>(o.calls, 200);
    o.reps = std::min(o.reps, 3u);
  }
  const std::vector<std::string> systems = duet::bench::split_list(o.systems);
  std::shared_ptr<Engine> engine;
  EngineConfig ec;
  must(Engine::open(ec, &engine), "engine");
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  if (o.callers == 0) o.callers = hw;
  const bool gpu = engine->gpu_available();
  const std::string date = duet::bench::utc_now();
  const std::string device = gpu ? duet::gpu::device().name : "cpu";

  // Limits.
  const double host_bw = host_read_bandwidth(hw);
  double h2d = 0, d2d = 0;
  if (gpu) must(engine->gpu_bandwidth(&h2d, &d2d), "gpu bandwidth");
  std::printf("limits: host read %.1f GB/s (%u threads)", host_bw / 1e9, hw);
  if (gpu) std::printf(", PCIe H2D %.1f GB/s, device copy %.1f GB/s", h2d / 1e9, d2d / 1e9);
  std::printf("\n");

  // Inputs, generated once.
  const Table t = make_table(o.rows, 1);
  Table dim, dim_sorted;
  make_dim(o.rows / 8, 2 * o.rows, &dim, &dim_sorted);
  Selection tenth;
  for (std::uint64_t i = 0; i < o.rows; i += 10) tenth.push_back(static_cast<std::uint32_t>(i));
  std::mt19937_64 rng(5);
  std::shuffle(tenth.begin(), tenth.end(), rng);
  Mlp olda, wide;
  {
    auto mk = [](std::vector<std::uint32_t> w, std::uint64_t seed) {
      std::mt19937_64 r(seed);
      Mlp m;
      for (std::size_t i = 0; i + 1 < w.size(); ++i) {
        Dense d;
        d.in = w[i];
        d.out = w[i + 1];
        d.act = i + 2 == w.size() ? Dense::kSigmoid : Dense::kRelu;
        std::uniform_real_distribution<float> u(-0.1f, 0.1f);
        d.w.resize(std::size_t{d.in} * d.out);
        d.b.resize(d.out);
        for (float& x : d.w) x = u(r);
        for (float& x : d.b) x = u(r);
        m.layers.push_back(std::move(d));
      }
      return m;
    };
    olda = mk({6, 128, 2}, 1);
    wide = mk({64, 1024, 256, 8}, 2);
  }
  ModelId olda_id, wide_id;
  must(engine->load_model(olda, &olda_id), "model");
  must(engine->load_model(wide, &wide_id), "model");
  std::vector<float> olda_x(o.mlp_rows * 6), wide_x(o.mlp_rows * 64), y;
  {
    std::uniform_real_distribution<float> u(-1, 1);
    for (float& x : olda_x) x = u(rng);
    for (float& x : wide_x) x = u(rng);
  }

  std::vector<Op> ops;
  const std::uint64_t n = o.rows;
  Predicate between;
  between.column = "k1";
  between.cmp = Cmp::kBetween;
  between.i = 0;
  between.i_hi = static_cast<std::int64_t>(n);  // about half the rows
  std::vector<Predicate> three(3);
  three[0] = between;
  three[1].column = "qty";
  three[1].cmp = Cmp::kLe;
  three[1].i = 25;
  three[2].column = "tag";
  three[2].cmp = Cmp::kEq;
  three[2].s = "AIR";
  Selection sel;
  Table tab;
  Column col;
  JoinPairs pairs;
  ops.push_back({"filter", "k1 between 0 and n (half the rows)", n, n * 8,
                 [&](Context& c) { return c.filter(t, std::span<const Predicate>(&between, 1), &sel); }});
  ops.push_back({"filter3", "k1 between, qty <= 25, tag = 'AIR'", n, n * (8 + 8 + 5),
                 [&](Context& c) { return c.filter(t, three, &sel); }});
  const std::vector<std::string> pcols{"k1", "price", "tag"};
  ops.push_back({"project", "k1, price, tag at a shuffled tenth of the rows", tenth.size(),
                 n * (8 + 8 + 5) + tenth.size() * 4, [&](Context& c) { return c.project(t, tenth, pcols, &tab); }});
  Expr mul;
  mul.a = "price";
  mul.b = "qty";
  ops.push_back({"derive", "price * qty", n, n * 16, [&](Context& c) { return c.derive(t, mul, &col); }});
  const std::vector<Agg> q1{{Agg::kSum, "price", "sum_price"}, {Agg::kCount, "", "n"}, {Agg::kMax, "qty", "max_qty"}};
  const std::vector<std::string> k2{"k2"}, k1{"k1"};
  ops.push_back({"aggregate_4_groups", "group by k2 (4 groups): sum price, count, max qty", n, n * 24,
                 [&](Context& c) { return c.aggregate(t, nullptr, k2, q1, &tab); }});
  const std::vector<Agg> hi{{Agg::kSum, "price", "sum_price"}, {Agg::kCount, "", "n"}};
  ops.push_back({"aggregate_many_groups", "group by k1 (about 0.8 n groups): sum price, count", n, n * 16,
                 [&](Context& c) { return c.aggregate(t, nullptr, k1, hi, &tab); }});
  ops.push_back({"hash_join", "n rows join n/8 distinct keys (shuffled)", n, n * 8 + (n / 8) * 8,
                 [&](Context& c) { return c.hash_join(t, "k1", dim, "k", &pairs); }});
  ops.push_back({"index_join", "n rows join n/8 sorted keys (binary search)", n, n * 8 + (n / 8) * 8,
                 [&](Context& c) { return c.index_join(t, "k1", dim_sorted, "k", &pairs); }});
  const SortKey sk{"k1", false}, top{"price", true};
  ops.push_back({"sort", "all rows by k1", n, n * 8, [&](Context& c) { return c.sort(t, std::span<const SortKey>(&sk, 1), 0, &sel); }});
  ops.push_back({"top_k", "100 rows by price descending", n, n * 8,
                 [&](Context& c) { return c.sort(t, std::span<const SortKey>(&top, 1), 100, &sel); }});
  ops.push_back({"mlp_6_128_2", "6 -> 128 ReLU -> 2 sigmoid, FP32", o.mlp_rows, o.mlp_rows * 6 * 4,
                 [&](Context& c) { return c.infer(olda_id, olda_x, o.mlp_rows, &y); }});
  ops.push_back({"mlp_64_1024_256_8", "64 -> 1024 -> 256 -> 8, FP32", o.mlp_rows, o.mlp_rows * 64 * 4,
                 [&](Context& c) { return c.infer(wide_id, wide_x, o.mlp_rows, &y); }});

  Json records = Json::array();
  std::printf("%-22s %-4s %12s %14s %22s %10s %8s\n", "op", "sys", "rows", "rows/s", "range", "GB/s", "of limit");
  for (const Op& op : ops) {
    for (const std::string& sys : systems) {
      const Device d = sys == "gpu" ? Device::kGpu : Device::kCpu;
      if (d == Device::kGpu && !gpu) continue;
      std::unique_ptr<Context> c;
      must(engine->context(d, &c), "context");
      must(op.run(*c), op.name.c_str());  // warm-up: scratch memory, pools, OpenBLAS threads
      std::vector<double> secs;
      for (unsigned r = 0; r < o.reps; ++r) {
        const double t0 = now_s();
        must(op.run(*c), op.name.c_str());
        secs.push_back(now_s() - t0);
      }
      std::vector<double> rate;
      for (double s : secs) rate.push_back(op.rows / s);
      const auto sum = duet::bench::summarize(rate);
      const double bw = sum.median * (static_cast<double>(op.bytes) / op.rows);
      const double limit = d == Device::kGpu ? h2d : host_bw;
      std::printf("%-22s %-4s %12llu %14.3e [%9.3e, %9.3e] %10.2f %7.1f%%\n", op.name.c_str(), sys.c_str(),
                  static_cast<unsigned long long>(op.rows), sum.median, sum.min, sum.max, bw / 1e9, 100.0 * bw / limit);
      Json r = Json::object();
      r.set("name", op.name);
      r.set("system", "duet-" + sys);
      r.set("workload", op.what);
      r.set("op", op.name);
      r.set("rows", op.rows);
      r.set("bytes", op.bytes);
      r.set("ops_per_s", sum.median);
      r.set("ops_per_s_min", sum.min);
      r.set("ops_per_s_max", sum.max);
      r.set("bytes_per_s", bw);
      r.set("limit", d == Device::kGpu ? "pcie_h2d_bytes_per_s" : "host_read_bytes_per_s");
      r.set("limit_bytes_per_s", limit);
      r.set("fraction_of_limit", bw / limit);
      records.push(std::move(r));
    }
  }

  // Concurrent callers, one row each (a payment's features): their own launches vs the batcher.
  std::printf("\n%-10s %-4s %8s %14s %10s %10s %10s %12s\n", "inference", "sys", "callers", "requests/s", "p50_us", "p99_us",
              "launches", "rows/launch");
  for (const std::string& sys : systems) {
    const Device d = sys == "gpu" ? Device::kGpu : Device::kCpu;
    if (d == Device::kGpu && !gpu) continue;
    for (const char* mode : {"per_caller", "batcher_1", "batcher_2"}) {
      std::vector<double> rates, p50s, p99s;
      std::uint64_t launches = 0;
      for (unsigned rep = 0; rep < o.reps; ++rep) {
        std::unique_ptr<Batcher> b;
        // batcher_1: one launch in flight; batcher_2: two (each on its own stream).
        must(Batcher::make(engine, olda_id, d, 1 << 16, &b, mode[0] == 'b' ? static_cast<unsigned>(mode[8] - '0') : 1),
             "batcher");
        std::vector<std::vector<double>> lat(o.callers);
        std::atomic<unsigned> ready{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> ts;
        for (unsigned c = 0; c < o.callers; ++c)
          ts.emplace_back([&, c] {
            std::unique_ptr<Context> ctx;
            must(engine->context(d, &ctx), "context");
            std::vector<float> x(olda_x.begin() + (c % 64) * 6, olda_x.begin() + (c % 64) * 6 + 6), yy;
            must(ctx->infer(olda_id, x, 1, &yy), "warm-up");
            ++ready;
            while (!go.load()) std::this_thread::yield();
            for (std::uint64_t i = 0; i < o.calls; ++i) {
              const double t0 = now_s();
              if (mode[0] == 'p') must(ctx->infer(olda_id, x, 1, &yy), "infer");
              else must(b->infer(x, 1, &yy), "infer");
              lat[c].push_back((now_s() - t0) * 1e6);
            }
          });
        while (ready.load() < o.callers) std::this_thread::yield();
        const double t0 = now_s();
        go = true;
        for (auto& th : ts) th.join();
        const double secs = now_s() - t0;
        std::vector<double> all;
        for (auto& l : lat) all.insert(all.end(), l.begin(), l.end());
        std::sort(all.begin(), all.end());
        rates.push_back(all.size() / secs);
        p50s.push_back(all[all.size() / 2]);
        p99s.push_back(all[std::min(all.size() - 1, all.size() * 99 / 100)]);
        launches = mode[0] == 'p' ? all.size() : b->launches();
      }
      const auto r = duet::bench::summarize(rates);
      const auto p50 = duet::bench::summarize(p50s), p99 = duet::bench::summarize(p99s);
      const double per = static_cast<double>(o.callers) * o.calls / std::max<std::uint64_t>(launches, 1);
      std::printf("%-10s %-4s %8u %14.0f %10.1f %10.1f %10llu %12.1f\n", mode, sys.c_str(), o.callers, r.median, p50.median,
                  p99.median, static_cast<unsigned long long>(launches), per);
      Json rec = Json::object();
      rec.set("name", std::string("inference_") + mode);
      rec.set("system", "duet-" + sys);
      rec.set("workload", "concurrent callers, 1 row each, model 6 -> 128 -> 2");
      rec.set("op", mode);
      rec.set("callers", o.callers);
      rec.set("calls_per_caller", o.calls);
      rec.set("ops_per_s", r.median);
      rec.set("ops_per_s_min", r.min);
      rec.set("ops_per_s_max", r.max);
      rec.set("p50_us", p50.median);
      rec.set("p99_us", p99.median);
      rec.set("launches_last_rep", launches);
      rec.set("rows_per_launch_last_rep", per);
      records.push(std::move(rec));
    }
  }

  Json config = Json::object();
  config.set("rows", o.rows);
  config.set("mlp_rows", o.mlp_rows);
  config.set("reps", o.reps);
  config.set("callers", o.callers);
  config.set("calls_per_caller", o.calls);
  config.set("systems", o.systems);
  config.set("quick", o.quick);
  config.set("cpu_threads", engine->cpu_threads());
  config.set("engine", engine->describe());
  config.set("host_read_bytes_per_s", host_bw);
  config.set("pcie_h2d_bytes_per_s", h2d);
  config.set("device_copy_bytes_per_s", d2d);
  config.set("timing", "each GPU call copies its inputs in and its result out and synchronises (one transaction's block); "
                       "rows/s = rows / wall time; GB/s = input bytes / wall time");
  const std::string path = o.out.empty() ? "bench/results/compute-" + std::string(gpu ? "gpu" : "cpu") + "/compute-" +
                                               duet::bench::utc_now(true) + ".json"
                                         : o.out;
  const Json doc = duet::bench::result_document("compute", device, duet::bench::commit_id(DUET_SOURCE_DIR), date, config,
                                                records);
  if (!duet::bench::write_result_file(path, doc, &err)) {
    std::fprintf(stderr, "duet_bench_compute: %s\n", err.c_str());
    return 1;
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
