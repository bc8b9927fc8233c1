// duet_bench_cods: the CODS lazy list, hash set and B-link tree (src/index/cods; issue 18,
// dissertation chapter 5) against their peers on the same pre-generated work.
//
// CPU figures: every system replays the same per-thread operation streams with the same number
// of threads, for a fixed time; half the key range is prefilled (from 16 threads at most, in
// one random order shared by all systems). GPU figures: the CODS GPU batch driver, L-Slab and
// the batched GPU LIT run the same 4,000,000-op stream as one batch resident in GPU memory,
// beside the GPU's random-access limit, and the CPU structures run that same shape with every
// hardware thread. Prints a table; writes one JSON file (bench/common/results.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/parse.hpp"
#include "common/results.hpp"
#include "gpu.hpp"
#include "gpu_versioned.hpp"
#include "remote.hpp"
#include "systems.hpp"
#include "workload.hpp"

namespace duet::bench::cods {
namespace {

using Clk = std::chrono::steady_clock;

const char* kUsage = R"(usage: duet_bench_cods [options]
  --figures LIST   of list,list-k,hash,hash-k,tree,tree-k,gpu,gpu-cpu,remote (default all
                   but remote)
                   list/hash/tree: CODS at tuned K and K = 1 (hash set: K = 2, 6 and 8) against
                   the peers, every mix at 1 and the most threads, and mix 90 at every thread count;
                   *-k: the K sweeps (mix 90, 1 and the most threads); gpu: the GPU shapes;
                   gpu-cpu: the CPU structures on the GPU shapes with the most threads;
                   remote: the structures on simulated remote memory (remote.hpp), mix 95;
                   vtree (not in the default): the versioned tree against the plain tree on
                   the GPU (gpu_versioned.hpp), 10^7 keys, K = 14 (16 lanes) and 30 (32 lanes)
  --remote-delay-ns N  delay per remote round trip in the remote figure (default 1500)
  --threads LIST   CPU worker threads (default 1,2)
  --mixes LIST     contains/GET percentages (default 80,90,95,100)
  --systems LIST   only these CPU systems (default: each figure's own; see --list)
  --seconds S      each CPU run's measured time (default 0.1)
  --repeats N      runs per point; the table shows the median and range (default 3)
  --stream N       operations generated per CPU thread, replayed cyclically (default 2^18)
  --gpu-ops N      operations per GPU batch (default 4,000,000)
  --gpu-shapes L   of list,hash,tree: the GPU (and gpu-cpu) shapes to run (default all)
  --gpu-filter L   run only the GPU (and vtree) systems whose names contain one of these
                   (default all)
  --vtree-mixes L  run only these vtree mixes (find, get90, get80, get50, erase-find,
                   r10-get80, r10-get50, insert-rq-50, insert-rq-5; default all)
  --seed N         workload seed (default 1)
  --quick          smoke sizes: ranges / 10, 0.02 s, 1 repeat, 2^14-op streams, 2^18 GPU ops
  --list           print the systems and exit
  --out PATH       JSON output (default bench/results/cods/cods-<UTC time>.json)
)";

struct Options {
  std::vector<std::string> figures{"list", "list-k", "hash", "hash-k", "tree", "tree-k", "gpu", "gpu-cpu"};
  std::vector<unsigned> threads{1, 2};
  std::vector<double> mixes{80, 90, 95, 100};
  std::vector<std::string> systems;
  double seconds = 0.1;
  unsigned repeats = 3;
  std::uint64_t stream = 1u << 18;
  std::uint64_t gpu_ops = 4000000;
  std::vector<std::string> gpu_shapes{"list", "hash", "tree"};
  std::vector<std::string> gpu_filter;
  std::vector<std::string> vtree_mixes;
  std::uint64_t remote_delay_ns = 1500;
  std::uint64_t seed = 1;
  bool quick = false, list = false;
  std::string out;
};

bool parse(int argc, char** argv, Options* o, bool* help, std::string* error) {
  std::vector<char*> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--list") == 0) o->list = true;
    else args.push_back(argv[i]);
  }
  bool quick = false, seconds_set = false, repeats_set = false, stream_set = false, gpu_ops_set = false;
  const bool ok = scan_flags(
      static_cast<int>(args.size()), args.data(), help, &quick, error,
      [&](const std::string& f, const std::string& v) {
        auto fail = [&](const std::string& why) { return *error = f + ": " + why, false; };
        if (f == "--figures") {
          o->figures = split_list(v);
          for (auto& x : o->figures)
            if (x != "list" && x != "list-k" && x != "hash" && x != "hash-k" && x != "tree" && x != "tree-k" &&
                x != "gpu" && x != "gpu-cpu" && x != "remote" && x != "vtree")
              return fail("unknown figure " + x);
        } else if (f == "--threads") {
          o->threads.clear();
          for (auto& x : split_list(v)) {
            auto c = parse_count(x);
            if (!c || *c == 0 || *c > 1024) return fail("bad thread count " + x);
            o->threads.push_back(static_cast<unsigned>(*c));
          }
          if (o->threads.empty()) return fail("empty list");
        } else if (f == "--mixes") {
          o->mixes.clear();
          for (auto& x : split_list(v)) {
            auto d = parse_double(x);
            if (!d || *d < 0 || *d > 100) return fail("a mix is a percentage in [0, 100]");
            o->mixes.push_back(*d);
          }
          if (o->mixes.empty()) return fail("empty list");
        } else if (f == "--systems") {
          o->systems = split_list(v);
        } else if (f == "--seconds") {
          auto d = parse_double(v);
          if (!d || *d <= 0) return fail("must be > 0");
          o->seconds = *d;
          seconds_set = true;
        } else if (f == "--repeats") {
          auto c = parse_count(v);
          if (!c || *c == 0 || *c > 1000) return fail("must be in [1, 1000]");
          o->repeats = static_cast<unsigned>(*c);
          repeats_set = true;
        } else if (f == "--stream") {
          auto c = parse_count(v);
          if (!c || *c == 0) return fail("must be > 0");
          o->stream = *c;
          stream_set = true;
        } else if (f == "--gpu-ops") {
          auto c = parse_count(v);
          if (!c || *c == 0 || *c > (std::uint64_t{1} << 31)) return fail("must be in [1, 2^31]");
          o->gpu_ops = *c;
          gpu_ops_set = true;
        } else if (f == "--gpu-shapes") {
          o->gpu_shapes = split_list(v);
          for (auto& x : o->gpu_shapes)
            if (x != "list" && x != "hash" && x != "tree") return fail("unknown shape " + x);
        } else if (f == "--gpu-filter") {
          o->gpu_filter = split_list(v);
        } else if (f == "--vtree-mixes") {
          o->vtree_mixes = split_list(v);
        } else if (f == "--remote-delay-ns") {
          auto c = parse_count(v);
          if (!c || *c > 1000000000) return fail("must be in [0, 10^9]");
          o->remote_delay_ns = *c;
        } else if (f == "--seed") {
          auto c = parse_count(v);
          if (!c) return fail("bad seed");
          o->seed = *c;
        } else if (f == "--out") {
          o->out = v;
        } else {
          return fail("unknown flag");
        }
        return true;
      });
  if (!ok) return false;
  o->quick = quick;
  if (quick) {
    if (!seconds_set) o->seconds = 0.02;
    if (!repeats_set) o->repeats = 1;
    if (!stream_set) o->stream = 1u << 14;
    if (!gpu_ops_set) o->gpu_ops = 1u << 18;
  }
  return true;
}

/// One CPU point's shape and systems.
struct CpuExperiment {
  std::string figure;
  Shape shape;
  std::uint64_t keys;  ///< prefilled
  std::vector<std::string> systems;
  std::vector<double> mixes;
  std::vector<unsigned> threads;
};

std::vector<std::string> cods_names(Structure s, std::initializer_list<unsigned> ks, bool both = true) {
  std::vector<std::string> out;
  for (unsigned k : ks) out.push_back(cods_name(s, true, k));
  if (both)
    for (unsigned k : ks) out.push_back(cods_name(s, false, k));
  return out;
}

std::vector<std::string> sweep(Structure s, unsigned lo, unsigned hi) {
  std::vector<std::string> out;
  for (int fa = 1; fa >= 0; --fa)
    for (unsigned k = lo; k <= hi; ++k) out.push_back(cods_name(s, fa != 0, k));
  return out;
}

std::vector<std::string> plus(std::vector<std::string> a, std::initializer_list<const char*> b) {
  for (const char* x : b) a.emplace_back(x);
  return a;
}

/// The CPU experiments of the chosen figures. `top` is the largest thread count.
std::vector<CpuExperiment> cpu_experiments(const Options& o) {
  const std::uint64_t div = o.quick ? 10 : 1;
  const unsigned top = *std::max_element(o.threads.begin(), o.threads.end());
  std::vector<unsigned> ends{1};
  if (top != 1) ends.push_back(top);
  std::vector<unsigned> scale;
  for (unsigned t : o.threads)
    if (t != 1 && t != top) scale.push_back(t);
  const std::vector<double> mid{90};
  const Shape list{Structure::kList, 1, 2000, 0}, hash{Structure::kHash, 125000 / div, 1000000 / div, 0},
      tree{Structure::kTree, 1, 1000000 / div, 0};
  const auto list_sys = plus(cods_names(Structure::kList, {8, 1}), {"cds-lazy-list", "cds-michael-list"});
  const auto hash_sys = plus(cods_names(Structure::kHash, {8, 6, 2}), {"cds-michael-hash", "cds-split-list", "tbb-hash-map"});
  const auto tree_sys = plus(cods_names(Structure::kTree, {16, 8, 4, 2, 1}, false),
                             {"cods-tree-ew-k8", "cds-skip-list", "tbb-set", "lit"});
  std::vector<CpuExperiment> e;
  for (const std::string& f : o.figures) {
    if (f == "list") {
      e.push_back({f, list, 1000, list_sys, o.mixes, ends});
      if (!scale.empty()) e.push_back({f, list, 1000, list_sys, mid, scale});
    } else if (f == "list-k") {
      e.push_back({f, list, 1000, sweep(Structure::kList, 1, 16), mid, ends});
    } else if (f == "hash") {
      e.push_back({f, hash, 500000 / div, hash_sys, o.mixes, ends});
      if (!scale.empty()) e.push_back({f, hash, 500000 / div, hash_sys, mid, scale});
    } else if (f == "hash-k") {
      e.push_back({f, hash, 500000 / div, sweep(Structure::kHash, 1, 8), mid, ends});
    } else if (f == "tree") {
      e.push_back({f, tree, 500000 / div, tree_sys, o.mixes, ends});
      if (!scale.empty()) e.push_back({f, tree, 500000 / div, tree_sys, mid, scale});
    } else if (f == "tree-k") {
      e.push_back({f, tree, 500000 / div, sweep(Structure::kTree, 1, 16), mid, ends});
    }
  }
  return e;
}

struct RunResult {
  std::string error;
  double seconds = 0;
  std::uint64_t ops = 0, contains = 0, hits = 0;
};

/// Prefills a fresh system (from up to 16 threads, each a slice of the shared random order),
/// then runs one worker per stream for o.seconds.
RunResult run_once(const SystemInfo& sys, Shape shape, const std::vector<std::uint64_t>& prefill,
                   const std::vector<std::vector<std::uint64_t>>& streams, const Options& o) {
  RunResult res;
  const unsigned n = static_cast<unsigned>(streams.size());
  const unsigned pre_threads =
      std::max(1u, std::min<unsigned>({16u, std::max(1u, std::thread::hardware_concurrency()), n * 4}));
  shape.threads = std::max(n, pre_threads);
  std::string why;
  std::unique_ptr<System> s = sys.make(shape, &why);
  if (!s) {
    res.error = why.empty() ? "could not build" : why;
    return res;
  }
  std::vector<std::string> errors(std::max(n, pre_threads));
  {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < pre_threads; ++t)
      ts.emplace_back([&, t] {
        std::unique_ptr<Worker> w = s->attach();
        if (!w) {
          errors[t] = "attach failed";
          return;
        }
        for (std::size_t i = t; i < prefill.size(); i += pre_threads)
          if (!w->insert(prefill[i])) errors[t] = "prefill insert of a fresh key failed";
      });
    for (auto& t : ts) t.join();
  }
  for (auto& e : errors)
    if (!e.empty()) {
      res.error = e;
      return res;
    }
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::uint64_t> done(n), contains(n), hits(n);
  std::vector<Clk::time_point> end(n);
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < n; ++i)
    ts.emplace_back([&, i] {
      std::unique_ptr<Worker> w = s->attach();
      if (!w) errors[i] = "attach failed";
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      if (!w) return;
      const std::vector<std::uint64_t>& ops = streams[i];
      const std::size_t len = ops.size();
      std::size_t at = 0;
      std::uint64_t count = 0, c = 0, h = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        for (int j = 0; j < 64; ++j) {
          const std::uint64_t e = ops[at];
          switch (kind_of(e)) {
            case Kind::kInsert: w->insert(key_of(e)); break;
            case Kind::kRemove: w->remove(key_of(e)); break;
            default:
              ++c;
              h += w->contains(key_of(e));
              break;
          }
          if (++at == len) at = 0;
        }
        count += 64;
      }
      end[i] = Clk::now();
      done[i] = count, contains[i] = c, hits[i] = h;
      w.reset();
    });
  while (ready.load() < n) std::this_thread::yield();
  const auto t0 = Clk::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop.store(true);
  for (auto& t : ts) t.join();
  for (unsigned i = 0; i < n; ++i) {
    if (!errors[i].empty()) res.error = errors[i];
    res.ops += done[i], res.contains += contains[i], res.hits += hits[i];
    res.seconds = std::max(res.seconds, std::chrono::duration<double>(end[i] - t0).count());
  }
  return res;
}

