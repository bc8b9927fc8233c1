#include "options.hpp"

#include "../common/parse.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace duet::bench::kv {
namespace {

constexpr std::uint64_t kMaxKeyRange = std::uint64_t(1) << 56;
constexpr std::size_t kMaxValueBytes = std::size_t(1) << 24;

}  // namespace

const char* experiment_name(Experiment e) {
  switch (e) {
    case Experiment::kNone: return "none";
    case Experiment::kThetaSweep: return "theta-sweep";
    case Experiment::kHotFractionSweep: return "hot-fraction-sweep";
    case Experiment::kRwSweep: return "rw-sweep";
    case Experiment::kValueSizeSweep: return "value-size-sweep";
    case Experiment::kModelChange: return "model-change";
  }
  return "unknown";
}

std::optional<Experiment> parse_experiment(const std::string& s) {
  for (Experiment e : {Experiment::kNone, Experiment::kThetaSweep, Experiment::kHotFractionSweep,
                       Experiment::kRwSweep, Experiment::kValueSizeSweep, Experiment::kModelChange})
    if (s == experiment_name(e)) return e;
  return std::nullopt;
}

std::string usage() {
  return R"(usage: duet bench kv [options]
Closed-loop YCSB workloads against Duet's kv keyspace (kvcg: learned router; kvc: every request
to the Hot Cache; kvg: every request to the Canonical Store) and CPU hash-map peers (oneTBB,
libcuckoo). Prints a table and writes JSON to --out.

  --workload A|B|C|D|F     YCSB core workload (default B: 95% read, 5% update)
  --distribution NAME      uniform|zipfian|scrambled|latest (default: latest for D, else zipfian)
  --theta X                Zipf skew, 0 <= X < 1 (default 0.99; 0.5 for the hot-fraction,
                           rw and value-size sweeps, as in KVCG's figures)
  --key-range N            keys are drawn from [0, N) (default 10^9)
  --prefill N              keys 0..N-1 are inserted before measuring (default 10^7)
  --ops N                  measured requests per run (default 5*10^7), split evenly over the client
                           threads; each thread replays a request stream generated before the
                           start from the seed, so every system runs the same requests in the
                           same order (up to 2^23 per thread, cycled beyond)
  --seconds S              run for S seconds instead (requests generated while running, so
                           faster systems run more and different requests; model-change: default 10)
  --warmup N               requests before each measured point (default 5*10^6); kvcg's model
                           is trained on them and installed with switch_model()
  --threads N              client threads (default: hardware threads)
  --batch N                requests per execute() call (default 512)
  --trace N                Zipfian ranks each client draws before measuring and then cycles
                           through (a power of two; default 0: one pow() per request, which
                           can cost more than the store's own work)
  --pipeline N             batches each client thread keeps in flight (default 1: closed loop)
  --orchestrators N        Duet's orchestrator threads (default: 4 with a GPU, 0 on the CPU)
  --max-aggregate N        Duet's largest aggregated batch (default: 65536 GPU, 4096 CPU)
  --value-bytes N          bytes per written value, >= 8 (default 8)
  --systems LIST           kvcg,kvcg-auto,kvc,kvg,tbb,libcuckoo (default: all built in);
                           kvcg-auto is kvcg with the keyspace's defaults: automatic model
                           switches and adaptive routing (all-cold or all-hot while faster)
  --device auto|cpu|gpu    where the Canonical Store runs (default auto)
  --threshold X            kvcg router threshold (default 1.3e-05)
  --experiment NAME        none|theta-sweep|hot-fraction-sweep|rw-sweep|value-size-sweep|
                           model-change (default none)
  --points LIST            the swept values (defaults: theta 0.5,0.7,0.9,0.99; threshold
                           1e-4,3e-5,1.3e-5,6e-6,3e-6,1e-7; read percent 100,95,80,50;
                           value bytes 8,32,128,256,1024)
  --repeat N               runs per point; medians are reported (default 3)
  --window-ms X            model-change: latency window (default 50)
  --pre-shift-s X          model-change: seconds recorded before the shift (default 0.5)
  --switch-interval-ms N   model-change: minimum time between automatic switches (default 1000)
  --seed N                 seed of every request stream
  --quick                  smoke-test sizes: key range 2^20, prefill 2^14, warmup 2*10^4,
                           50000 ops, repeat 1, at most 2 threads (explicit options win)
  --out DIR                result folder (default bench/results); a path ending in .json
                           names the file itself
  --help
Counts accept 10000000, 10_000_000, 1e7, 10^7 or 2^23.
)";
}

