#include "driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>

#include "../common/process_stats.hpp"

namespace duet::bench::lit {
namespace {

using Clock = std::chrono::steady_clock;

std::string theta_string(double t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

/// Inserts the prefill with `threads` threads, each attaching its own worker and inserting a
/// contiguous slice. Returns "" or an error message (a refused attach, or keys not all new).
std::string prefill(System* sys, const Prefill& p, unsigned threads) {
  std::vector<std::thread> ts;
  std::vector<std::uint64_t> added(threads, 0);
  std::vector<std::string> errors(threads);
  const std::uint64_t n = p.size();
  for (unsigned t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      std::unique_ptr<Worker> w;
      duet::Status s = sys->attach(&w);
      if (!s.ok()) {
        errors[t] = "attach: " + s.to_string();
        return;
      }
      added[t] = w->prefill(p, n * t / threads, n * (t + 1) / threads);
    });
  }
  for (std::thread& t : ts) t.join();
  std::uint64_t total = 0;
  for (unsigned t = 0; t < threads; ++t) {
    if (!errors[t].empty()) return "prefill: " + errors[t];
    total += added[t];
  }
  if (total != n)
    return "prefill: " + std::to_string(total) + " of " + std::to_string(n) + " distinct keys were reported new";
  return "";
}

/// Per-thread Zipfian traces, kept across runs.
struct Streams {
  std::vector<std::vector<std::uint64_t>> traces;
};

/// One timed run: every thread attaches, draws its Zipfian trace, waits for the common start,
/// runs until the stop flag, and reports its tally and stop time. Returns Mops/s, or a negative
/// value with *error set.
double timed_run(System* sys, const OpSource& base, double theta, unsigned run, const Options& o, Streams* st, Tally* sum,
                 std::string* error) {
  const unsigned n = o.threads;
  st->traces.resize(n);
  std::vector<Tally> tallies(n);
  std::vector<Clock::time_point> ends(n);
  std::vector<std::string> errors(n);
  std::atomic<unsigned> ready{0};
  std::atomic<bool> go{false}, stop{false};
  LoopParams lp;
  lp.range_length = o.range_length;
  lp.check_every = o.check_every;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < n; ++t) {
    ts.emplace_back([&, t] {
      std::unique_ptr<Worker> w;
      duet::Status s = sys->attach(&w);
      if (!s.ok()) errors[t] = "attach: " + s.to_string();
      OpSource src = base;
      src.seed = stream_seed(o.seed, base.workload, base.key_range, theta, run, t);
      if (is_zipfian(base.workload)) {
        zipf_trace(base.key_range, theta, src.seed, o.zipf_trace, &st->traces[t]);
        src.trace = st->traces[t].data();
        src.trace_size = st->traces[t].size();
      }
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      if (w) tallies[t] = w->run(src, lp, stop);
      ends[t] = Clock::now();
    });
  }
  while (ready.load(std::memory_order_acquire) < n) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop.store(true, std::memory_order_relaxed);
  for (std::thread& t : ts) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) {
      *error = e;
      return -1;
    }
  Tally all;
  Clock::time_point last = t0;
  for (unsigned t = 0; t < n; ++t) {
    all.add(tallies[t]);
    last = std::max(last, ends[t]);
  }
  sum->add(all);
  const double secs = std::chrono::duration<double>(last - t0).count();
  return secs > 0 ? static_cast<double>(all.ops) / secs / 1e6 : 0;
}

/// A point: workload and theta (Zipfian only) at one key range.
struct Point {
  WorkloadKind workload;
  std::optional<double> theta;
};

}  // namespace

std::string Record::name() const {
  std::string n = system + "/" + workload_name(workload) + "/k" + key_label(key_range);
  if (theta) n += "/theta" + theta_string(*theta);
  return n;
}

Json Record::to_json() const {
  Json j = Json::object();
  j.set("name", name());
  j.set("system", system);
  j.set("workload", workload_name(workload));
  j.set("key_range", key_range);
  j.set("theta", theta ? Json(*theta) : Json());
  j.set("threads", threads);
  j.set("mops", Json::array_of(mops));
  j.set("mops_median", summary.median);
  j.set("mops_min", summary.min);
  j.set("mops_max", summary.max);
  j.set("ops", tally.ops);
  auto frac = [](std::uint64_t a, std::uint64_t b) { return b ? Json(static_cast<double>(a) / b) : Json(); };
  j.set("get_hit_fraction", frac(tally.get_hits, tally.gets));
  j.set("insert_added_fraction", frac(tally.inserts_done, tally.inserts));
  j.set("remove_removed_fraction", frac(tally.removes_done, tally.removes));
  j.set("range_pairs_mean", frac(tally.range_pairs, tally.ranges));
  j.set("ranges", tally.ranges);
  j.set("ranges_checked", tally.ranges_checked);
  j.set("wrong", tally.wrong);
  j.set("errors", tally.errors);
  j.set("verified", ok());
  j.set("prefill_s", prefill_s);
  j.set("structure", structure);
  if (!error.empty()) j.set("error", error);
  return j;
}