void print_row(const std::string& fig, const std::string& system, const std::string& shape, double mix, unsigned threads,
               const Summary& s, const std::string& note) {
  char range[64];
  std::snprintf(range, sizeof range, "[%.2f-%.2f]", s.min / 1e6, s.max / 1e6);
  std::printf("%-8s %-22s %-26s %5.0f %4u %10.2f %19s %s\n", fig.c_str(), system.c_str(), shape.c_str(), mix, threads,
              s.median / 1e6, range, note.c_str());
  std::fflush(stdout);
}

std::string shape_text(const Shape& s, std::uint64_t keys) {
  std::string t = std::string(structure_name(s.structure)) + " r=" + std::to_string(s.range) + " n=" + std::to_string(keys);
  if (s.structure == Structure::kHash) t += " b=" + std::to_string(s.buckets);
  return t;
}

/// Runs one CPU point (a system, a shape, a mix, a thread count) and returns its record.
Json cpu_point(const std::string& figure, const SystemInfo& sys, const Shape& shape, std::uint64_t keys, double mix,
               unsigned threads, const Options& o, bool* ok) {
  Json rec = Json::object();
  rec.set("name", figure);
  rec.set("system", sys.name);
  rec.set("processor", "cpu");
  rec.set("structure", structure_name(shape.structure));
  rec.set("k", sys.k);
  rec.set("group", "cpu-thread");
  rec.set("regime", sys.regime);
  rec.set("mode", sys.k ? "group" : "");
  rec.set("range", shape.range);
  rec.set("keys", keys);
  rec.set("buckets", shape.buckets);
  rec.set("workload", "uniform keys, contains " + std::to_string(static_cast<int>(mix)) + "%, inserts and removes split the rest");
  rec.set("contains_percent", mix);
  rec.set("threads", threads);
  rec.set("op", "mix");
  if (!sys.removes && mix < 100) {
    rec.set("available", false);
    rec.set("why", "no concurrent remove");
    return rec;
  }
  const std::vector<std::uint64_t> pre = prefill_keys(shape.range, keys, o.seed);
  const auto streams = make_streams(shape.range, mix, threads, o.stream, o.seed);
  std::vector<double> xs;
  Json runs = Json::array();
  std::string err;
  double hit = 0;
  for (unsigned r = 0; r < o.repeats; ++r) {
    RunResult rr = run_once(sys, shape, pre, streams, o);
    if (!rr.error.empty()) {
      err = rr.error;
      break;
    }
    xs.push_back(static_cast<double>(rr.ops) / rr.seconds);
    hit = rr.contains ? static_cast<double>(rr.hits) / static_cast<double>(rr.contains) : 0;
    Json run = Json::object();
    run.set("ops", rr.ops);
    run.set("seconds", rr.seconds);
    run.set("contains_hit_ratio", hit);
    runs.push(std::move(run));
  }
  const Summary s = summarize(xs);
  rec.set("available", true);
  rec.set("ok", err.empty());
  if (!err.empty()) rec.set("error", err);
  rec.set("ops_per_s", summary_json(s));
  rec.set("runs", std::move(runs));
  *ok &= err.empty();
  print_row(figure, sys.name, shape_text(shape, keys), mix, threads, s, err.empty() ? "" : "ERROR " + err);
  return rec;
}

