#include "options.hpp"

#include <optional>

#include "../common/parse.hpp"

namespace duet::bench::lslab {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t(1) << 30;

}  // namespace

std::string pow2_string(std::uint64_t x) {
  if (x && (x & (x - 1)) == 0) {
    unsigned k = 0;
    while ((std::uint64_t(1) << k) != x) ++k;
    return "2^" + std::to_string(k);
  }
  return std::to_string(x);
}

std::string usage() {
  return R"(duet_bench_lslab: throughput of L-Slab and peer hash maps on batches of GET/PUT/DELETE/MIX.

  --device cpu|gpu     where to run (default cpu; gpu needs a CUDA build and a GPU)
  --systems LIST       cpu: duet-cpu,tbb,libcuckoo,libcds (default: all built in); gpu: duet-gpu
  --resident LIST      resident keys R, e.g. 2^22,2^26 (default)
  --load LIST          L-Slab load factors (default 0.5,0.9); the peers take no load factor
  --batches LIST       batch sizes (default 512,4096,32768,262144,2097152,16777216)
  --ops LIST           get,put,delete,mix (default all)
  --widths LIST        gpu slab widths, 8/16/32 (default 8,16)
  --reps N             timed repetitions per configuration; the median is reported (default 5)
  --min-ops N          requests per repetition are at least max(batch, N) (default 2^22)
  --threads N          cpu threads for every system (default: all hardware threads)
  --peer-grain N       peers run batches of <= N requests on the calling thread alone
                       (default 2048, as duet-cpu does; 0: always split across all threads)
  --probe-bytes N      gpu random-access probe buffer (default 2^32)
  --copy-bytes N       gpu device-to-device copy size (default 2^31)
  --seed N             workload seed
  --quick              smoke test: R=2^16, batches 512,65536, reps 3, min-ops 2^18,
                       probe 2^30 (explicit options still win)
  --out PATH           JSON output (default bench/results/lslab-<device>-<UTC time>.json)
  --help
Counts accept decimal, a^b (2^22, 10^6) or 1e6; they must be positive.
)";
}

