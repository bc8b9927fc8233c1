#include "options.hpp"

#include <cmath>

#include "../common/parse.hpp"

namespace duet::bench::lit {

std::string key_label(std::uint64_t k) {
  unsigned e = 0;
  std::uint64_t x = k;
  while (x >= 10 && x % 10 == 0) x /= 10, ++e;
  if (x == 1 && e > 0) return "1e" + std::to_string(e);
  return std::to_string(k);
}

std::string usage() {
  return R"(duet_bench_lit: LIT (Duet's ordered map with linearizable range queries) against libcds's
lock-free skip list map and oneTBB's concurrent_map, closed loop, fixed duration (section 6.5).

  --systems LIST     lit,libcds,tbb (default: all built in)
  --workloads LIST   get, insert-remove, 80-10-10, zipf-80-10-10 (default all)
                     get: 100% GET; insert-remove: 50% INSERT, 50% REMOVE; 80-10-10: 80% GET,
                     10% UPDATE (half INSERT, half REMOVE), 10% RANGE; all uniform except
                     zipf-80-10-10 (Zipfian keys, key 1 the most popular)
  --keys LIST        key ranges K of the uniform workloads (default 1e4,1e5,1e6,1e7,1e8);
                     keys are 1..K, prefilled with a random half of them
  --zipf-keys LIST   key ranges of zipf-80-10-10 (default 1e6, or --keys when that is given)
  --theta LIST       Zipf skews, 0 <= theta < 1 (default 0.1,0.5,0.8,0.9,0.99)
  --threads N        threads for every system (default: hardware threads)
  --seconds S        timed length of one run (default 2)
  --runs N           runs per point; the median is reported (default 5)
  --range-length N   keys one RANGE covers (default 50)
  --zipf-trace N     Zipfian keys each thread draws before a run and then cycles through
                     (a power of two, default 2^20); kinds and uniform keys are drawn live
  --check-every N    check the output of every N-th RANGE (default 16; GETs are all checked)
  --lit-buckets N    LIT root buckets (default 10000)
  --seed N           workload seed
  --quick            smoke test: keys 1e4,1e5, zipf keys 1e5, theta 0.5,0.99, 0.25 s, 1 run,
                     2^16 Zipfian trace (explicit options win)
  --out PATH         JSON output (default bench/results/lit-cpu/lit-cpu-<UTC time>.json)
  --help
Counts accept decimal, a^b (10^6) or 1e6.
)";
}