/// A GPU shape: its structure and workload, and the CODS configurations run on it.
struct GpuShape {
  std::string structure;
  std::uint64_t range, keys, buckets;
  std::vector<GpuPoint> points;
  std::string peer;  ///< "lslab", "lit" or ""
};

std::vector<GpuShape> gpu_shapes(const Options& o) {
  const std::uint64_t div = o.quick ? 100 : 1;
  std::vector<GpuShape> v;
  // List: range 20,000, 10,000 keys; full warp, half warp (both regimes), and an 8-lane tile.
  v.push_back({"list", 20000 / div, 10000 / div, 1,
               {{"list", 30, 32, true, 1}, {"list", 30, 32, false, 1}, {"list", 14, 16, true, 1},
                {"list", 14, 16, false, 1}, {"list", 6, 8, true, 1}, {"list", 30, 32, true, 1, true},
                {"list", 30, 32, true, 1, false, 2}},
               ""});
  // Hash set: 10^6 keys (range 2 x 10^6), 30 keys per bucket (33,333 buckets) on full warps and
  // 14 per bucket (71,428) on half warps and 8-lane tiles; L-Slab on the same work.
  v.push_back({"hash", 2000000 / div, 1000000 / div, 0,
               {{"hash", 30, 32, true, 33333 / div}, {"hash", 30, 32, false, 33333 / div},
                {"hash", 14, 16, true, 71428 / div}, {"hash", 14, 16, false, 71428 / div},
                {"hash", 14, 8, true, 71428 / div},
                // One lane per request, and mixed mode (GETs on tiles, updates on one lane).
                {"hash", 30, 1, true, 33333 / div}, {"hash", 30, 32, true, 33333 / div, true},
                {"hash", 14, 1, true, 71428 / div}, {"hash", 14, 16, true, 71428 / div, true},
                {"hash", 14, 16, false, 71428 / div, true},
                // The other order (GpuConfig::order) than the default's: what GETs first gains.
                {"hash", 14, 1, true, 71428 / div, false, 2}, {"hash", 14, 16, true, 71428 / div, false, 1},
                {"hash", 30, 32, true, 33333 / div, false, 1}},
               "lslab"});
  // B-link tree: 10^7 keys (range 2 x 10^7); the GPU LIT on the same work.
  v.push_back({"tree", 20000000 / div, 10000000 / div, 1,
               {{"tree", 14, 16, true, 1}, {"tree", 14, 16, false, 1}, {"tree", 30, 32, true, 1}, {"tree", 6, 8, true, 1},
                {"tree", 14, 1, true, 1}, {"tree", 14, 16, true, 1, true}, {"tree", 14, 1, true, 1, false, 2},
                {"tree", 14, 16, true, 1, false, 2}},
               "lit"});
  return v;
}