bool parse_options(int argc, char** argv, Options* o, bool* help, std::string* error) {
  bool have_reps = false, have_min_ops = false;
  auto fail = [&](const std::string& m) {
    *error = m;
    return false;
  };
  const bool ok = scan_flags(argc, argv, help, &o->quick, error, [&](const std::string& flag, const std::string& v) {
    auto counts = [&](std::vector<std::uint64_t>* out) {
      out->clear();
      for (const std::string& s : split_list(v)) {
        auto c = parse_count(s);
        if (!c || *c == 0) return fail(flag + ": bad count '" + s + "'");
        out->push_back(*c);
      }
      return out->empty() ? fail(flag + ": empty list") : true;
    };
    auto count = [&](std::uint64_t* out) {
      auto c = parse_count(v);
      if (!c || *c == 0) return fail(flag + ": bad count '" + v + "'");
      *out = *c;
      return true;
    };
    if (flag == "--device") {
      if (v != "cpu" && v != "gpu") return fail("--device must be cpu or gpu");
      o->device = v;
    } else if (flag == "--systems") {
      o->systems = split_list(v);
      if (o->systems.empty()) return fail("--systems: empty list");
    } else if (flag == "--resident") {
      if (!counts(&o->resident)) return false;
    } else if (flag == "--batches") {
      if (!counts(&o->batches)) return false;
    } else if (flag == "--load") {
      o->loads.clear();
      for (const std::string& s : split_list(v)) {
        auto d = parse_double(s);
        if (!d || !(*d >= 0.05 && *d <= 1.0)) return fail("--load: '" + s + "' is not in [0.05, 1]");
        o->loads.push_back(*d);
      }
      if (o->loads.empty()) return fail("--load: empty list");
    } else if (flag == "--ops") {
      o->ops.clear();
      for (const std::string& s : split_list(v)) {
        auto op = parse_bench_op(s);
        if (!op) return fail("--ops: unknown op '" + s + "'");
        o->ops.push_back(*op);
      }
      if (o->ops.empty()) return fail("--ops: empty list");
    } else if (flag == "--widths") {
      o->widths.clear();
      for (const std::string& s : split_list(v)) {
        if (s != "8" && s != "16" && s != "32") return fail("--widths: '" + s + "' is not 8, 16 or 32");
        o->widths.push_back(static_cast<unsigned>(std::stoul(s)));
      }
      if (o->widths.empty()) return fail("--widths: empty list");
    } else if (flag == "--reps") {
      std::uint64_t r = 0;
      if (!count(&r) || r > 1000) return fail("--reps: want 1..1000");
      o->reps = static_cast<unsigned>(r);
      have_reps = true;
    } else if (flag == "--min-ops") {
      if (!count(&o->min_ops_per_rep)) return false;
      have_min_ops = true;
    } else if (flag == "--threads") {
      std::uint64_t t = 0;
      if (!count(&t) || t > 4096) return fail("--threads: want 1..4096");
      o->threads = static_cast<unsigned>(t);
    } else if (flag == "--peer-grain") {
      if (v == "0") o->peer_grain = 0;
      else {
        std::uint64_t g = 0;
        if (!count(&g)) return false;
        o->peer_grain = g;
      }
    } else if (flag == "--probe-bytes") {
      if (!count(&o->probe_bytes)) return false;
    } else if (flag == "--copy-bytes") {
      if (!count(&o->copy_bytes)) return false;
    } else if (flag == "--seed") {
      if (!count(&o->seed)) return false;
    } else if (flag == "--out") {
      o->out = v;
    } else {
      return fail("unknown option " + flag + " (see --help)");
    }
    return true;
  });
  if (!ok || *help) return ok;

  // Defaults, where the command line left a choice open.
  if (o->resident.empty())
    o->resident = o->quick ? std::vector<std::uint64_t>{1u << 16} : std::vector<std::uint64_t>{1u << 22, 1u << 26};
  if (o->loads.empty()) o->loads = {0.5, 0.9};
  if (o->batches.empty()) {
    // The full list on the CPU too: the default CPU run (four systems, R = 2^22 and 2^26) took
    // 22 minutes on a 2-core, 24 GiB machine. Should it outgrow ~25 minutes, drop 4096 and
    // 262144 for the CPU first (about a fifth of the time), keeping 512 and the largest.
    if (o->quick) o->batches = {512, 65536};
    else o->batches = {512, 4096, 32768, 262144, 2097152, 16777216};
  }
  if (o->ops.empty()) o->ops = {BenchOp::kGet, BenchOp::kPut, BenchOp::kDelete, BenchOp::kMix};
  if (o->widths.empty()) o->widths = {8, 16};
  if (!have_reps && o->quick) o->reps = 3;
  if (!have_min_ops) o->min_ops_per_rep = o->quick ? (1u << 18) : (1u << 22);
  if (o->probe_bytes == 0) o->probe_bytes = o->quick ? kGiB : 4 * kGiB;
  if (o->copy_bytes == 0) o->copy_bytes = o->quick ? kGiB : 2 * kGiB;
  return true;
}

Json Options::to_json() const {
  Json c = Json::object();
  c.set("device", device);
  c.set("systems", Json::array_of(systems));
  c.set("resident", Json::array_of(resident));
  c.set("load_factors", Json::array_of(loads));
  c.set("batches", Json::array_of(batches));
  std::vector<std::string> op_names;
  for (BenchOp op : ops) op_names.push_back(bench_op_name(op));
  c.set("ops", Json::array_of(op_names));
  if (device == "gpu") {
    c.set("slab_widths", Json::array_of(widths));
    c.set("probe_bytes", probe_bytes);
    c.set("copy_bytes", copy_bytes);
  } else {
    c.set("cpu_slab_width", 8);
    c.set("peer_grain", static_cast<std::uint64_t>(peer_grain));
  }
  c.set("reps", reps);
  c.set("min_ops_per_rep", min_ops_per_rep);
  c.set("threads", threads);
  c.set("seed", seed);
  c.set("quick", quick);
  c.set("key_distribution", "uniform random 64-bit keys (splitmix64), values uniform random");
  // Allocator settings that decide whether the peers' tables get huge pages (duet-cpu asks
  // for them itself with madvise).
  Json env = Json::object();
  for (const char* name : {"GLIBC_TUNABLES", "TBB_MALLOC_USE_HUGE_PAGES"}) {
    const char* v = std::getenv(name);
    env.set(name, v ? Json(std::string(v)) : Json());
  }
  c.set("env", env);
  return c;
}

}  // namespace duet::bench::lslab