bool parse_options(int argc, char** argv, Options* o, bool* help, std::string* error) {
  bool have_key_range = false, have_prefill = false, have_warmup = false, have_ops = false, have_repeat = false,
       have_threads = false, have_seconds = false, have_interval = false, have_pre = false;
  auto fail = [&](const std::string& m) {
    *error = m;
    return false;
  };
  const bool ok = scan_flags(argc, argv, help, &o->quick, error, [&](const std::string& flag, const std::string& v) {
    auto count = [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t* out) {
      const auto c = parse_count(v);
      if (!c || *c < lo || *c > hi)
        return fail(flag + ": '" + v + "' is not a count in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
      *out = *c;
      return true;
    };
    auto number = [&](double lo, double hi, bool hi_open, double* out) {
      const auto d = parse_double(v);
      if (!d || *d < lo || (hi_open ? *d >= hi : *d > hi)) {
        std::ostringstream m;
        m << flag << ": '" << v << "' is not a number in [" << lo << ", " << hi << (hi_open ? ")" : "]");
        return fail(m.str());
      }
      *out = *d;
      return true;
    };
    std::uint64_t c = 0;
    double d = 0;
    if (flag == "--workload") {
      if (!ycsb_workload(v)) return fail("--workload: '" + v + "' is not one of A, B, C, D, F");
      o->workload_letter = std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(v[0]))));
    } else if (flag == "--distribution") {
      o->distribution = parse_distribution(v);
      if (!o->distribution) return fail("--distribution: '" + v + "' is not uniform, zipfian, scrambled or latest");
    } else if (flag == "--theta") {
      if (!number(0, 1, true, &d)) return false;
      o->theta = d;
    } else if (flag == "--key-range") {
      if (!count(1, kMaxKeyRange, &o->key_range)) return false;
      have_key_range = true;
    } else if (flag == "--prefill") {
      if (!count(0, kMaxKeyRange, &o->prefill)) return false;
      have_prefill = true;
    } else if (flag == "--ops") {
      if (!count(1, std::uint64_t(1) << 62, &o->ops)) return false;
      have_ops = true;
    } else if (flag == "--seconds") {
      if (!number(0.01, 86400, false, &o->seconds)) return false;
      have_seconds = true;
    } else if (flag == "--warmup") {
      if (!count(0, std::uint64_t(1) << 62, &o->warmup)) return false;
      have_warmup = true;
    } else if (flag == "--threads") {
      if (!count(1, 1024, &c)) return false;
      o->threads = static_cast<unsigned>(c);
      have_threads = true;
    } else if (flag == "--batch") {
      if (!count(1, std::uint64_t(1) << 24, &c)) return false;
      o->batch = c;
    } else if (flag == "--value-bytes") {
      if (!count(8, kMaxValueBytes, &c)) return false;
      o->value_bytes = c;
    } else if (flag == "--trace") {
      if (!count(0, 1u << 26, &c)) return false;
      if (c & (c - 1)) return fail("--trace: " + std::to_string(c) + " is not a power of two");
      o->trace = c;
    } else if (flag == "--pipeline") {
      if (!count(1, 1024, &c)) return false;
      o->pipeline = static_cast<unsigned>(c);
    } else if (flag == "--orchestrators") {
      if (!count(0, 256, &c)) return false;
      o->orchestrators = static_cast<unsigned>(c);
    } else if (flag == "--max-aggregate") {
      if (!count(1, 1u << 24, &c)) return false;
      o->max_aggregate = c;
    } else if (flag == "--systems") {
      o->systems = split_list(v);
      if (o->systems.empty()) return fail("--systems: empty list");
    } else if (flag == "--device") {
      if (!duet::parse_device_choice(v, &o->device).ok()) return fail("--device: '" + v + "' is not auto, cpu or gpu");
    } else if (flag == "--threshold") {
      if (!number(0, 1, false, &d)) return false;
      o->threshold = d;
    } else if (flag == "--experiment") {
      const auto e = parse_experiment(v);
      if (!e)
        return fail("--experiment: '" + v +
                    "' is not none, theta-sweep, hot-fraction-sweep, rw-sweep, value-size-sweep or model-change");
      o->experiment = *e;
    } else if (flag == "--points") {
      o->points.clear();
      for (const std::string& s : split_list(v)) {
        const auto p = parse_double(s);
        if (!p) return fail("--points: '" + s + "' is not a number");
        o->points.push_back(*p);
      }
      if (o->points.empty()) return fail("--points: empty list");
    } else if (flag == "--repeat") {
      if (!count(1, 100, &c)) return false;
      o->repeat = static_cast<unsigned>(c);
      have_repeat = true;
    } else if (flag == "--window-ms") {
      if (!number(1, 10000, false, &o->window_ms)) return false;
    } else if (flag == "--pre-shift-s") {
      if (!number(0, 3600, false, &o->pre_shift_s)) return false;
      have_pre = true;
    } else if (flag == "--switch-interval-ms") {
      if (!count(0, 3'600'000, &c)) return false;
      o->switch_interval_ms = static_cast<std::uint32_t>(c);
      have_interval = true;
    } else if (flag == "--seed") {
      if (!count(0, ~std::uint64_t(0) >> 1, &o->seed)) return false;
    } else if (flag == "--out") {
      if (v.empty()) return fail("--out: empty path");
      if (v.size() > 5 && v.compare(v.size() - 5, 5, ".json") == 0) o->out_file = v;
      else o->out_dir = v;
    } else {
      return fail("unknown option " + flag + " (see --help)");
    }
    return true;
  });
  if (!ok || *help) return ok;

  if (o->quick) {
    if (!have_key_range) o->key_range = std::uint64_t(1) << 20;
    if (!have_prefill) o->prefill = std::uint64_t(1) << 14;
    if (!have_warmup) o->warmup = 20'000;
    if (!have_ops && o->experiment != Experiment::kModelChange) o->ops = 50'000;
    if (!have_seconds && o->experiment == Experiment::kModelChange) o->seconds = 2.5;
    if (!have_repeat) o->repeat = 1;
    if (!have_threads) o->threads = 2;
    if (!have_interval) o->switch_interval_ms = 300;
    if (!have_pre) o->pre_shift_s = 0.3;
  }
  // Ops-bound by default, so that every system does the same work; --seconds asks for time.
  if (!have_ops && !have_seconds && o->experiment != Experiment::kModelChange && o->ops == 0) o->ops = 50'000'000;
  if (have_ops && have_seconds) return fail("--ops and --seconds exclude each other");
  if (o->prefill > o->key_range) return fail("--prefill must not exceed --key-range");
  if (o->experiment == Experiment::kModelChange && have_ops)
    return fail("--ops does not apply to model-change, which runs for --seconds");

  // The swept values, checked for the experiment.
  auto check_points = [&](double lo, double hi, bool hi_open, const char* what) {
    for (double p : o->points)
      if (p < lo || (hi_open ? p >= hi : p > hi)) {
        std::ostringstream m;
        m << "--points: " << p << " is not a valid " << what;
        return fail(m.str());
      }
    return true;
  };
  switch (o->experiment) {
    case Experiment::kNone:
    case Experiment::kModelChange:
      if (!o->points.empty()) return fail("--points needs a sweep experiment (see --experiment)");
      break;
    case Experiment::kThetaSweep:
      if (o->points.empty()) o->points = {0.5, 0.7, 0.9, 0.99};
      if (!check_points(0, 1, true, "theta (0 <= theta < 1)")) return false;
      break;
    case Experiment::kHotFractionSweep:
      // With the router's 2^20 bins and 5*10^6 / 16 samples a warm-up, one sample is a share
      // of 3.2e-6: 1e-7 makes every sampled bin hot, 1e-4 next to none at theta 0.5.
      if (o->points.empty()) o->points = {1e-4, 3e-5, 1.3e-5, 6e-6, 3e-6, 1e-7};
      if (!check_points(0, 1, false, "threshold (0..1)")) return false;
      break;
    case Experiment::kRwSweep:
      if (o->points.empty()) o->points = {100, 95, 80, 50};
      if (!check_points(0, 100, false, "read percentage (0..100)")) return false;
      break;
    case Experiment::kValueSizeSweep:
      if (o->points.empty()) o->points = {8, 32, 128, 256, 1024};
      if (!check_points(8, static_cast<double>(kMaxValueBytes), false, "value size (8..2^24 bytes)")) return false;
      for (double p : o->points)
        if (std::floor(p) != p) return fail("--points: value sizes are whole bytes");
      break;
  }
  return true;
}