Json gpu_record(const std::string& system, const GpuShape& sh, double mix, const GpuTimes& t, std::uint64_t ops,
                std::uint64_t prefill, const GpuPoint* p, const std::string& err) {
  Json rec = Json::object();
  rec.set("name", "gpu");
  rec.set("system", system);
  rec.set("processor", "gpu");
  rec.set("structure", sh.structure);
  rec.set("k", p ? p->k : 0u);
  rec.set("group", p ? "gpu-tile-" + std::to_string(p->group) : std::string(""));
  rec.set("regime", p ? (p->fully_atomic ? "fully-atomic" : "elementwise") : "");
  rec.set("mode", p ? (p->mixed ? "mixed" : p->group == 1 ? "single-lane" : "group") : "");
  rec.set("order", p ? (p->mixed ? "mixed-rounds" : p->order == 1 ? "gets-first" : p->order == 2 ? "index" : "auto") : "");
  rec.set("range", sh.range);
  rec.set("keys", sh.keys);
  rec.set("buckets", p ? p->buckets : sh.buckets);
  rec.set("contains_percent", mix);
  rec.set("batch_ops", ops);
  rec.set("op", "mix");
  rec.set("ok", err.empty());
  if (!err.empty()) {
    rec.set("error", err);
    return rec;
  }
  std::vector<double> run, pre;
  for (double s : t.run_s) run.push_back(static_cast<double>(ops) / s);
  for (double s : t.prefill_s) pre.push_back(static_cast<double>(prefill) / s);
  rec.set("ops_per_s", summary_json(summarize(run)));
  rec.set("prefill_inserts_per_s", summary_json(summarize(pre)));
  rec.set("run_seconds", Json::array_of(t.run_s));
  rec.set("hits_last_run", t.hits);
  rec.set("retries_last_run", t.retries);
  if (p) rec.set("pool_nodes_used", t.nodes_used);
  return rec;
}

