// duet_bench_hydralist: Hydralist against ordered peers on identical pre-generated YCSB work
// (thesis 002, chapter 4's evaluation; docs/hydralist.md).
//
// Work. Keys are generated once: integer keys are distinct random u64s; string keys are
// synthetic "domain@user" e-mails (about 20 bytes on average, at most 25). Operation arrays are
// generated once per workload and distribution (bench/kv's YCSB generators: uniform, scrambled
// Zipfian 0.99, latest) and shared by every system, thread count and repetition; each thread
// runs a contiguous slice.
//
// Two schedules:
//  * default: per (repetition, threads, system) a fresh map is loaded with the keys by all
//    threads (the Load workload, timed), then C, B, A (per distribution), D (latest) and E (per
//    distribution; scan length uniform 1-100) run in that order on it (D and E insert fresh
//    keys, so they run last);
//  * --load-once (for key sets too large to load many times): per system one map, loaded once
//    by the most threads (Load: one sample), then per repetition and per thread count (in the
//    order given) C, B, A, D, E on that map. --ops is the operation count at the most threads;
//    t threads run the first ops * t / most of each array, so that every point takes about the
//    same time. D and E get fresh arrays per (repetition, threads), each inserting keys not
//    inserted before and drawing its reads from every key inserted so far.
// Unordered systems (libcuckoo) skip E.
//
// --fork runs each system's share of a schedule in a child process (forked after the work is
// generated, so the work stays identical and is not generated again): the child's peak
// resident memory added by the load is recorded per system (Fig. 4.17, each system in its own
// process) and its map is never torn down (the child exits), which saves minutes at 10^8 keys.
// --child-timeout S kills a child still running after S seconds; the result file lists it
// under "timed_out" and holds none of its records.
//
// Optional parts: --rss (without --fork) measures each system's peak resident memory after the
// load in a child process of its own; --sweep runs B with string keys over several key-set sizes
// (with --load-once: one load per size and system, the repetitions on that map).
//
// usage: duet_bench_hydralist [--keys-int N] [--keys-str N] [--ops N] [--threads 1,2,4]
//          [--ops-e N (default ops / 10)] [--reps R] [--key-types int,str] [--workloads load,a,b,c,d,e]
//          [--dists uniform,zipf] [--systems hydralist,tbb,libcds,libcuckoo,lit,hl-sync,...]
//          [--load-once] [--fork [--child-timeout S]] [--rss] [--sweep 100000,1000000] [--seed S] [--out PATH]
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/json.hpp"
#include "../common/results.hpp"
#include "../kv/ycsb.hpp"
#include "systems.hpp"

using namespace duet::bench;
using namespace duet::bench::hydralist;
namespace ycsb = duet::bench::kv;

namespace {

struct Options {
  std::uint64_t keys_int = 1'000'000, keys_str = 400'000, ops = 1'000'000, ops_e = 0, seed = 42;
  std::vector<unsigned> threads{1, 2};
  unsigned reps = 3;
  std::vector<std::string> key_types{"int", "str"};
  std::vector<std::string> workloads{"load", "a", "b", "c", "d", "e"};
  std::vector<std::string> dists{"uniform", "zipf"};
  std::vector<std::string> systems;  // empty: hydralist and every available peer
  bool rss = false, load_once = false, fork_systems = false;
  double child_timeout = 0;  // --fork: seconds a child may run (0: no limit)
  std::vector<std::uint64_t> sweep;
  std::string out;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string x;
  while (std::getline(in, x, ','))
    if (!x.empty()) out.push_back(x);
  return out;
}

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
    auto num = [&](const std::string& s) -> std::uint64_t {
      try {
        return static_cast<std::uint64_t>(std::stod(s));
      } catch (...) {
        std::fprintf(stderr, "%s: not a number: %s\n", a.c_str(), s.c_str());
        std::exit(2);
      }
    };
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: duet_bench_hydralist [--keys-int N] [--keys-str N] [--ops N] [--threads 1,2,4]\n"
          "         [--ops-e N (default ops / 10)] [--reps R] [--key-types int,str] [--workloads load,a,b,c,d,e]\n"
          "         [--dists uniform,zipf] [--systems hydralist,tbb,libcds,libcuckoo,lit,hl-sync,...]\n"
          "         [--load-once] [--fork [--child-timeout S]] [--rss] [--sweep 100000,1000000] [--seed S] [--out PATH]\n"
          "Hydralist against ordered peers on identical pre-generated YCSB work (docs/hydralist.md;\n"
          "the schedules are described at the top of bench/hydralist/main.cpp).\n");
      std::exit(0);
    }
    if (a == "--keys-int") o->keys_int = num(val());
    else if (a == "--keys-str") o->keys_str = num(val());
    else if (a == "--ops") o->ops = num(val());
    else if (a == "--ops-e") o->ops_e = num(val());
    else if (a == "--seed") o->seed = num(val());
    else if (a == "--reps") o->reps = static_cast<unsigned>(num(val()));
    else if (a == "--threads") {
      o->threads.clear();
      for (auto& t : split(val())) o->threads.push_back(static_cast<unsigned>(num(t)));
    } else if (a == "--key-types") o->key_types = split(val());
    else if (a == "--workloads") o->workloads = split(val());
    else if (a == "--dists") o->dists = split(val());
    else if (a == "--systems") o->systems = split(val());
    else if (a == "--rss") o->rss = true;
    else if (a == "--load-once") o->load_once = true;
    else if (a == "--fork") o->fork_systems = true;
    else if (a == "--child-timeout") o->child_timeout = std::stod(val());
    else if (a == "--sweep") {
      for (auto& t : split(val())) o->sweep.push_back(num(t));
    } else if (a == "--out") o->out = val();
    else {
      std::fprintf(stderr, "unknown option %s (see the usage at the top of bench/hydralist/main.cpp)\n", a.c_str());
      return false;
    }
  }
  for (unsigned t : o->threads)
    if (t == 0 || t > 1024) {
      std::fprintf(stderr, "--threads: each count must be in [1, 1024]\n");
      return false;
    }
  if (o->ops_e == 0) o->ops_e = std::max<std::uint64_t>(1, o->ops / 10);
  if (o->keys_str > 70'000'000'000ull) {
    std::fprintf(stderr, "--keys-str: at most 7e10 (distinct 7-character ids)\n");
    return false;
  }
  if (o->reps == 0 || o->ops == 0 || o->keys_int == 0 || o->keys_str == 0) {
    std::fprintf(stderr, "--reps, --ops and the key counts must be positive\n");
    return false;
  }
  return true;
}