bool parse_options(int argc, char** argv, Options* o, bool* help, std::string* error) {
  bool have_keys = false, have_zipf_keys = false, have_theta = false, have_seconds = false, have_runs = false,
       have_stream = false;
  auto fail = [&](const std::string& m) {
    *error = m;
    return false;
  };
  const bool ok = scan_flags(argc, argv, help, &o->quick, error, [&](const std::string& flag, const std::string& v) {
    auto counts = [&](std::vector<std::uint64_t>* out) {
      out->clear();
      for (const std::string& s : split_list(v)) {
        auto c = parse_count(s);
        if (!c || *c < 2 || *c >= (std::uint64_t{1} << 61)) return fail(flag + ": bad key range '" + s + "'");
        out->push_back(*c);
      }
      return out->empty() ? fail(flag + ": empty list") : true;
    };
    auto count = [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t* out) {
      auto c = parse_count(v);
      if (!c || *c < lo || *c > hi)
        return fail(flag + ": want " + std::to_string(lo) + ".." + std::to_string(hi) + ", got '" + v + "'");
      *out = *c;
      return true;
    };
    std::uint64_t c = 0;
    if (flag == "--systems") {
      o->systems = split_list(v);
      if (o->systems.empty()) return fail("--systems: empty list");
    } else if (flag == "--workloads") {
      o->workloads.clear();
      for (const std::string& s : split_list(v)) {
        auto w = parse_workload(s);
        if (!w) return fail("--workloads: unknown workload '" + s + "' (see --help)");
        o->workloads.push_back(*w);
      }
      if (o->workloads.empty()) return fail("--workloads: empty list");
    } else if (flag == "--keys") {
      if (!counts(&o->keys)) return false;
      have_keys = true;
    } else if (flag == "--zipf-keys") {
      if (!counts(&o->zipf_keys)) return false;
      have_zipf_keys = true;
    } else if (flag == "--theta") {
      o->thetas.clear();
      for (const std::string& s : split_list(v)) {
        auto d = parse_double(s);
        if (!d || !(*d >= 0 && *d < 1)) return fail("--theta: '" + s + "' is not in [0, 1)");
        o->thetas.push_back(*d);
      }
      if (o->thetas.empty()) return fail("--theta: empty list");
      have_theta = true;
    } else if (flag == "--threads") {
      if (!count(1, 4096, &c)) return false;
      o->threads = static_cast<unsigned>(c);
    } else if (flag == "--seconds") {
      auto d = parse_double(v);
      if (!d || !(*d > 0 && *d <= 3600)) return fail("--seconds: want a duration in (0, 3600]");
      o->seconds = *d;
      have_seconds = true;
    } else if (flag == "--runs") {
      if (!count(1, 1000, &c)) return false;
      o->runs = static_cast<unsigned>(c);
      have_runs = true;
    } else if (flag == "--range-length") {
      if (!count(1, 1u << 20, &o->range_length)) return false;
    } else if (flag == "--zipf-trace") {
      if (!count(1024, std::uint64_t{1} << 30, &c)) return false;
      if (c & (c - 1)) return fail("--zipf-trace: want a power of two");
      o->zipf_trace = static_cast<std::size_t>(c);
      have_stream = true;
    } else if (flag == "--check-every") {
      if (!count(1, 1u << 30, &c)) return false;
      o->check_every = static_cast<unsigned>(c);
    } else if (flag == "--lit-buckets") {
      if (!count(1, std::uint64_t{1} << 30, &c)) return false;
      o->lit_buckets = static_cast<std::size_t>(c);
    } else if (flag == "--seed") {
      if (!count(0, ~std::uint64_t{0}, &o->seed)) return false;
    } else if (flag == "--out") {
      o->out = v;
    } else {
      return fail("unknown option " + flag + " (see --help)");
    }
    return true;
  });
  if (!ok || *help) return ok;

  if (o->workloads.empty())
    o->workloads = {WorkloadKind::kGet, WorkloadKind::kInsertRemove, WorkloadKind::kMixed, WorkloadKind::kZipfMixed};
  if (!have_keys) {
    if (o->quick) o->keys = {10000, 100000};
    else o->keys = {10000, 100000, 1000000, 10000000, 100000000};
  }
  if (!have_zipf_keys) {
    if (have_keys) o->zipf_keys = o->keys;
    else if (o->quick) o->zipf_keys = {100000};
    else o->zipf_keys = {1000000};
  }
  if (!have_theta) {
    if (o->quick) o->thetas = {0.5, 0.99};
    else o->thetas = {0.1, 0.5, 0.8, 0.9, 0.99};
  }
  if (o->quick) {
    if (!have_seconds) o->seconds = 0.25;
    if (!have_runs) o->runs = 1;
    if (!have_stream) o->zipf_trace = std::size_t{1} << 16;
  }
  return true;
}

Json Options::to_json() const {
  Json c = Json::object();
  c.set("threads", threads);
  c.set("seconds", seconds);
  c.set("runs", runs);
  c.set("statistic", "median over runs (min and max also given)");
  Json ws = Json::array();
  for (WorkloadKind w : workloads) {
    Json j = Json::object();
    j.set("name", workload_name(w));
    j.set("mix", workload_description(w));
    ws.push(j);
  }
  c.set("workloads", ws);
  c.set("keys", Json::array_of(keys));
  c.set("zipf_keys", Json::array_of(zipf_keys));
  c.set("thetas", Json::array_of(thetas));
  c.set("range_length", range_length);
  c.set("zipf_trace_per_thread", static_cast<std::uint64_t>(zipf_trace));
  c.set("range_check_every", check_every);
  c.set("seed", seed);
  c.set("quick", quick);
  c.set("keys_and_values",
        "8-byte keys 1..K, value = value_for(key) (a bijection of the key); a GET that finds its key and "
        "every checked RANGE pair must carry it");
  c.set("prefill",
        "K/2 distinct keys (a keyed Feistel permutation of [0, K), first K/2 images, plus 1), inserted in "
        "parallel by all threads, untimed; one map per (system, K), prefilled once and then used by every "
        "workload of that K in the listed order (the updates keep its size near K/2)");
  c.set("measurement",
        "closed loop: each thread draws operation kinds and uniform keys from its own SplitMix64 stream "
        "(Zipfian keys from a trace drawn before the run and cycled), identical for every system (seeded by "
        "point, run and thread), from a common start until a stop flag set after `seconds`; ops/s = completed "
        "operations of all threads / (last thread's stop - start)");
  c.set("zipfian", "bench/kv's generator (Gray et al., as YCSB's ZipfianGenerator), key = rank + 1");
  return c;
}

}  // namespace duet::bench::lit
