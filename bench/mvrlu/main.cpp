// duet_bench_mvrlu: MV-RLU (src/mvrlu) against its RLU baseline, the factor-analysis steps and
// the peers (liburcu, a readers-writer lock, libcds), on the thesis's chapter-3 workloads
// (figures 3.1, 3.4-3.8; 3.5's abort ratios come with 3.4's runs). Every system replays the
// same pre-generated per-thread operation streams with the same threads. Prints a table and
// writes one JSON result file (bench/common/results.hpp). bench/README.md, docs/mvrlu.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/parse.hpp"
#include "common/results.hpp"
#include "systems.hpp"
#include "workload.hpp"

namespace duet::bench::mvrlu {
namespace {

using Clk = std::chrono::steady_clock;

const char* kUsage = R"(usage: duet_bench_mvrlu [options]
  --figures LIST    of 3.1,3.4,3.6,3.7,3.8,clock (default all; 3.5 = 3.4's abort ratios)
  --systems LIST    only these systems (default: each figure's own; see --list)
  --threads LIST    worker threads (default 1,2)
  --zipf-threads N  threads of figure 3.7 (default the largest of --threads)
  --thetas LIST     Zipf thetas of 3.7 (default 0,0.2,0.4,0.6,0.8,0.9,0.99)
  --seconds S       each run's measured time (default 1)
  --ops N           instead of --seconds: each thread replays exactly N operations
  --stream N        operations generated per thread, replayed cyclically (default 2^20)
  --repeats N       runs per point; the table shows the median and range (default 3)
  --seed N          workload seed (default 1)
  --ordo-boundary T MV-RLU's ORDO boundary in TSC ticks (default: measured once per process;
                    the measurement is inflated when the machine is loaded)
  --quick           smoke sizes: items / 10, 0.05 s, 1 repeat, 2^14-op streams, thetas 0,0.99
  --list            print the systems and exit
  --out PATH        JSON output (default bench/results/mvrlu-cpu/mvrlu-cpu-<UTC time>.json)
)";

struct Options {
  std::vector<std::string> figures{"3.1", "3.4", "3.6", "3.7", "3.8", "clock"};
  std::vector<std::string> systems;
  std::vector<unsigned> threads{1, 2};
  unsigned zipf_threads = 0;
  std::vector<double> thetas{0, 0.2, 0.4, 0.6, 0.8, 0.9, 0.99};
  double seconds = 1;
  std::uint64_t ops = 0;
  std::uint64_t stream = 1u << 20;
  unsigned repeats = 3;
  std::uint64_t seed = 1;
  std::int64_t ordo_boundary = -1;
  bool quick = false, list = false;
  std::string out;
};

/// One figure's point set: a structure and size, the mixes and the systems.
struct Experiment {
  std::string figure;
  Structure structure;
  std::uint64_t items;
  std::size_t buckets;
  Dist dist;
  std::vector<double> thetas;
  std::vector<double> updates;
  std::vector<std::string> systems;
  std::vector<unsigned> threads;
};

const std::vector<std::string> kPeers{"mvrlu", "rlu", "rlu-ordo", "urcu", "rwlock", "cds"};
const std::vector<std::string> kFactor{"rlu", "rlu-ordo", "mv-gcthread", "mv-selfgc", "mv-capacity", "mvrlu-ordo"};
const std::vector<std::string> kClocks{"mvrlu", "mvrlu-ordo", "mvrlu-counter"};

std::vector<Experiment> experiments(const Options& o) {
  const std::uint64_t div = o.quick ? 10 : 1;
  const unsigned zt = o.zipf_threads != 0 ? o.zipf_threads : *std::max_element(o.threads.begin(), o.threads.end());
  std::vector<Experiment> e;
  for (const std::string& f : o.figures) {
    if (f == "3.1") {
      e.push_back({f, Structure::kHash, 1000 / div, 1000 / div, Dist::kPareto, {0}, {2, 10, 20, 80}, kPeers, o.threads});
    } else if (f == "3.4") {
      e.push_back({f, Structure::kList, 10000 / div, 1, Dist::kUniform, {0}, {2, 20, 80}, kPeers, o.threads});
      e.push_back({f, Structure::kHash, 10000 / div, 1000 / div, Dist::kUniform, {0}, {2, 20, 80}, kPeers, o.threads});
      e.push_back({f, Structure::kBst, 10000 / div, 1, Dist::kUniform, {0}, {2, 20, 80}, kPeers, o.threads});
    } else if (f == "3.6") {
      e.push_back({f, Structure::kHash, 1000 / div, 1000 / div, Dist::kUniform, {0}, {20}, kPeers, o.threads});
      e.push_back({f, Structure::kHash, 10000 / div, 1000 / div, Dist::kUniform, {0}, {20}, kPeers, o.threads});
      e.push_back({f, Structure::kHash, 50000 / div, 5000 / div, Dist::kUniform, {0}, {20}, kPeers, o.threads});
    } else if (f == "3.7") {
      e.push_back({f, Structure::kHash, 10000 / div, 1000 / div, Dist::kZipf, o.thetas, {2, 20, 80}, kPeers, {zt}});
    } else if (f == "3.8") {
      e.push_back({f, Structure::kList, 10000 / div, 1, Dist::kUniform, {0}, {2, 20, 80}, kFactor, o.threads});
    } else if (f == "clock") {
      e.push_back({f, Structure::kList, 10000 / div, 1, Dist::kUniform, {0}, {2, 20, 80}, kClocks, o.threads});
      e.push_back({f, Structure::kHash, 10000 / div, 1000 / div, Dist::kUniform, {0}, {2, 20, 80}, kClocks, o.threads});
    }
  }
  return e;
}

bool parse(int argc, char** argv, Options* o, bool* help, std::string* error) {
  bool quick = false;
  std::vector<std::string> rest;
  // --list takes no value: handle it before the shared scanner.
  std::vector<char*> args{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--list") == 0) o->list = true;
    else args.push_back(argv[i]);
  }
  bool seconds_set = false, repeats_set = false, stream_set = false, thetas_set = false;
  const bool ok = scan_flags(
      static_cast<int>(args.size()), args.data(), help, &quick, error,
      [&](const std::string& f, const std::string& v) {
        auto fail = [&](const std::string& why) { return *error = f + ": " + why, false; };
        if (f == "--figures") {
          o->figures = split_list(v);
          for (auto& x : o->figures)
            if (x != "3.1" && x != "3.4" && x != "3.6" && x != "3.7" && x != "3.8" && x != "clock")
              return fail("unknown figure " + x);
        } else if (f == "--systems") {
          o->systems = split_list(v);
        } else if (f == "--threads") {
          o->threads.clear();
          for (auto& x : split_list(v)) {
            auto c = parse_count(x);
            if (!c || *c == 0 || *c > 1024) return fail("bad thread count " + x);
            o->threads.push_back(static_cast<unsigned>(*c));
          }
          if (o->threads.empty()) return fail("empty list");
        } else if (f == "--zipf-threads") {
          auto c = parse_count(v);
          if (!c || *c == 0 || *c > 1024) return fail("bad thread count");
          o->zipf_threads = static_cast<unsigned>(*c);
        } else if (f == "--thetas") {
          o->thetas.clear();
          for (auto& x : split_list(v)) {
            auto d = parse_double(x);
            if (!d || *d < 0 || *d >= 1) return fail("theta must be in [0, 1)");
            o->thetas.push_back(*d);
          }
          thetas_set = true;
        } else if (f == "--seconds") {
          auto d = parse_double(v);
          if (!d || *d <= 0) return fail("must be > 0");
          o->seconds = *d;
          seconds_set = true;
        } else if (f == "--ops") {
          auto c = parse_count(v);
          if (!c || *c == 0) return fail("must be > 0");
          o->ops = *c;
        } else if (f == "--stream") {
          auto c = parse_count(v);
          if (!c || *c == 0) return fail("must be > 0");
          o->stream = *c;
          stream_set = true;
        } else if (f == "--repeats") {
          auto c = parse_count(v);
          if (!c || *c == 0 || *c > 1000) return fail("must be in [1, 1000]");
          o->repeats = static_cast<unsigned>(*c);
          repeats_set = true;
        } else if (f == "--seed") {
          auto c = parse_count(v);
          if (!c) return fail("bad seed");
          o->seed = *c;
        } else if (f == "--ordo-boundary") {
          auto c = parse_count(v);
          if (!c) return fail("bad tick count");
          o->ordo_boundary = static_cast<std::int64_t>(*c);
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
    if (!seconds_set) o->seconds = 0.05;
    if (!repeats_set) o->repeats = 1;
    if (!stream_set) o->stream = 1u << 14;
    if (!thetas_set) o->thetas = {0, 0.99};
  }
  if (o->ops != 0) o->stream = o->ops;
  return true;
}

struct RunResult {
  bool ok = true;
  std::string error;
  double seconds = 0;
  std::uint64_t ops = 0, failed = 0;
  Json stats;
};

/// Builds the system, prefills it from a separate thread, then runs one worker per stream.
RunResult run_once(const SystemInfo& sys, const SetSpec& spec, const std::vector<std::uint64_t>& prefill,
                   const std::vector<std::vector<std::uint64_t>>& streams, const Options& o) {
  RunResult res;
  Status st;
  std::unique_ptr<System> s = sys.make(spec, &st);
  if (!s) {
    res.ok = false;
    res.error = st.to_string();
    return res;
  }
  std::thread([&] {
    std::unique_ptr<Worker> w;
    Status a = s->attach(&w);
    if (!a.ok()) {
      res.ok = false, res.error = a.to_string();
      return;
    }
    bool r = false;
    for (std::uint64_t k : prefill)
      if (!w->insert(k, &r) || !r) res.ok = false, res.error = "prefill insert failed";
  }).join();
  if (!res.ok) return res;
  (void)s->take_stats();
  const unsigned n = static_cast<unsigned>(streams.size());
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::uint64_t> done(n, 0), failed(n, 0);
  std::vector<Clk::time_point> end(n);
  std::vector<std::string> errors(n);
  std::vector<std::thread> ts;
  for (unsigned i = 0; i < n; ++i)
    ts.emplace_back([&, i] {
      std::unique_ptr<Worker> w;
      Status a = s->attach(&w);
      if (!a.ok()) errors[i] = a.to_string();
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      if (!w) return;
      const std::vector<std::uint64_t>& ops = streams[i];
      const std::size_t len = ops.size();
      std::size_t at = 0;
      std::uint64_t count = 0, bad = 0;
      bool r = false;
      for (;;) {
        for (int j = 0; j < 64; ++j) {
          const std::uint64_t e = ops[at];
          bool ok;
          switch (op_of(e)) {
            case Op::kInsert: ok = w->insert(key_of(e), &r); break;
            case Op::kRemove: ok = w->remove(key_of(e), &r); break;
            default: ok = w->contains(key_of(e), &r); break;
          }
          bad += !ok;
          ++count;
          if (++at == len) {
            at = 0;
            if (o.ops != 0) break;
          }
        }
        if (o.ops != 0 ? count >= len : stop.load(std::memory_order_relaxed)) break;
      }
      end[i] = Clk::now();
      done[i] = count;
      failed[i] = bad;
      w.reset();  // unregister on this thread
    });
  while (ready.load() < n) std::this_thread::yield();
  const auto t0 = Clk::now();
  go.store(true, std::memory_order_release);
  if (o.ops == 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop.store(true);
  }
  for (auto& t : ts) t.join();
  for (unsigned i = 0; i < n; ++i) {
    if (!errors[i].empty()) res.ok = false, res.error = errors[i];
    res.ops += done[i];
    res.failed += failed[i];
    res.seconds = std::max(res.seconds, std::chrono::duration<double>(end[i] - t0).count());
  }
  res.stats = s->take_stats();
  s.reset();
  return res;
}

/// A stats field as a number (0 when absent).
std::uint64_t stat(const Json& j, const char* key) {
  std::string t = j.dump_string(0);
  const std::string k = std::string("\"") + key + "\":";
  const auto p = t.find(k);
  if (p == std::string::npos) return 0;
  return std::strtoull(t.c_str() + p + k.size(), nullptr, 10);
}

int main_impl(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!parse(argc, argv, &o, &help, &error)) {
    std::fprintf(stderr, "duet_bench_mvrlu: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const std::vector<SystemInfo> systems = all_systems();
  const std::vector<std::string> missing = unavailable_peers();
  if (o.list) {
    for (const auto& s : systems) std::printf("%-14s %s\n", s.name.c_str(), s.description.c_str());
    for (const auto& m : missing) std::printf("unavailable: %s\n", m.c_str());
    return 0;
  }
  for (const auto& m : missing) std::fprintf(stderr, "duet_bench_mvrlu: peer unavailable: %s\n", m.c_str());
  auto find = [&](const std::string& name) -> const SystemInfo* {
    for (const auto& s : systems)
      if (s.name == name) return &s;
    return nullptr;
  };
  for (const auto& n : o.systems)
    if (!find(n) && n != "urcu" && n != "cds") {
      std::fprintf(stderr, "duet_bench_mvrlu: unknown system %s (--list)\n", n.c_str());
      return 2;
    }

  const std::string date = utc_now();
  const std::string path = o.out.empty() ? "bench/results/mvrlu-cpu/mvrlu-cpu-" + utc_now(true) + ".json" : o.out;
  Json config = Json::object();
  config.set("figures", Json::array_of(o.figures));
  config.set("threads", Json::array_of(o.threads));
  config.set("zipf_threads", o.zipf_threads);
  config.set("thetas", Json::array_of(o.thetas));
  config.set("seconds", o.seconds);
  config.set("ops_per_thread", o.ops);
  config.set("stream_ops_per_thread", o.stream);
  config.set("repeats", o.repeats);
  config.set("seed", o.seed);
  config.set("ordo_boundary", o.ordo_boundary < 0 ? Json("measured") : Json(static_cast<long long>(o.ordo_boundary)));
  config.set("quick", o.quick);
  config.set("hardware_threads", std::thread::hardware_concurrency());
  config.set("updates", "half inserts, half removes; keys from [0, 2 x items), prefilled with items keys");
  config.set("abort_ratio", "aborts / (aborts + operations completed)");
  Json sys_json = Json::object();
  for (const auto& s : systems) sys_json.set(s.name, s.description);
  config.set("systems", sys_json);
  config.set("unavailable_peers", Json::array_of(missing));
  Json records = Json::array();
  bool all_ok = true;
  auto save = [&] {
    const Json doc = result_document("mvrlu", "cpu", commit_id(DUET_SOURCE_DIR), date, config, records);
    std::string err;
    if (!write_result_file(path, doc, &err)) {
      std::fprintf(stderr, "duet_bench_mvrlu: %s\n", err.c_str());
      return false;
    }
    return true;
  };

  std::printf("%-6s %-5s %6s %5s %-11s %5s %5s %-13s %3s %9s %19s %7s\n", "fig", "set", "items", "bkts", "dist",
              "theta", "upd%", "system", "thr", "Mops/s", "range", "abort%");
  for (const Experiment& e : experiments(o)) {
    for (double theta : e.thetas)
      for (double upd : e.updates)
        for (unsigned threads : e.threads) {
          WorkloadSpec w;
          w.items = e.items;
          w.update_percent = upd;
          w.dist = e.dist;
          w.theta = theta;
          w.seed = o.seed;
          std::vector<std::uint64_t> pre = prefill_keys(w);
          if (e.structure == Structure::kList) std::sort(pre.rbegin(), pre.rend());  // each insert at the head
          const auto streams = make_streams(w, threads, o.stream);
          SetSpec spec{e.structure, e.buckets, threads, o.ordo_boundary};
          for (const std::string& name : e.systems) {
            if (!o.systems.empty() && std::find(o.systems.begin(), o.systems.end(), name) == o.systems.end()) continue;
            const SystemInfo* sys = find(name);
            Json rec = Json::object();
            rec.set("figure", e.figure);
            rec.set("structure", structure_name(e.structure));
            rec.set("items", e.items);
            rec.set("buckets", static_cast<std::uint64_t>(e.buckets));
            rec.set("distribution", dist_name(e.dist));
            rec.set("theta", theta);
            rec.set("update_percent", upd);
            rec.set("system", name);
            rec.set("threads", threads);
            if (sys == nullptr || !sys->supports(e.structure)) {
              rec.set("available", false);
              if (sys == nullptr) records.push(std::move(rec));  // a peer this binary lacks
              continue;
            }
            std::vector<double> mops, aborts;
            Json runs = Json::array();
            std::string err;
            std::uint64_t failed = 0;
            Json last_stats;
            for (unsigned r = 0; r < o.repeats; ++r) {
              RunResult rr = run_once(*sys, spec, pre, streams, o);
              if (!rr.ok) {
                err = rr.error;
                break;
              }
              failed += rr.failed;
              const double m = rr.ops / rr.seconds / 1e6;
              mops.push_back(m);
              const std::uint64_t ab = stat(rr.stats, "aborts");
              aborts.push_back(100.0 * static_cast<double>(ab) / static_cast<double>(ab + rr.ops));
              Json run = Json::object();
              run.set("mops", m);
              run.set("ops", rr.ops);
              run.set("seconds", rr.seconds);
              run.set("failed_ops", rr.failed);
              run.set("stats", rr.stats);
              runs.push(std::move(run));
            }
            const Summary sm = summarize(mops), sa = summarize(aborts);
            rec.set("available", true);
            rec.set("ok", err.empty() && failed == 0);
            if (!err.empty()) rec.set("error", err);
            rec.set("mops_median", sm.median);
            rec.set("mops_min", sm.min);
            rec.set("mops_max", sm.max);
            rec.set("abort_percent_median", sa.median);
            rec.set("runs", std::move(runs));
            records.push(std::move(rec));
            all_ok &= err.empty() && failed == 0;
            char range[64];
            std::snprintf(range, sizeof range, "[%.3f-%.3f]", sm.min, sm.max);
            std::printf("%-6s %-5s %6llu %5zu %-11s %5.2f %5.0f %-13s %3u %9.3f %19s %7.3f%s\n", e.figure.c_str(),
                        structure_name(e.structure), static_cast<unsigned long long>(e.items), e.buckets,
                        dist_name(e.dist), theta, upd, name.c_str(), threads, sm.median, range, sa.median,
                        err.empty() && failed == 0 ? "" : (" ERROR " + err).c_str());
            std::fflush(stdout);
          }
        }
    if (!save()) return 1;  // after every experiment, so a cut-off run keeps what it measured
  }
  if (!save()) return 1;
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  return all_ok ? 0 : 1;
}

}  // namespace

const char* structure_name(Structure s) {
  switch (s) {
    case Structure::kList: return "list";
    case Structure::kHash: return "hash";
    case Structure::kBst: return "bst";
  }
  return "?";
}

std::vector<SystemInfo> all_systems() {
  std::vector<SystemInfo> v;
  add_mvrlu_systems(&v);
#if DUET_BENCH_HAVE_URCU
  add_urcu_system(&v);
#endif
  add_rwlock_system(&v);
#if DUET_BENCH_HAVE_LIBCDS
  add_libcds_system(&v);
#endif
  return v;
}

std::vector<std::string> unavailable_peers() {
  std::vector<std::string> v;
#if !DUET_BENCH_HAVE_URCU
  v.push_back("urcu (liburcu-dev not found at configure time)");
#endif
#if !DUET_BENCH_HAVE_LIBCDS
  v.push_back("cds (libcds-dev not found at configure time)");
#endif
  return v;
}

}  // namespace duet::bench::mvrlu

int main(int argc, char** argv) { return duet::bench::mvrlu::main_impl(argc, argv); }