/// SplitMix64's finalizer: a bijection of u64, so distinct inputs give distinct keys.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

IntKeys make_int_keys(std::uint64_t n, std::uint64_t seed) {
  IntKeys k;
  k.v.resize(n);
  const std::uint64_t salt = mix(seed);
  for (std::uint64_t i = 0; i < n; ++i) k.v[i] = mix(i + salt);
  return k;
}

/// "domain@user": a popular-first domain, '@', a 7-character base-36 id (distinct per key,
/// scattered) and 0-6 random letters. About 20 bytes on average, at most 25. Distinct for
/// n <= 36^7.
StrKeys make_str_keys(std::uint64_t n, std::uint64_t seed) {
  static const char* kDomains[] = {"gmail.com",  "yahoo.com",   "hotmail.com", "outlook.com", "aol.com",
                                   "qq.com",     "mail.ru",     "icloud.com",  "gmx.de",      "web.de",
                                   "live.com",   "yandex.ru",   "163.com",     "proton.me",   "comcast.net",
                                   "orange.fr",  "libero.it",   "uni-bonn.de", "mit.edu",     "example.org"};
  StrKeys k;
  k.off.reserve(n + 1);
  k.buf.reserve(n * 21);
  ycsb::Rng rng(mix(seed + 7));
  ycsb::ZipfianGenerator dz(20, 0.99);
  for (std::uint64_t i = 0; i < n; ++i) {
    k.off.push_back(k.buf.size());
    k.buf += kDomains[dz.next(rng)];
    k.buf += '@';
    // i -> (i * M + C) mod 36^7 with M coprime to 36^7 is a bijection of [0, 36^7): distinct
    // ids, hence distinct keys, for up to 36^7 keys (checked by the option parser).
    constexpr std::uint64_t kIds = 78364164096ull;  // 36^7
    std::uint64_t id = static_cast<std::uint64_t>(
        (static_cast<unsigned __int128>(i) * 34996493597ull + 0x5bd1e995ull) % kIds);
    for (int d = 0; d < 7; ++d, id /= 36) k.buf += "0123456789abcdefghijklmnopqrstuvwxyz"[id % 36];
    const unsigned extra = static_cast<unsigned>(rng.below(7));
    for (unsigned e = 0; e < extra; ++e) k.buf += static_cast<char>('a' + rng.below(26));
  }
  k.off.push_back(k.buf.size());
  return k;
}

/// One generated workload: its operations and the key numbers it inserts.
struct Work {
  std::string workload, dist;
  std::vector<std::uint64_t> ops;
};