void run_sweep(const Options& o, std::vector<Record>* records) {
  // Key ranges in ascending order, each with the points that use it.
  std::vector<std::uint64_t> ranges;
  for (WorkloadKind w : o.workloads)
    for (std::uint64_t k : is_zipfian(w) ? o.zipf_keys : o.keys)
      if (std::find(ranges.begin(), ranges.end(), k) == ranges.end()) ranges.push_back(k);
  std::sort(ranges.begin(), ranges.end());
  auto points_of = [&](std::uint64_t k) {
    std::vector<Point> ps;
    for (WorkloadKind w : o.workloads) {
      const auto& ks = is_zipfian(w) ? o.zipf_keys : o.keys;
      if (std::find(ks.begin(), ks.end(), k) == ks.end()) continue;
      if (is_zipfian(w))
        for (double t : o.thetas) ps.push_back({w, t});
      else
        ps.push_back({w, std::nullopt});
    }
    return ps;
  };
  std::size_t total = 0, done = 0;
  for (std::uint64_t k : ranges) total += points_of(k).size() * o.systems.size();

  Streams streams;
  const auto sweep_start = Clock::now();
  for (std::uint64_t k : ranges) {
    const Prefill pre(k, o.seed ^ k);
    const std::vector<Point> points = points_of(k);
    for (const std::string& name : o.systems) {
      SystemSpec spec;
      spec.key_range = k;
      spec.threads = o.threads;
      spec.lit_buckets = o.lit_buckets;
      std::unique_ptr<System> sys;
      const auto t0 = Clock::now();
      duet::Status s = make_system(name, spec, &sys);
      std::string setup_error = s.ok() ? prefill(sys.get(), pre, o.threads) : "create: " + s.to_string();
      const double prefill_s = std::chrono::duration<double>(Clock::now() - t0).count();
      std::fprintf(stderr, "%s k=%s: built and prefilled %llu keys in %.1f s%s%s\n", name.c_str(),
                   key_label(k).c_str(), static_cast<unsigned long long>(pre.size()), prefill_s,
                   setup_error.empty() ? "" : ", FAILED: ", setup_error.c_str());
      for (const Point& pt : points) {
        Record rec;
        rec.system = name;
        rec.workload = pt.workload;
        rec.key_range = k;
        rec.theta = pt.theta;
        rec.threads = o.threads;
        rec.prefill_s = prefill_s;
        rec.error = setup_error;
        OpSource base;
        base.workload = pt.workload;
        base.key_range = k;
        for (unsigned r = 0; r < o.runs && rec.error.empty(); ++r) {
          const double m = timed_run(sys.get(), base, pt.theta.value_or(0), r, o, &streams, &rec.tally, &rec.error);
          if (rec.error.empty()) rec.mops.push_back(m);
        }
        rec.summary = summarize(rec.mops);
        if (sys && setup_error.empty()) rec.structure = sys->stats();
        ++done;
        std::fprintf(stderr, "[%zu/%zu %.0f s] %s: %.3f Mops/s (min %.3f, max %.3f)%s%s%s\n", done, total,
                     std::chrono::duration<double>(Clock::now() - sweep_start).count(), rec.name().c_str(),
                     rec.summary.median, rec.summary.min, rec.summary.max,
                     rec.tally.wrong ? (" WRONG: " + std::to_string(rec.tally.wrong)).c_str() : "",
                     rec.tally.errors ? (" REFUSED: " + std::to_string(rec.tally.errors)).c_str() : "",
                     rec.error.empty() ? "" : (" ERROR: " + rec.error).c_str());
        records->push_back(std::move(rec));
      }
      const auto t1 = Clock::now();
      sys.reset();  // free this map before the next is built
      std::fprintf(stderr, "  %s k=%s freed in %.1f s; peak RSS so far %.2f GiB\n", name.c_str(),
                   key_label(k).c_str(), std::chrono::duration<double>(Clock::now() - t1).count(), peak_rss_gib());
    }
  }
}

}  // namespace duet::bench::lit