Workload Options::workload() const { return *ycsb_workload(workload_letter); }

Distribution Options::distribution_for(const Workload& w) const {
  return distribution ? *distribution : w.default_distribution;
}

double Options::theta_value() const {
  if (theta) return *theta;
  switch (experiment) {
    case Experiment::kHotFractionSweep:
    case Experiment::kRwSweep:
    case Experiment::kValueSizeSweep: return 0.5;
    default: return 0.99;
  }
}

Json Options::to_json() const {
  Json c = Json::object();
  c.set("experiment", experiment_name(experiment));
  // The rw sweep replaces the workload by read/update mixes, zipfian unless told otherwise.
  const bool rw = experiment == Experiment::kRwSweep;
  c.set("workload", rw ? std::string("read/update mixes") : workload().name);
  const Distribution d = rw ? distribution.value_or(Distribution::kZipfian) : distribution_for(workload());
  c.set("distribution", distribution_name(d));
  c.set("theta", theta_value());
  c.set("key_range", key_range);
  c.set("prefill", prefill);
  c.set("ops", ops ? Json(ops) : Json());
  c.set("seconds", ops ? Json() : Json(seconds));
  c.set("warmup", warmup);
  c.set("threads", threads);
  c.set("batch", static_cast<std::uint64_t>(batch));
  c.set("pipeline", pipeline);
  c.set("trace", static_cast<std::uint64_t>(trace));
  c.set("orchestrators", orchestrators);
  c.set("max_aggregate", static_cast<std::uint64_t>(max_aggregate));
  c.set("value_bytes", static_cast<std::uint64_t>(value_bytes));
  c.set("systems", Json::array_of(systems));
  c.set("device_choice", duet::device_choice_name(device));
  c.set("threshold", threshold ? Json(*threshold) : Json(duet::RouterConfig{}.threshold));
  c.set("points", Json::array_of(points));
  c.set("repeat", repeat);
  c.set("seed", seed);
  if (experiment == Experiment::kModelChange) {
    c.set("window_ms", window_ms);
    c.set("pre_shift_s", pre_shift_s);
    c.set("switch_interval_ms", switch_interval_ms);
  }
  c.set("quick", quick);
  c.set("key_encoding", "8-byte big-endian key number");
  c.set("value_encoding", "printable: 4-byte key tag, 4-byte version, filler");
  c.set("latency",
        "duet systems: request's done_ns - batch start; peers: per element (element end - previous "
        "element end); histogram buckets 1/32 of an octave");
  c.set("throughput",
        "ops_per_s: wall clock, requests / time from the start to the last answer; ops_per_s_inside_store: sum "
        "over client threads of requests / time inside submit and finish");
  c.set("requests",
        ops ? "every system replays the same pre-generated request streams (per client thread, from the seed)"
            : "generated while running (time-bound runs: faster systems run more requests)");
  return c;
}

}  // namespace duet::bench::kv