/// Generates a workload over `loaded` existing keys, taking fresh keys from `*pool` onwards.
/// `stream` > 0 draws another random stream (the per-(repetition, threads) arrays of --load-once).
Work make_work(const std::string& w, const std::string& dist, std::uint64_t loaded, std::uint64_t n,
               std::uint64_t* pool, std::uint64_t seed, std::uint64_t stream = 0) {
  Work out{w, dist, {}};
  out.ops.reserve(n);
  ycsb::Rng rng(ycsb::derive_seed(seed, std::hash<std::string>{}(w + dist) + stream * 0x9e3779b97f4a7c15ull));
  const ycsb::Distribution d = w == "d" ? ycsb::Distribution::kLatest
                               : dist == "zipf" ? ycsb::Distribution::kScrambled
                                                : ycsb::Distribution::kUniform;
  ycsb::KeyChooser chooser(d, loaded, 0.99, loaded);
  if (d == ycsb::Distribution::kScrambled) chooser.use_trace(1 << 20);
  const double read = w == "a" ? 0.5 : w == "b" ? 0.95 : w == "c" ? 1.0 : w == "d" ? 0.95 : 0.0;
  const double insert = (w == "d" || w == "e") ? 0.05 : 0.0;
  std::uint64_t inserted = loaded;  // latest: keys [0, inserted) exist (the pool follows the load)
  for (std::uint64_t i = 0; i < n; ++i) {
    const double u = rng.next_double();
    if (u < insert) {
      out.ops.push_back(encode_op(kInsert, (*pool)++));
      ++inserted;
      continue;
    }
    std::uint64_t k = chooser.next(rng, inserted);
    if (w == "d") {
      // latest ranks count back from the newest key: map onto the key numbers inserted so far
      // (the load's, then this workload's pool, which starts right after them).
      k = std::min(k, inserted - 1);
    }
    if (w == "e") {
      out.ops.push_back(encode_op(kScan, k, 1 + static_cast<unsigned>(rng.below(100))));
    } else {
      out.ops.push_back(encode_op(u < insert + read ? kRead : kUpdate, k));
    }
  }
  return out;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Runs phases on `threads` persistent threads, each with its own worker of `sys`.
template <class Keys>
class Pool {
 public:
  Pool(System<Keys>* sys, unsigned threads) : n_(threads), start_(threads + 1), end_(threads + 1) {
    for (unsigned t = 0; t < n_; ++t)
      ts_.emplace_back([this, sys, t] {
        auto w = sys->attach();
        for (;;) {
          start_.arrive_and_wait();
          if (stop_) break;
          tallies_[t] = phase_(*w, t);
          end_.arrive_and_wait();
        }
      });
    tallies_.resize(n_);
  }
  ~Pool() {
    stop_ = true;
    start_.arrive_and_wait();
    for (auto& t : ts_) t.join();
  }
  /// Runs f(worker, thread) on every thread; returns the seconds from start to the last finish.
  double run(std::function<Tally(Worker<Keys>&, unsigned)> f, Tally* total) {
    phase_ = std::move(f);
    const double t0 = now_s();
    start_.arrive_and_wait();
    end_.arrive_and_wait();
    const double t1 = now_s();
    *total = {};
    for (auto& x : tallies_) total->add(x);
    return t1 - t0;
  }

 private:
  unsigned n_;
  std::barrier<> start_, end_;
  std::vector<std::thread> ts_;
  std::vector<Tally> tallies_;
  std::function<Tally(Worker<Keys>&, unsigned)> phase_;
  bool stop_ = false;
};

std::unique_ptr<System<IntKeys>> make_int(const std::string& name, unsigned threads) {
  if (name == "tbb") return make_tbb_int();
  if (name == "libcuckoo") return make_libcuckoo_int();
  if (name == "libcds") return make_libcds_int(threads);
  if (name == "lit") return make_lit_int(threads);
  return make_hydralist_int(name, threads);
}
std::unique_ptr<System<StrKeys>> make_str(const std::string& name, unsigned threads) {
  if (name == "tbb") return make_tbb_str();
  if (name == "libcuckoo") return make_libcuckoo_str();
  if (name == "libcds") return make_libcds_str(threads);
  if (name == "lit") return nullptr;  // integer keys only
  return make_hydralist_str(name, threads);
}
template <class Keys>
std::unique_ptr<System<Keys>> make_sys(const std::string& name, unsigned threads) {
  if constexpr (std::is_same_v<Keys, IntKeys>) return make_int(name, threads);
  else return make_str(name, threads);
}

struct Record {
  std::string key_type, workload, dist, system;
  unsigned threads;
  std::uint64_t keys, ops;
  std::vector<double> mops;
  std::uint64_t found = 0, wrong = 0, scanned = 0;
  Json stats;
  bool has_stats = false;
};

/// One timed phase: the first `n` operations of `*work`, on the first `threads` threads of the
/// pool (the others sit it out).
struct Phase {
  const Work* work;
  unsigned threads;
  std::uint64_t n;
};

std::uint64_t status_kb(const char* field);

/// Whether `name` is an ordered map (libcuckoo is not: it runs no scans).
bool is_ordered(const std::string& name) { return name != "libcuckoo"; }

/// Reads a flat JSON object of numbers, strings, booleans and nulls (what System::stats()
/// writes) back into a Json; anything else yields null.
Json parse_flat_object(const std::string& text) {
  Json out = Json::object();
  std::size_t i = 0;
  auto ws = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  auto str = [&](std::string* v) {
    if (i >= text.size() || text[i] != '"') return false;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      v->push_back(text[i]);
    }
    return i++ < text.size();
  };
  ws();
  if (i >= text.size() || text[i++] != '{') return Json();
  for (;;) {
    ws();
    if (i < text.size() && text[i] == '}') return out;
    std::string key;
    if (!str(&key)) return Json();
    ws();
    if (i >= text.size() || text[i++] != ':') return Json();
    ws();
    if (i < text.size() && text[i] == '"') {
      std::string v;
      if (!str(&v)) return Json();
      out.set(key, v);
    } else {
      const std::size_t b = i;
      while (i < text.size() && text[i] != ',' && text[i] != '}' && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
      const std::string tok = text.substr(b, i - b);
      if (tok == "true" || tok == "false") out.set(key, tok == "true");
      else if (tok == "null") out.set(key, Json());
      else if (!tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos)
        out.set(key, static_cast<std::uint64_t>(std::strtoull(tok.c_str(), nullptr, 10)));
      else if (!tok.empty() && tok.find_first_not_of("-0123456789") == std::string::npos)
        out.set(key, static_cast<std::int64_t>(std::strtoll(tok.c_str(), nullptr, 10)));
      else out.set(key, std::strtod(tok.c_str(), nullptr));
    }
    ws();
    if (i < text.size() && text[i] == ',') {
      ++i;
      continue;
    }
    if (i < text.size() && text[i] == '}') return out;
    return Json();
  }
}

/// One sample of record `id` as a line for the parent of a forked run: "R", the id, the
/// record's fields, the phase's found/wrong/scanned tallies and the sample (Mops/s).
std::string record_line(const std::string& id, const Record& r, const Tally& t, double mops) {
  char num[64];
  std::snprintf(num, sizeof(num), "%.17g", mops);
  return "R\t" + id + "\t" + r.key_type + "\t" + r.workload + "\t" + r.dist + "\t" + r.system + "\t" +
         std::to_string(r.threads) + "\t" + std::to_string(r.keys) + "\t" + std::to_string(r.ops) + "\t" +
         std::to_string(t.found) + "\t" + std::to_string(t.wrong) + "\t" + std::to_string(t.scanned) + "\t" + num +
         "\n";
}

/// Merges a forked run's lines into recs ("R": one sample; "S": a record's stats, a flat JSON
/// object; "M": the peak resident memory added by the load, kB); returns the "M" value (-1
/// when missing). A truncated last line (a killed child) is ignored.
std::int64_t merge_lines(const std::string& text, std::map<std::string, Record>* recs) {
  std::int64_t kb = -1;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: cut off
    std::vector<std::string> f;
    std::size_t b = 0;
    for (std::size_t e; (e = line.find('\t', b)) != std::string::npos; b = e + 1) f.push_back(line.substr(b, e - b));
    f.push_back(line.substr(b));
    if (f[0] == "M" && f.size() == 2) kb = std::strtoll(f[1].c_str(), nullptr, 10);
    if (f[0] == "S" && f.size() == 3) {
      Record& r = (*recs)[f[1]];
      r.stats = parse_flat_object(f[2]);
      r.has_stats = true;
    }
    if (f[0] != "R" || f.size() != 13) continue;
    Record& r = (*recs)[f[1]];
    if (r.system.empty()) {
      r.key_type = f[2], r.workload = f[3], r.dist = f[4], r.system = f[5];
      r.threads = static_cast<unsigned>(std::strtoul(f[6].c_str(), nullptr, 10));
      r.keys = std::strtoull(f[7].c_str(), nullptr, 10);
      r.ops = std::strtoull(f[8].c_str(), nullptr, 10);
    }
    r.found = std::strtoull(f[9].c_str(), nullptr, 10);
    r.wrong += std::strtoull(f[10].c_str(), nullptr, 10);
    r.scanned = std::strtoull(f[11].c_str(), nullptr, 10);
    r.mops.push_back(std::strtod(f[12].c_str(), nullptr));
  }
  return kb;
}