int main_impl(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!parse(argc, argv, &o, &help, &error)) {
    std::fprintf(stderr, "duet_bench_cods: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::vector<SystemInfo> systems = all_systems();
  const std::vector<std::string> missing = unavailable_peers();
  if (o.list) {
    for (const auto& s : systems) std::printf("%-20s %s\n", s.name.c_str(), s.description.c_str());
    for (const auto& m : missing) std::printf("unavailable: %s\n", m.c_str());
    return 0;
  }
  for (const auto& m : missing) std::fprintf(stderr, "duet_bench_cods: peer unavailable: %s\n", m.c_str());
  auto find = [&](const std::string& name) -> const SystemInfo* {
    for (const auto& s : systems)
      if (s.name == name) return &s;
    return nullptr;
  };
  // --systems: a name no system has is an error; one that none of the chosen figures runs is said
  // (a figure runs its own systems only: the hash figure has no K = 5, the hash-k sweep has).
  if (!o.systems.empty()) {
    std::vector<std::string> in_figures;
    for (const CpuExperiment& e : cpu_experiments(o)) in_figures.insert(in_figures.end(), e.systems.begin(), e.systems.end());
    for (const std::string& name : o.systems) {
      if (!find(name) && !is_unavailable_peer(name)) {
        std::fprintf(stderr, "duet_bench_cods: --systems: no system named '%s' (--list names them)\n", name.c_str());
        return 2;
      }
      if (std::find(in_figures.begin(), in_figures.end(), name) == in_figures.end())
        std::fprintf(stderr, "duet_bench_cods: --systems: %s is in none of the chosen CPU figures; it will not run\n",
                     name.c_str());
    }
  }
  const bool want_gpu = std::find(o.figures.begin(), o.figures.end(), "gpu") != o.figures.end();
  std::string no_gpu;
  const bool have_gpu = gpu_present(&no_gpu);
  const std::string date = utc_now();
  const std::string path = o.out.empty() ? "bench/results/cods/cods-" + utc_now(true) + ".json" : o.out;
  Json config = Json::object();
  config.set("figures", Json::array_of(o.figures));
  config.set("threads", Json::array_of(o.threads));
  config.set("mixes", Json::array_of(o.mixes));
  config.set("seconds", o.seconds);
  config.set("repeats", o.repeats);
  config.set("stream_ops_per_thread", o.stream);
  config.set("gpu_batch_ops", o.gpu_ops);
  config.set("gpu_shapes", Json::array_of(o.gpu_shapes));
  config.set("seed", o.seed);
  config.set("remote_delay_ns", o.remote_delay_ns);
  config.set("quick", o.quick);
  config.set("hardware_threads", std::thread::hardware_concurrency());
  config.set("workload", "keys uniform over [0, range); half the range prefilled; a mix is the contains/GET "
                         "percentage, inserts and removes split the rest");
  config.set("gpu_timing", "host clock around one execute_resident batch (stream, kernel, pool recycle); "
                           "prefill: batches of 4096 keys, then 16 times more each, timed together");
  config.set("gpu", have_gpu ? Json(gpu_name()) : Json("none: " + no_gpu));
  Json sys_json = Json::object();
  for (const auto& s : systems) sys_json.set(s.name, s.description);
  config.set("systems", sys_json);
  config.set("unavailable_peers", Json::array_of(missing));
  Json records = Json::array();
  bool all_ok = true;
  auto save = [&] {
    const Json doc = result_document("cods", have_gpu ? gpu_name() : "cpu", commit_id(DUET_SOURCE_DIR), date, config, records);
    std::string err;
    if (!write_result_file(path, doc, &err)) {
      std::fprintf(stderr, "duet_bench_cods: %s\n", err.c_str());
      return false;
    }
    return true;
  };

  std::printf("%-8s %-22s %-26s %5s %4s %10s %19s\n", "figure", "system", "shape", "mix%", "thr", "Mops/s", "range");
  for (const CpuExperiment& e : cpu_experiments(o)) {
    for (double mix : e.mixes)
      for (unsigned t : e.threads)
        for (const std::string& name : e.systems) {
          if (!o.systems.empty() && std::find(o.systems.begin(), o.systems.end(), name) == o.systems.end()) continue;
          const SystemInfo* sys = find(name);
          if (!sys) continue;  // a peer this binary lacks (listed in config.unavailable_peers)
          records.push(cpu_point(e.figure, *sys, e.shape, e.keys, mix, t, o, &all_ok));
        }
    if (!save()) return 1;  // after every experiment, so a cut-off run keeps what it measured
  }

  if (std::find(o.figures.begin(), o.figures.end(), "remote") != o.figures.end()) {
    RemoteRun rr;
    rr.threads = o.threads;
    rr.seconds = o.seconds;
    rr.repeats = o.repeats;
    rr.seed = o.seed;
    rr.delay_ns = o.remote_delay_ns;
    if (o.quick) rr.count_ops = 2000, rr.stream = 1u << 12;
    remote_figures(rr, &records, &all_ok);
    if (!save()) return 1;
  }

  if (want_gpu && !have_gpu) std::fprintf(stderr, "duet_bench_cods: no GPU (%s): GPU figures skipped\n", no_gpu.c_str());
  const bool want_gpu_cpu = std::find(o.figures.begin(), o.figures.end(), "gpu-cpu") != o.figures.end();
  if ((want_gpu && have_gpu) || want_gpu_cpu) {
    for (const GpuShape& sh : gpu_shapes(o)) {
      if (std::find(o.gpu_shapes.begin(), o.gpu_shapes.end(), sh.structure) == o.gpu_shapes.end()) continue;
      const std::vector<std::uint64_t> pre = prefill_keys(sh.range, sh.keys, o.seed);
      for (double mix : o.mixes) {
        const std::vector<std::uint64_t> stream = make_streams(sh.range, mix, 1, o.gpu_ops, o.seed + 7)[0];
        const std::string shape = sh.structure + " r=" + std::to_string(sh.range) + " n=" + std::to_string(sh.keys);
        if (want_gpu && have_gpu) {
          auto wanted = [&](const std::string& sys) {
            if (o.gpu_filter.empty()) return true;
            for (const std::string& f : o.gpu_filter)
              if (sys.find(f) != std::string::npos) return true;
            return false;
          };
          for (const GpuPoint& p : sh.points) {
            const std::string sys = "cods-gpu-" + sh.structure + (p.fully_atomic ? "-fa-k" : "-ew-k") +
                                    std::to_string(p.k) + (p.mixed ? "-mixed-g" : "-g") + std::to_string(p.group) +
                                    (p.order == 1 ? "-gf" : p.order == 2 ? "-idx" : "");
            if (!wanted(sys)) continue;
            GpuTimes t;
            const Status s = gpu_run_cods(p, pre, stream, o.repeats, &t);
            Json rec = gpu_record(sys, sh, mix, t, stream.size(), pre.size(), &p, s.ok() ? "" : s.to_string());
            all_ok &= s.ok();
            std::vector<double> xs;
            for (double x : t.run_s) xs.push_back(static_cast<double>(stream.size()) / x);
            print_row("gpu", sys, shape, mix, 0, summarize(xs), s.ok() ? "" : "ERROR " + s.to_string());
            records.push(std::move(rec));
          }
          if (!sh.peer.empty() && wanted(sh.peer == "lslab" ? "lslab-gpu-w8" : "lit-gpu")) {
            GpuTimes t;
            const Status s = sh.peer == "lslab" ? gpu_run_lslab(sh.keys, pre, stream, o.repeats, &t)
                                                : gpu_run_lit(sh.range, pre, stream, o.repeats, &t);
            const std::string sys = sh.peer == "lslab" ? "lslab-gpu-w8" : "lit-gpu";
            records.push(gpu_record(sys, sh, mix, t, stream.size(), pre.size(), nullptr, s.ok() ? "" : s.to_string()));
            all_ok &= s.ok();
            std::vector<double> xs;
            for (double x : t.run_s) xs.push_back(static_cast<double>(stream.size()) / x);
            print_row("gpu", sys, shape, mix, 0, summarize(xs), s.ok() ? "" : "ERROR " + s.to_string());
          }
        }
        if (want_gpu_cpu && (mix == 90 || mix == 100)) {
          // The CPU structures on the same shape, every thread of the machine.
          const unsigned t = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
          const Structure st = sh.structure == "list" ? Structure::kList : sh.structure == "hash" ? Structure::kHash : Structure::kTree;
          for (unsigned k : {14u, 8u}) {
            const SystemInfo* sys = find(cods_name(st, true, k));
            if (!sys) continue;
            const std::uint64_t b = st == Structure::kHash ? std::max<std::uint64_t>(1, sh.keys / k) : 1;
            records.push(cpu_point("gpu-cpu", *sys, Shape{st, b, sh.range, t}, sh.keys, mix, t, o, &all_ok));
          }
        }
      }
      if (!save()) return 1;
    }
    if (want_gpu && have_gpu) {
      // The random-access limit: random 8-byte loads over 4 GiB (HBM) and over 16 MiB (fits L2).
      for (std::uint64_t bytes : {std::uint64_t{4} << 30, std::uint64_t{16} << 20}) {
        std::vector<double> secs;
        const std::uint64_t loads = std::uint64_t{1} << 28;
        const Status s = gpu_random_loads(bytes, loads, o.repeats, &secs);
        std::vector<double> xs;
        for (double x : secs) xs.push_back(static_cast<double>(loads) / x);
        Json rec = Json::object();
        rec.set("name", "gpu-limit");
        rec.set("system", bytes > (std::uint64_t{1} << 30) ? "random-8B-loads-4GiB" : "random-8B-loads-16MiB-l2");
        rec.set("processor", "gpu");
        rec.set("bytes", bytes);
        rec.set("op", "load");
        rec.set("ok", s.ok());
        if (!s.ok()) rec.set("error", s.to_string());
        rec.set("ops_per_s", summary_json(summarize(xs)));
        records.push(std::move(rec));
        all_ok &= s.ok();
        print_row("gpu-lim", bytes > (std::uint64_t{1} << 30) ? "random loads 4 GiB" : "random loads 16 MiB", "", 100, 0,
                  summarize(xs), s.ok() ? "" : "ERROR " + s.to_string());
      }
    }
  }
  if (std::find(o.figures.begin(), o.figures.end(), "vtree") != o.figures.end()) {
    if (!have_gpu) std::fprintf(stderr, "duet_bench_cods: no GPU (%s): vtree skipped\n", no_gpu.c_str());
    else {
      VersionedBenchOptions vo;
      vo.ops = o.gpu_ops;
      vo.repeats = o.repeats;
      vo.seed = o.seed;
      vo.filter = o.gpu_filter;
      vo.mixes = o.vtree_mixes;
      if (o.quick) vo.range /= 100;
      const Status s = gpu_versioned_figures(vo, [&](Json rec, const std::string& line, bool ok) {
        all_ok &= ok;
        records.push(std::move(rec));
        std::printf("%s\n", line.c_str());
        std::fflush(stdout);
      });
      if (!s.ok()) std::fprintf(stderr, "duet_bench_cods: vtree: %s\n", s.to_string().c_str());
      all_ok &= s.ok();
    }
  }
  if (!save()) return 1;
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace duet::bench::cods

int main(int argc, char** argv) { return duet::bench::cods::main_impl(argc, argv); }