/// Creates system `name` sized for `pool_threads` threads, loads key numbers [0, loaded) on all
/// of them (recorded as Load when do_load), then runs the phases in order on the same map,
/// appending one sample per phase to its record (key type, workload, distribution, system,
/// threads, keys loaded). Scan workloads are skipped for unordered systems. With `stream` (a
/// forked run) it also writes, as they happen, the peak resident memory added from just before
/// the system existed to the end of the load, each sample and the stats, as merge_lines reads
/// them, so that a child killed later still leaves what it measured.
template <class Keys>
void run_system(const Keys& keys, std::uint64_t loaded, const std::vector<Phase>& phases, bool do_load,
                unsigned pool_threads, const std::string& key_type, const std::string& name,
                std::map<std::string, Record>* recs, std::FILE* stream = nullptr) {
  const std::uint64_t base_kb = stream ? status_kb("VmRSS:") : 0;
  auto sys = make_sys<Keys>(name, pool_threads);
  if (!sys) return;  // the system does not take this key type
  const bool ordered = is_ordered(name);
  auto pool = std::make_unique<Pool<Keys>>(sys.get(), pool_threads);
  std::string last_id;
  auto add = [&](const std::string& w, const std::string& d, unsigned threads, std::uint64_t ops, const Tally& t,
                 double mops) {
    const std::string id = key_type + "|" + w + "|" + d + "|" + name + "|" + std::to_string(threads) + "|" +
                           std::to_string(loaded);
    Record& r = (*recs)[id];
    if (r.system.empty()) r = Record{key_type, w, d, name, threads, loaded, ops, {}, 0, 0, 0, Json(), false};
    r.mops.push_back(mops);
    r.found = t.found;
    r.wrong += t.wrong;
    r.scanned = t.scanned;
    last_id = id;
    if (stream) {
      std::fputs(record_line(id, r, t, mops).c_str(), stream);
      std::fflush(stream);
    }
  };
  Tally t;
  const unsigned lt = pool_threads;
  const double secs = pool->run(
      [&](Worker<Keys>& w, unsigned i) {
        Tally x;
        x.found = w.load(keys, loaded * i / lt, loaded * (i + 1) / lt);
        x.ops = loaded * (i + 1) / lt - loaded * i / lt;
        return x;
      },
      &t);
  if (stream) {
    const std::int64_t kb = static_cast<std::int64_t>(status_kb("VmHWM:")) - static_cast<std::int64_t>(base_kb);
    std::fprintf(stream, "M\t%lld\n", static_cast<long long>(kb));
    std::fflush(stream);
    std::printf("#     %s %s: loaded %llu keys in %.1f s\n", key_type.c_str(), name.c_str(),
                (unsigned long long)loaded, secs);
    std::fflush(stdout);
  }
  if (do_load) add("load", "-", lt, loaded, t, static_cast<double>(loaded) / secs / 1e6);
  for (const Phase& ph : phases) {
    const Work& wk = *ph.work;
    if (!ordered && wk.workload == "e") continue;
    const std::uint64_t n = std::min<std::uint64_t>(ph.n, wk.ops.size());
    const unsigned th = ph.threads;
    const double s = pool->run(
        [&](Worker<Keys>& w, unsigned i) {
          if (i >= th) return Tally{};
          const std::uint64_t b = n * i / th, e = n * (i + 1) / th;
          return w.run(keys, wk.ops.data() + b, e - b);
        },
        &t);
    add(wk.workload, wk.dist, th, n, t, static_cast<double>(n) / s / 1e6);
  }
  pool.reset();  // sessions detach first: Hydralist folds their counters into stats() then
  if (last_id.empty()) {
    if (stream) (void)sys.release();  // see below
    return;
  }
  Record& lr = (*recs)[last_id];
  lr.stats = sys->stats();
  lr.has_stats = true;
  if (stream) {
    std::fprintf(stream, "S\t%s\t%s\n", last_id.c_str(), lr.stats.dump_string(0).c_str());
    std::fflush(stream);
    // A forked child exits right after: leave the map to the process exit (freeing 10^8 nodes
    // one by one takes tens of seconds and would count against --child-timeout).
    (void)sys.release();
  }
}

// ---- --fork: a system's share of the schedule in a child process ----

/// run_system in a forked child (the caller must have no other threads running). Returns the
/// child's peak resident memory added by the load (kB; -1 when it never finished the load).
/// A child that fails or runs past timeout_s is said on stderr (*timed_out tells the latter);
/// the samples it reported before are kept.
template <class Keys>
std::int64_t run_system_forked(const Keys& keys, std::uint64_t loaded, const std::vector<Phase>& phases, bool do_load,
                               unsigned pool_threads, const std::string& key_type, const std::string& name,
                               double timeout_s, std::map<std::string, Record>* recs, bool* timed_out) {
  *timed_out = false;
  int fd[2];
  if (pipe(fd) != 0) {
    std::perror("pipe");
    return -1;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    close(fd[0]);
    close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    close(fd[0]);
    int rc = 0;
    std::FILE* out = fdopen(fd[1], "w");
    try {
      std::map<std::string, Record> mine;
      run_system(keys, loaded, phases, do_load, pool_threads, key_type, name, &mine, out);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s (%s keys): %s\n", name.c_str(), key_type.c_str(), e.what());
      rc = 1;
    }
    if (!out || std::fclose(out) != 0) rc = 1;
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(rc);  // no teardown: the map dies with the process
  }
  close(fd[1]);
  std::string text;
  char buf[65536];
  double deadline = timeout_s > 0 ? now_s() + timeout_s : 0;
  for (;;) {
    if (deadline > 0) {
      const double left = deadline - now_s();
      pollfd p{fd[0], POLLIN, 0};
      const int ready = left > 0 ? poll(&p, 1, static_cast<int>(std::ceil(left * 1000))) : 0;
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {  // over its time: its records are dropped
        kill(pid, SIGKILL);
        *timed_out = true;
        std::fprintf(stderr, "!! %s (%s keys): over --child-timeout %.0f s, killed\n", name.c_str(), key_type.c_str(),
                     timeout_s);
        deadline = 0;  // then read what it wrote before, up to the end the kill makes
        continue;
      }
    }
    const ssize_t r = read(fd[0], buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    text.append(buf, static_cast<std::size_t>(r));
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::int64_t kb = merge_lines(text, recs);  // what it measured, even if it failed later
  if (*timed_out) return kb;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "!! %s (%s keys): child failed (%s %d)\n", name.c_str(), key_type.c_str(),
                 WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  return kb;
}

std::uint64_t status_kb(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t len = std::strlen(field);
  while (std::getline(f, line))
    if (line.compare(0, len, field) == 0) return std::strtoull(line.c_str() + len + 1, nullptr, 10);
  return 0;
}

/// Peak resident memory a system adds by loading the keys: measured in a fresh process (this
/// program with --rss-child), so memory freed by earlier runs cannot hide it. -1 on failure.
std::int64_t rss_of(const std::string& kt, const std::string& name, std::uint64_t keys, unsigned threads,
                    std::uint64_t seed) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return -1;
  exe[len] = 0;
  const std::string cmd = std::string(exe) + " --rss-child " + kt + " " + name + " " + std::to_string(keys) + " " +
                          std::to_string(threads) + " " + std::to_string(seed);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  long long kb = -1;
  if (std::fscanf(p, "RSS %lld", &kb) != 1) kb = -1;
  pclose(p);
  return kb;
}

/// The child of rss_of: generates the keys, loads them into the system, prints
/// "RSS <peak kB minus kB before the system existed>".
template <class Keys>
int rss_child(const Keys& keys, const std::string& name, std::uint64_t loaded, unsigned threads) {
  const std::uint64_t base = status_kb("VmRSS:");
  {
    auto sys = make_sys<Keys>(name, threads);
    if (!sys) {
      std::printf("RSS -1\n");
      std::_Exit(0);
    }
    Pool<Keys> pool(sys.get(), threads);
    Tally t;
    pool.run([&](Worker<Keys>& w, unsigned i) {
      Tally x;
      x.found = w.load(keys, loaded * i / threads, loaded * (i + 1) / threads);
      return x;
    }, &t);
    std::printf("RSS %lld\n", static_cast<long long>(status_kb("VmHWM:")) - static_cast<long long>(base));
    std::fflush(stdout);
    std::_Exit(0);  // skip teardown: only the peak matters
  }
}

}  // namespace

std::vector<SystemInfo> duet::bench::hydralist::all_systems(bool) {
  std::vector<SystemInfo> s;
  s.push_back({"hydralist", true, "Hydralist (src/index/hydralist), default configuration"});
  s.push_back({"lit", true, "Duet's LIT CPU map (src/index/lit), integer keys only"});
#if DUET_BENCH_HAVE_TBB
  s.push_back({"tbb", true, "oneTBB concurrent_map (concurrent skip list)"});
#else
  s.push_back({"tbb", false, "oneTBB not found at build time"});
#endif
#if DUET_BENCH_HAVE_LIBCDS
  s.push_back({"libcds", true, "libcds SkipListMap, hazard pointers"});
#else
  s.push_back({"libcds", false, "libcds not found at build time"});
#endif
#if DUET_BENCH_HAVE_LIBCUCKOO
  s.push_back({"libcuckoo", true, "libcuckoo cuckoohash_map (unordered: A-D only, not a target peer)", false});
#else
  s.push_back({"libcuckoo", false, "libcuckoo not found at build time", false});
#endif
  return s;
}

#if !DUET_BENCH_HAVE_TBB
std::unique_ptr<System<IntKeys>> duet::bench::hydralist::make_tbb_int() { return nullptr; }
std::unique_ptr<System<StrKeys>> duet::bench::hydralist::make_tbb_str() { return nullptr; }
#endif
#if !DUET_BENCH_HAVE_LIBCUCKOO
std::unique_ptr<System<IntKeys>> duet::bench::hydralist::make_libcuckoo_int() { return nullptr; }
std::unique_ptr<System<StrKeys>> duet::bench::hydralist::make_libcuckoo_str() { return nullptr; }
#endif
#if !DUET_BENCH_HAVE_LIBCDS
std::unique_ptr<System<IntKeys>> duet::bench::hydralist::make_libcds_int(unsigned) { return nullptr; }
std::unique_ptr<System<StrKeys>> duet::bench::hydralist::make_libcds_str(unsigned) { return nullptr; }
#endif

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--rss-child") {
    const std::string kt = argv[2], name = argv[3];
    const std::uint64_t n = std::strtoull(argv[4], nullptr, 10), seed = std::strtoull(argv[6], nullptr, 10);
    const unsigned threads = static_cast<unsigned>(std::strtoul(argv[5], nullptr, 10));
    if (kt == "int") return rss_child(make_int_keys(n, seed), name, n, threads);
    return rss_child(make_str_keys(n, seed), name, n, threads);
  }
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  const std::string date = utc_now();
  std::vector<std::string> systems = o.systems;
  if (systems.empty())
    for (auto& s : all_systems(false))
      if (s.available && s.name != "lit") systems.push_back(s.name);  // lit: only when named
  for (auto& s : systems)
    for (auto& info : all_systems(false))
      if (info.name == s && !info.available) {
        std::fprintf(stderr, "system %s unavailable: %s\n", s.c_str(), info.description.c_str());
        return 2;
      }
  std::map<std::string, Record> recs;
  Json rss = Json::array();
  const unsigned max_threads = *std::max_element(o.threads.begin(), o.threads.end());

  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  // Work, identical for every system: C, B, A per distribution, then D, then E per distribution.
  struct Plan {
    std::deque<Work> works;                       // stable addresses for the phases
    std::vector<std::vector<Phase>> per_threads;  // default schedule: the phases at o.threads[i]
    std::vector<Phase> once;                      // --load-once: the whole schedule
    std::uint64_t pool_end = 0;                   // key numbers [0, pool_end) are used
  };
  auto scaled_ops = [&](std::uint64_t n, unsigned th) {
    return std::max<std::uint64_t>(1, n * th / max_threads);
  };
  auto make_plan = [&](std::uint64_t loaded) {
    Plan p;
    std::uint64_t pool = loaded;
    std::vector<const Work*> base;
    for (const char* w : {"c", "b", "a"})
      if (has(o.workloads, w))
        for (auto& d : o.dists) {
          p.works.push_back(make_work(w, d, loaded, o.ops, &pool, o.seed));
          base.push_back(&p.works.back());
        }
    if (!o.load_once) {
      if (has(o.workloads, "d")) {
        p.works.push_back(make_work("d", "latest", loaded, o.ops, &pool, o.seed));
        base.push_back(&p.works.back());
      }
      if (has(o.workloads, "e"))
        for (auto& d : o.dists) {
          p.works.push_back(make_work("e", d, loaded, o.ops_e, &pool, o.seed));
          base.push_back(&p.works.back());
        }
      for (unsigned th : o.threads) {
        std::vector<Phase> ph;
        for (const Work* w : base) ph.push_back({w, th, w->ops.size()});
        p.per_threads.push_back(std::move(ph));
      }
    } else {
      std::uint64_t stream = 0;
      for (unsigned rep = 0; rep < o.reps; ++rep)
        for (unsigned th : o.threads) {
          for (const Work* w : base) p.once.push_back({w, th, scaled_ops(o.ops, th)});
          // D and E insert: fresh arrays over every key inserted so far, inserting new ones.
          if (has(o.workloads, "d")) {
            p.works.push_back(make_work("d", "latest", pool, scaled_ops(o.ops, th), &pool, o.seed, ++stream));
            p.once.push_back({&p.works.back(), th, p.works.back().ops.size()});
          }
          if (has(o.workloads, "e"))
            for (auto& d : o.dists) {
              p.works.push_back(make_work("e", d, pool, scaled_ops(o.ops_e, th), &pool, o.seed, ++stream));
              p.once.push_back({&p.works.back(), th, p.works.back().ops.size()});
            }
        }
    }
    p.pool_end = pool;
    return p;
  };

  std::map<std::string, bool> rss_done;
  Json timeouts = Json::array();  // --child-timeout: the runs killed (their records are absent)  // --fork: one peak-RSS record per (key type, system)
  auto run_one = [&](const auto& keys, std::uint64_t loaded, const std::vector<Phase>& phases, bool do_load,
                     unsigned pool_threads, const std::string& kt, const std::string& s) {
    if (!o.fork_systems) {
      run_system(keys, loaded, phases, do_load, pool_threads, kt, s, &recs);
      return;
    }
    bool timed_out = false;
    const std::int64_t kb =
        run_system_forked(keys, loaded, phases, do_load, pool_threads, kt, s, o.child_timeout, &recs, &timed_out);
    if (timed_out) timeouts.push(kt + " " + s + " (" + std::to_string(pool_threads) + " threads)");
    if (kb < 0 || rss_done[kt + "|" + s]) return;
    rss_done[kt + "|" + s] = true;
    Json r = Json::object();
    r.set("key_type", kt);
    r.set("system", s);
    r.set("keys", loaded);
    r.set("load_threads", pool_threads);
    r.set("method", "forked benchmark process: VmHWM after the load minus VmRSS before the system existed");
    r.set("peak_rss_added_bytes", static_cast<std::uint64_t>(kb) * 1024);
    r.set("bytes_per_key", static_cast<double>(kb) * 1024 / static_cast<double>(loaded));
    rss.push(r);
    std::printf("#   peak RSS %s %s: %.1f MiB (%.1f B/key)\n", kt.c_str(), s.c_str(), kb / 1024.0,
                kb * 1024.0 / static_cast<double>(loaded));
  };

  auto bench_type = [&](auto& keys, std::uint64_t loaded, const Plan& plan, const std::string& kt) {
    const bool do_load = has(o.workloads, "load");
    if (o.load_once) {
      for (auto& s : systems) {
        const double t0 = now_s();
        run_one(keys, loaded, plan.once, do_load, max_threads, kt, s);
        std::printf("#   %s: loaded once by %u threads, then %u repetitions over %zu thread counts: %.1f s\n",
                    s.c_str(), max_threads, o.reps, o.threads.size(), now_s() - t0);
        std::fflush(stdout);
      }
    } else {
      for (unsigned rep = 0; rep < o.reps; ++rep)
        for (std::size_t i = 0; i < o.threads.size(); ++i)
          for (auto& s : systems) {
            const double t0 = now_s();
            run_one(keys, loaded, plan.per_threads[i], do_load, o.threads[i], kt, s);
            std::printf("#   rep %u, %u threads, %s: %.1f s\n", rep, o.threads[i], s.c_str(), now_s() - t0);
            std::fflush(stdout);
          }
    }
    if (o.rss && !o.fork_systems)
      for (auto& s : systems) {
        const std::int64_t kb = rss_of(kt, s, loaded, max_threads, o.seed);
        if (kb < 0 && s == "lit") continue;
        Json r = Json::object();
        r.set("key_type", kt);
        r.set("system", s);
        r.set("keys", loaded);
        r.set("load_threads", max_threads);
        r.set("method", "own process: VmHWM after the load minus VmRSS before the system existed");
        r.set("peak_rss_added_bytes", kb < 0 ? Json() : Json(static_cast<std::uint64_t>(kb) * 1024));
        r.set("bytes_per_key", kb < 0 ? Json() : Json(static_cast<double>(kb) * 1024 / static_cast<double>(loaded)));
        rss.push(r);
        std::printf("#   peak RSS %s %s: %.1f MiB (%.1f B/key)\n", kt.c_str(), s.c_str(), kb / 1024.0,
                    kb * 1024.0 / static_cast<double>(loaded));
      }
  };

  if (has(o.key_types, "int")) {
    const double g0 = now_s();
    const Plan plan = make_plan(o.keys_int);
    const IntKeys keys = make_int_keys(plan.pool_end, o.seed);
    std::printf("# int keys: %llu loaded, %llu generated, work generated in %.1f s\n", (unsigned long long)o.keys_int,
                (unsigned long long)plan.pool_end, now_s() - g0);
    std::fflush(stdout);
    bench_type(keys, o.keys_int, plan, "int");
  }
  if (has(o.key_types, "str") || !o.sweep.empty()) {
    const double g0 = now_s();
    const Plan plan = has(o.key_types, "str") ? make_plan(o.keys_str) : Plan{};
    const std::uint64_t most = std::max<std::uint64_t>(
        plan.pool_end, o.sweep.empty() ? 0 : *std::max_element(o.sweep.begin(), o.sweep.end()));
    const StrKeys keys = make_str_keys(most, o.seed);
    std::printf("# str keys: %llu loaded, %llu generated, work generated in %.1f s\n", (unsigned long long)o.keys_str,
                (unsigned long long)most, now_s() - g0);
    std::fflush(stdout);
    if (has(o.key_types, "str")) bench_type(keys, o.keys_str, plan, "str");
    // Key-set sweep: B (Zipf) with string keys at the most threads.
    for (std::uint64_t n : o.sweep) {
      std::uint64_t pool = n;
      const Work work = make_work("b", "zipf", n, o.ops, &pool, o.seed);
      const std::vector<Phase> phases{{&work, max_threads, work.ops.size()}};
      if (o.load_once) {  // one load per (size, system), then the repetitions on that map
        const std::vector<Phase> reps(o.reps, phases.front());
        for (auto& s : systems) run_one(keys, n, reps, false, max_threads, "str-sweep", s);
      } else {
        for (unsigned rep = 0; rep < o.reps; ++rep)
          for (auto& s : systems) run_one(keys, n, phases, false, max_threads, "str-sweep", s);
      }
    }
  }

  // ---- Table and result file ----
  Json records = Json::array();
  std::map<std::string, std::map<std::string, std::string>> table;  // row -> system -> cell
  for (auto& [id, r] : recs) {
    if (r.mops.empty()) continue;
    const Summary s = summarize(r.mops);
    Json j = Json::object();
    j.set("key_type", r.key_type);
    j.set("workload", r.workload);
    j.set("distribution", r.dist);
    j.set("system", r.system);
    j.set("threads", r.threads);
    j.set("keys", r.keys);
    j.set("ops", r.ops);
    j.set("ops_per_s_median", s.median * 1e6);
    j.set("ops_per_s_min", s.min * 1e6);
    j.set("ops_per_s_max", s.max * 1e6);
    std::vector<double> samples;
    for (double m : r.mops) samples.push_back(m * 1e6);
    j.set("ops_per_s_samples", Json::array_of(samples));
    j.set("found", r.found);
    j.set("wrong", r.wrong);
    j.set("scanned", r.scanned);
    if (r.has_stats) j.set("stats", r.stats);
    records.push(j);
    char cell[64];
    std::snprintf(cell, sizeof(cell), "%.2f [%.2f-%.2f]", s.median, s.min, s.max);
    char row[160];
    std::snprintf(row, sizeof(row), "%-9s %-4s %-7s %3u %10llu", r.key_type.c_str(), r.workload.c_str(),
                  r.dist.c_str(), r.threads, (unsigned long long)r.keys);
    table[row][r.system] = cell;
    if (r.wrong) std::printf("!! %s %s: %llu wrong values\n", row, r.system.c_str(), (unsigned long long)r.wrong);
  }
  std::printf("\n%-9s %-4s %-7s %3s %10s", "keys", "wl", "dist", "thr", "loaded");
  for (auto& s : systems) std::printf(" | %-22s", s.c_str());
  std::printf("\n");
  for (auto& [row, cells] : table) {
    std::printf("%s", row.c_str());
    for (auto& s : systems) std::printf(" | %-22s", cells.count(s) ? cells[s].c_str() : "-");
    std::printf("\n");
  }
  std::printf("(Mops/s: median [min-max] over %u repetitions)\n", o.reps);

  Json config = Json::object();
  config.set("keys_int", o.keys_int);
  config.set("keys_str", o.keys_str);
  config.set("ops_per_workload", o.ops);
  config.set("ops_per_workload_e", o.ops_e);
  config.set("threads", Json::array_of(o.threads));
  config.set("reps", o.reps);
  config.set("key_types", Json::array_of(o.key_types));
  config.set("workloads", Json::array_of(o.workloads));
  config.set("distributions", Json::array_of(o.dists));
  config.set("systems", Json::array_of(systems));
  config.set("zipf_theta", 0.99);
  config.set("scan_length", "uniform 1-100");
  config.set("sweep", Json::array_of(o.sweep));
  config.set("seed", o.seed);
  config.set("load_once", o.load_once);
  config.set("fork", o.fork_systems);
  config.set("child_timeout_s", o.child_timeout);
  config.set("order", o.load_once ? "per system: one load by the most threads; then per repetition, per thread count: "
                                    "C, B, A per distribution, D (latest), E per distribution, on that map; t threads "
                                    "run ops * t / most threads operations (E: ops_e * t / most); D and E arrays "
                                    "fresh per (repetition, threads)"
                                  : "per (rep, threads, system): load, then C, B, A per distribution, D (latest), E "
                                    "per distribution");
  config.set("string_keys", "synthetic domain@user e-mails, distinct, 20 B average, 25 B max");
  config.set("command", [&] {
    std::string c = "build/bench/duet_bench_hydralist";
    for (int i = 1; i < argc; ++i) c += std::string(" ") + argv[i];
    return c;
  }());
  Json doc = result_document("hydralist", "cpu", commit_id(DUET_SOURCE_DIR), date, config, records);
  doc.set("peak_rss", rss);
  doc.set("timed_out", timeouts);
  const std::string path = o.out.empty() ? std::string(DUET_SOURCE_DIR) + "/bench/results/hydralist/hydralist-" +
                                               utc_now(true) + ".json"
                                         : o.out;
  std::string err;
  if (!write_result_file(path, doc, &err)) {
    std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), err.c_str());
    return 1;
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}
