#include "experiments.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <sstream>

#include "../common/results.hpp"
#include "driver.hpp"
#include "progress.hpp"
#include "systems.hpp"

namespace duet::bench::kv {
namespace {

/// Prefill batches: large, as a bulk load would be.
constexpr std::size_t kPrefillBatch = 8192;
/// Model change: a window is back to steady state when its mean is within this factor of the
/// steady-state mean, and stays so for kSteadyWindows windows.
constexpr double kSteadyFactor = 1.2;
constexpr std::size_t kSteadyWindows = 5;

/// The shortest decimal form of x ("0.99", "1.3e-05", "256").
std::string num(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

/// "ycsb-b-zipfian0.99" (with "-v256" when values are not 8 bytes).
std::string workload_tag(const Point& p) {
  std::string t = p.workload.name + "-" + distribution_name(p.distribution);
  if (p.distribution != Distribution::kUniform) t += num(p.theta);
  if (p.value_bytes != 8) t += "-v" + std::to_string(p.value_bytes);
  return t;
}

/// Statistics of one slice (paths x operation classes) over the repeats: medians. ops is wall
/// clock (the slice's share of requests / wall time); inside is the rate inside the store.
struct Slice {
  std::uint64_t count = 0;  ///< requests in the slice, all repeats together
  double requests = 0, share = 0, ops = 0, ops_min = 0, ops_max = 0, inside = 0, inside_min = 0, inside_max = 0,
         mean_us = 0, p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

Slice slice_of(const std::vector<PhaseResult>& runs, unsigned path_mask, unsigned class_mask) {
  std::vector<double> req, share, ops, inside, mean, p50, p99, p999, mx;
  Slice s;
  for (const PhaseResult& r : runs) {
    const LatencyHistogram h = r.merged(path_mask, class_mask);
    s.count += h.count();
    const double sh = r.requests ? static_cast<double>(h.count()) / static_cast<double>(r.requests) : 0.0;
    req.push_back(static_cast<double>(h.count()));
    share.push_back(sh);
    ops.push_back(r.ops_per_s_wall * sh);
    inside.push_back(r.ops_per_s * sh);
    mean.push_back(h.mean_ns() / 1e3);
    p50.push_back(h.quantile_ns(0.5) / 1e3);
    p99.push_back(h.quantile_ns(0.99) / 1e3);
    p999.push_back(h.quantile_ns(0.999) / 1e3);
    mx.push_back(static_cast<double>(h.max_ns()) / 1e3);
  }
  const Summary o = summarize(ops);
  const Summary in = summarize(inside);
  s.inside = in.median, s.inside_min = in.min, s.inside_max = in.max;
  s.requests = summarize(req).median;
  s.share = summarize(share).median;
  s.ops = o.median, s.ops_min = o.min, s.ops_max = o.max;
  s.mean_us = summarize(mean).median;
  s.p50_us = summarize(p50).median;
  s.p99_us = summarize(p99).median;
  s.p999_us = summarize(p999).median;
  s.max_us = summarize(mx).median;
  return s;
}

/// Rounds to 3 decimals (latencies in µs) so result files stay readable.
double r3(double x) { return std::round(x * 1000.0) / 1000.0; }

/// Fields every record of a point carries.
Json point_record(const Options& o, const std::string& system, bool duet_system, const Point& p,
                  const std::string& op, const std::string& path, const std::string& kind) {
  Json j = Json::object();
  j.set("kind", kind);
  j.set("name", system + "/" + workload_tag(p) + (p.sweep.empty() ? "" : "/" + p.label) + "/" + op + "/" + path);
  j.set("system", system);
  j.set("workload", p.workload.name);
  j.set("op", op);
  j.set("path", path);
  j.set("distribution", distribution_name(p.distribution));
  j.set("theta", p.theta);
  j.set("read_percent", p.workload.read * 100.0);
  j.set("value_bytes", static_cast<std::uint64_t>(p.value_bytes));
  // The router threshold means something for kvcg only; a router_only sweep measures the
  // other systems once, as references, without one.
  j.set("threshold", is_learned_system(system) ? Json(p.threshold) : Json());
  j.set("sweep", p.sweep.empty() ? Json() : Json(p.sweep));
  j.set("batch", static_cast<std::uint64_t>(o.batch));
  j.set("threads", o.threads);
  j.set("key_range", o.key_range);
  j.set("prefill", o.prefill);
  j.set("latency", duet_system ? "batch" : "per-element");
  return j;
}

void set_slice(Json* j, const Slice& s, unsigned reps) {
  j->set("reps", reps);
  j->set("requests", std::round(s.requests));
  j->set("share", s.share);
  j->set("ops_per_s", std::round(s.ops));  // wall clock
  j->set("ops_per_s_min", std::round(s.ops_min));
  j->set("ops_per_s_max", std::round(s.ops_max));
  j->set("ops_per_s_inside_store", std::round(s.inside));
  j->set("ops_per_s_inside_store_min", std::round(s.inside_min));
  j->set("ops_per_s_inside_store_max", std::round(s.inside_max));
  j->set("mean_us", r3(s.mean_us));
  j->set("p50_us", r3(s.p50_us));
  j->set("p99_us", r3(s.p99_us));
  j->set("p999_us", r3(s.p999_us));
  j->set("max_us", r3(s.max_us));
}

TableRow row_of(const std::string& system, const std::string& point, const std::string& path, const Slice& s,
                const std::string& note) {
  TableRow r;
  r.system = system, r.point = point, r.path = path;
  r.ops_per_s = s.ops, r.ops_per_s_inside = s.inside, r.mean_us = s.mean_us, r.p50_us = s.p50_us, r.p99_us = s.p99_us, r.p999_us = s.p999_us;
  r.share = s.share, r.note = note;
  return r;
}

/// Turns the repeats of one system at one point into records and table rows.
void emit_point(const Options& o, const std::string& system, bool duet_system, const Point& p,
                const std::vector<PhaseResult>& runs, duet::KvSpace* space, RunOutput* out) {
  struct PathSel {
    const char* name;
    unsigned mask;
  };
  struct ClassSel {
    const char* name;
    unsigned mask;
  };
  std::vector<PathSel> paths = {{"all", 7}};
  if (duet_system) paths.insert(paths.end(), {{"hot", 1u << kHotPath}, {"cold", 1u << kColdPath}});
  const ClassSel classes[] = {{"all", 3}, {"read", 1u << kReadOps}, {"write", 1u << kWriteOps}};
  std::uint64_t errors = 0, wrong = 0, gets = 0, found = 0;
  std::string first_error;
  for (const PhaseResult& r : runs) {
    if (r.errors && first_error.empty()) first_error = r.first_error;
    errors += r.errors, wrong += r.wrong_values, gets += r.gets, found += r.gets_found;
  }
  std::vector<double> wall;
  bool replayed = true;
  for (const PhaseResult& r : runs) wall.push_back(r.ops_per_s_wall), replayed = replayed && r.replayed;
  const bool verified = errors == 0 && wrong == 0;
  if (!verified) {
    out->ok = false;
    out->notes.push_back(system + " " + p.label + ": " + std::to_string(errors) + " failed requests, " +
                         std::to_string(wrong) + " wrong values" +
                         (first_error.empty() ? "" : " (" + first_error + ")"));
  }
  duet::KvStats st;
  if (space) st = space->stats();
  std::string note;
  if (gets) {
    char hit[32];
    std::snprintf(hit, sizeof hit, "GET hits %.2f", static_cast<double>(found) / static_cast<double>(gets));
    note = hit;
  }
  if (is_learned_system(system)) note += (note.empty() ? "" : ", ") + std::to_string(st.hot_bins) + " hot bins";
  if (system == "kvcg-auto") note += ", routing " + st.router_choice;
  if (!verified) note += note.empty() ? "UNVERIFIED" : ", UNVERIFIED";

  for (const PathSel& ps : paths) {
    for (const ClassSel& cs : classes) {
      const Slice s = slice_of(runs, ps.mask, cs.mask);
      const bool total = std::string(ps.name) == "all" && std::string(cs.name) == "all";
      if (!total && s.count == 0) continue;
      Json j = point_record(o, system, duet_system, p, cs.name, ps.name, "summary");
      // Systems a router_only sweep does not change are measured once, as references.
      if (p.router_only && !is_learned_system(system)) j.set("reference", true);
      else if (!p.sweep.empty()) j.set("sweep_value", p.value);
      set_slice(&j, s, static_cast<unsigned>(runs.size()));
      if (total) {
        j.set("ops_per_s_wall", std::round(summarize(wall).median));
        j.set("identical_requests", replayed);
        j.set("get_found_fraction", gets ? static_cast<double>(found) / static_cast<double>(gets) : 0.0);
        j.set("errors", errors);
        j.set("wrong_values", wrong);
        j.set("first_error", first_error.empty() ? Json() : Json(first_error));
        j.set("verified", verified);
        if (space) {
          j.set("hot_bins", st.hot_bins);
          j.set("hot_entries", st.hot_entries);
          j.set("model_switches", st.model_switches);
          j.set("last_switch_us", st.last_switch_us);
          j.set("store_backend", st.store_backend);
          j.set("router_model", st.router_model);
          j.set("router_choice", st.router_choice);
          j.set("router_probes", st.router_probes);
          j.set("router_choice_changes", st.router_choice_changes);
          j.set("learned_us_per_request", st.learned_us_per_request);
          j.set("all_cold_us_per_request", st.all_cold_us_per_request);
          j.set("all_hot_us_per_request", st.all_hot_us_per_request);
        }
      }
      if (duet_system && total) {
        const Slice hot = slice_of(runs, 1u << kHotPath, 3);
        j.set("hot_request_fraction", hot.share);
      }
      out->records.push(std::move(j));
      if (std::string(cs.name) == "all") out->rows.push_back(row_of(system, p.label, ps.name, s, total ? note : ""));
    }
  }
}

/// The keyspace's device, as the result file wants it ("cpu" or the GPU's name).
void note_device(const KvSystem& sys, RunOutput* out) {
  const std::string d = sys.device_description();
  if (d.rfind("gpu", 0) == 0) {
    out->device_tag = "gpu";
    const auto colon = d.find(':');
    std::string name = colon == std::string::npos ? d : d.substr(colon + 1);
    name.erase(0, name.find_first_not_of(' '));
    out->device = name.empty() ? "gpu" : name;
  }
}

SystemSpec spec_for(const Options& o, const Point& p, bool auto_switch) {
  SystemSpec spec;
  // Room for the prefill and the inserts and new keys of updates a run may add.
  spec.expected_keys = o.prefill + o.prefill / 4 + 1024;
  spec.device = o.device;
  spec.threshold = p.threshold;
  spec.train_requests = o.warmup;
  spec.auto_switch = auto_switch;
  spec.orchestrators = o.orchestrators;
  spec.max_aggregate = o.max_aggregate;
  spec.switch_interval_ms = o.switch_interval_ms;
  return spec;
}

PhaseSpec phase_for(const Options& o, const Point& p, const std::string& label, std::uint64_t seed) {
  PhaseSpec s;
  s.label = label;
  s.workload = p.workload;
  s.distribution = p.distribution;
  s.theta = p.theta;
  s.key_range = o.key_range;
  s.batch = o.batch;
  s.pipeline = o.pipeline;
  s.trace = o.trace;
  s.value_bytes = p.value_bytes;
  s.threads = o.threads;
  s.seed = seed;
  s.ops = o.ops;
  s.seconds = o.seconds;
  return s;
}

/// Builds system `name` for point p and prefills it.
bool open_and_prefill(const Options& o, const std::string& name, const Point& p, bool auto_switch,
                      std::unique_ptr<KvSystem>* sys, std::unique_ptr<KeyState>* state, RunOutput* out,
                      std::string* error) {
  sys->reset();  // free the previous one first
  duet::Status s = make_kv_system(name, spec_for(o, p, auto_switch), sys);
  if (!s.ok()) {
    *error = "cannot open " + name + ": " + s.to_string();
    return false;
  }
  if ((*sys)->space()) note_device(**sys, out);
  *state = std::make_unique<KeyState>();
  s = prefill(**sys, state->get(), o.prefill, p.value_bytes, o.threads, kPrefillBatch,
              "prefill " + name + " " + human_count(static_cast<double>(o.prefill)) + " keys");
  if (!s.ok()) {
    *error = "prefill of " + name + " failed: " + s.to_string();
    return false;
  }
  return true;
}

/// Runs every point on one system (all experiments but model-change).
bool run_system(const Options& o, const std::string& name, const std::vector<Point>& points, RunOutput* out,
                std::string* error) {
  const SystemInfo* info = find_kv_system(name);
  const bool kvcg = is_learned_system(name);
  std::unique_ptr<KvSystem> sys;
  std::unique_ptr<KeyState> state;
  std::size_t current_vb = 0;
  bool reference_done = false;
  for (std::size_t pi = 0; pi < points.size(); ++pi) {
    const Point& p = points[pi];
    if (p.router_only && !kvcg && reference_done) continue;
    if (!sys || p.value_bytes != current_vb) {
      if (!open_and_prefill(o, name, p, name == "kvcg-auto", &sys, &state, out, error)) return false;
      current_vb = p.value_bytes;
    }
    duet::KvSpace* space = sys->space();
    const std::string label = p.router_only && !kvcg ? std::string("reference") : p.label;
    if (kvcg) {
      // A switch first, so that the shadow model starts afresh on this point's requests.
      duet::Status s = space->router().set_threshold(p.threshold);
      if (!s.ok()) out->notes.push_back(name + " " + p.label + ": set_threshold: " + s.to_string());
      s = space->router().switch_model();
      if (!s.ok()) out->notes.push_back(name + " " + p.label + ": switch_model before warm-up: " + s.to_string());
    }
    if (o.warmup) {
      PhaseSpec w = phase_for(o, p, "warm-up " + name + " " + label, derive_seed(o.seed, 1'000'000 + pi));
      w.ops = o.warmup;
      w.record = false;
      const PhaseResult wr = run_phase(*sys, state.get(), w);
      if (wr.errors) {
        out->ok = false;
        out->notes.push_back(name + " " + p.label + ": warm-up: " + std::to_string(wr.errors) +
                             " failed requests (" + wr.first_error + ")");
      }
    }
    if (kvcg) {
      const duet::Status s = space->router().switch_model();  // install the model trained on the warm-up
      if (!s.ok()) out->notes.push_back(name + " " + p.label + ": switch_model: " + s.to_string());
    }
    std::vector<PhaseResult> runs;
    for (unsigned r = 0; r < o.repeat; ++r) {
      std::string l = name + " " + label;
      if (o.repeat > 1) l += " run " + std::to_string(r + 1) + "/" + std::to_string(o.repeat);
      runs.push_back(run_phase(*sys, state.get(), phase_for(o, p, l, derive_seed(o.seed, pi * 1000 + r))));
      const PhaseResult& last = runs.back();
      std::fprintf(stderr, "  %s: %s req/s wall clock (%s req/s inside the store), %s requests\n", l.c_str(),
                   human_count(last.ops_per_s_wall).c_str(), human_count(last.ops_per_s).c_str(),
                   human_count(static_cast<double>(last.requests)).c_str());
    }
    Point shown = p;
    shown.label = label;
    emit_point(o, name, info->duet, shown, runs, space, out);
    if (p.router_only && !kvcg) reference_done = true;
  }
  return true;
}

double median_of(std::vector<double> xs) { return summarize(std::move(xs)).median; }

/// Model change (KVCG Fig. 2.7): kvcg with a model trained on shifted key popularity, then
/// the popularity shifts back; the shadow model retrains and is installed automatically.
bool run_model_change(const Options& o, const Point& p, RunOutput* out, std::string* error) {
  const std::string name = "kvcg";
  std::unique_ptr<KvSystem> sys;
  std::unique_ptr<KeyState> state;
  if (!open_and_prefill(o, name, p, true, &sys, &state, out, error)) return false;
  duet::KvSpace* space = sys->space();
  // The hottest ranks move within the prefilled keys, so that hot keys exist in both phases.
  const std::uint64_t span = o.prefill >= 2 ? o.prefill : o.key_range;
  const std::uint64_t old_shift = span / 2;
  if (o.warmup) {
    PhaseSpec w = phase_for(o, p, "warm-up kvcg on shifted keys", derive_seed(o.seed, 2'000'000));
    w.ops = o.warmup;
    w.record = false;
    w.initial_shift = old_shift;
    w.shift_span = span;
    run_phase(*sys, state.get(), w);
  }
  duet::Status s = space->router().switch_model();
  if (!s.ok()) out->notes.push_back("model-change: switch_model: " + s.to_string());

  PhaseSpec t = phase_for(o, p, "kvcg model change", derive_seed(o.seed, 3'000'000));
  t.ops = 0;
  t.timeline = true;
  t.window_ms = o.window_ms;
  t.pre_shift_s = o.pre_shift_s;
  t.initial_shift = old_shift;
  t.shift = 0;
  t.shift_span = span;
  const PhaseResult r = run_phase(*sys, state.get(), t);
  Point shown = p;
  shown.label = "model-change";
  emit_point(o, name, true, shown, {r}, space, out);

  // Windows.
  const auto t_of = [&](std::size_t w) { return r.first_window_t_s + static_cast<double>(w) * r.window_s; };
  for (std::size_t w = 0; w < r.windows.size(); ++w) {
    const Window& win = r.windows[w];
    const std::pair<const char*, const LatencyHistogram*> paths[] = {
        {"all", &win.all}, {"hot", &win.hot}, {"cold", &win.cold}};
    for (const auto& [path, h] : paths) {
      if (h->count() == 0) continue;
      Json j = point_record(o, name, true, shown, "all", path, "window");
      j.set("name", name + "/model-change/" + path + "/w" + std::to_string(w));
      j.set("t_s", r3(t_of(w)));
      j.set("window_s", r.window_s);
      j.set("requests", h->count());
      j.set("ops_per_s", std::round(static_cast<double>(h->count()) / r.window_s));
      j.set("mean_us", r3(h->mean_ns() / 1e3));
      j.set("p50_us", r3(h->quantile_ns(0.5) / 1e3));
      j.set("p99_us", r3(h->quantile_ns(0.99) / 1e3));
      out->records.push(std::move(j));
    }
  }
  // Events: the shift, and every model switch seen in the sampled statistics.
  {
    Json j = point_record(o, name, true, shown, "all", "all", "event");
    j.set("name", name + "/model-change/event/shift");
    j.set("event", "popularity_shift");
    j.set("t_s", 0.0);
    out->records.push(std::move(j));
  }
  double first_switch_t = std::numeric_limits<double>::quiet_NaN();
  std::uint64_t seen = r.samples.empty() ? 0 : r.samples.front().model_switches;
  int k = 0;
  char line[256];
  for (const StatSample& sm : r.samples) {
    if (sm.model_switches <= seen) continue;
    seen = sm.model_switches;
    const double started = sm.t_s - static_cast<double>(sm.last_switch_us) * 1e-6;
    Json j = point_record(o, name, true, shown, "all", "all", "event");
    j.set("name", name + "/model-change/event/switch" + std::to_string(++k));
    j.set("event", "model_switch");
    j.set("t_s", r3(sm.t_s));
    j.set("started_t_s", r3(started));
    j.set("switch_us", sm.last_switch_us);
    j.set("hot_bins", sm.hot_bins);
    j.set("hot_entries", sm.hot_entries);
    out->records.push(std::move(j));
    std::snprintf(line, sizeof line, "model switch %d seen at t = %.3f s (took %.1f ms), %llu hot bins", k, sm.t_s,
                  static_cast<double>(sm.last_switch_us) / 1e3, static_cast<unsigned long long>(sm.hot_bins));
    out->notes.push_back(line);
    if (std::isnan(first_switch_t) && sm.t_s > 0) first_switch_t = sm.t_s;
  }
  if (std::isnan(first_switch_t))
    out->notes.push_back("no model switch after the shift within " + num(o.seconds) +
                         " s: the shadow model needs " + human_count(static_cast<double>(o.warmup)) +
                         " requests (--warmup) and " + std::to_string(o.switch_interval_ms) +
                         " ms since the last switch; try a longer --seconds");

  // Recovery: when each path's windowed mean latency is back at its steady state.
  for (const char* path : {"all", "hot", "cold"}) {
    std::vector<double> mean(r.windows.size(), std::numeric_limits<double>::quiet_NaN());
    for (std::size_t w = 0; w < r.windows.size(); ++w) {
      const Window& win = r.windows[w];
      const LatencyHistogram& h = path[0] == 'a' ? win.all : path[0] == 'h' ? win.hot : win.cold;
      if (h.count()) mean[w] = h.mean_ns() / 1e3;
    }
    std::vector<double> tail, before;
    const std::size_t tail_from = r.windows.size() - std::max<std::size_t>(3, r.windows.size() / 4);
    for (std::size_t w = 0; w < mean.size(); ++w) {
      if (std::isnan(mean[w])) continue;
      if (w >= tail_from) tail.push_back(mean[w]);
      if (t_of(w) < 0) before.push_back(mean[w]);
    }
    if (tail.empty()) continue;
    const double steady = median_of(tail);
    double peak = 0, peak_t = 0, recovered = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t w = 0; w < mean.size(); ++w)
      if (!std::isnan(mean[w]) && t_of(w) >= 0 && mean[w] > peak) peak = mean[w], peak_t = t_of(w);
    if (!std::isnan(first_switch_t)) {
      for (std::size_t w = 0; w < mean.size() && std::isnan(recovered); ++w) {
        if (t_of(w) < first_switch_t - 1e-9 || std::isnan(mean[w])) continue;
        bool ok = true;
        for (std::size_t v = w; v < std::min(mean.size(), w + kSteadyWindows) && ok; ++v)
          ok = std::isnan(mean[v]) || mean[v] <= kSteadyFactor * steady;
        if (ok) recovered = t_of(w);
      }
    }
    Json j = point_record(o, name, true, shown, "all", path, "recovery");
    j.set("name", name + "/model-change/recovery/" + path);
    j.set("steady_mean_us", r3(steady));
    j.set("before_shift_mean_us", before.empty() ? Json() : Json(r3(median_of(before))));
    j.set("peak_mean_us", r3(peak));
    j.set("peak_t_s", r3(peak_t));
    j.set("first_switch_t_s", std::isnan(first_switch_t) ? Json() : Json(r3(first_switch_t)));
    j.set("steady_again_t_s", std::isnan(recovered) ? Json() : Json(r3(recovered)));
    j.set("steady_factor", kSteadyFactor);
    j.set("steady_windows", static_cast<std::uint64_t>(kSteadyWindows));
    out->records.push(std::move(j));
    std::snprintf(line, sizeof line,
                  "%-4s latency: %.1f us before the shift, peak %.1f us at t = %.2f s, steady %.1f us", path,
                  before.empty() ? 0.0 : median_of(before), peak, peak_t, steady);
    std::string l = line;
    if (!std::isnan(recovered)) {
      std::snprintf(line, sizeof line, ", back within %.1fx of it at t = %.2f s (%.2f s after the switch)",
                    kSteadyFactor, recovered, recovered - first_switch_t);
      l += line;
    }
    out->notes.push_back(l);
  }
  // A coarse view of the series for the terminal.
  const std::size_t step = std::max<std::size_t>(1, r.windows.size() / 16);
  out->notes.push_back("   t (s)   req/s     all us     hot us    cold us");
  for (std::size_t w = 0; w < r.windows.size(); w += step) {
    const Window& win = r.windows[w];
    auto m = [](const LatencyHistogram& h) { return h.count() ? h.mean_ns() / 1e3 : 0.0; };
    std::snprintf(line, sizeof line, "  %6.2f  %7s  %9.1f  %9.1f  %9.1f", t_of(w),
                  human_count(static_cast<double>(win.all.count()) / r.window_s).c_str(), m(win.all), m(win.hot),
                  m(win.cold));
    out->notes.push_back(line);
  }
  return true;
}

}  // namespace

std::vector<Point> plan_points(const Options& o) {
  Point base;
  base.workload = o.workload();
  base.distribution = o.distribution_for(base.workload);
  base.theta = o.theta_value();
  base.value_bytes = o.value_bytes;
  base.threshold = o.threshold.value_or(duet::RouterConfig{}.threshold);
  std::vector<Point> pts;
  switch (o.experiment) {
    case Experiment::kNone:
    case Experiment::kModelChange:
      base.label = workload_tag(base);
      pts.push_back(base);
      break;
    case Experiment::kThetaSweep:
      for (double t : o.points) {
        Point p = base;
        p.theta = t, p.sweep = "theta", p.value = t, p.label = "theta=" + num(t);
        pts.push_back(p);
      }
      break;
    case Experiment::kHotFractionSweep:
      for (double t : o.points) {
        Point p = base;
        p.threshold = t, p.sweep = "threshold", p.value = t, p.label = "threshold=" + num(t), p.router_only = true;
        pts.push_back(p);
      }
      break;
    case Experiment::kRwSweep:
      for (double r : o.points) {
        Point p = base;
        p.workload = read_update_mix(r);
        p.distribution = o.distribution.value_or(Distribution::kZipfian);
        p.sweep = "read_percent", p.value = r, p.label = "read=" + num(r) + "%";
        pts.push_back(p);
      }
      break;
    case Experiment::kValueSizeSweep:
      for (double v : o.points) {
        Point p = base;
        p.value_bytes = static_cast<std::size_t>(v);
        p.sweep = "value_bytes", p.value = v, p.label = "value=" + num(v) + "B";
        pts.push_back(p);
      }
      break;
  }
  return pts;
}

bool run_experiment(const Options& o, RunOutput* out, std::string* error) {
  const std::vector<Point> points = plan_points(o);
  if (o.experiment == Experiment::kModelChange) {
    if (std::find(o.systems.begin(), o.systems.end(), "kvcg") == o.systems.end()) {
      *error = "model-change measures kvcg; add it to --systems";
      return false;
    }
    for (const std::string& s : o.systems)
      if (s != "kvcg") std::fprintf(stderr, "model-change: skipping %s (it has no router model)\n", s.c_str());
    return run_model_change(o, points.front(), out, error);
  }
  for (const std::string& name : o.systems)
    if (!run_system(o, name, points, out, error)) return false;
  return true;
}

void print_table(const RunOutput& out) {
  std::printf("%-10s %-26s %-5s %10s %10s %10s %10s %10s %10s %7s  %s\n", "system", "point", "path", "Mops/s",
              "(in store)", "mean us", "p50 us", "p99 us", "p99.9 us", "share", "note");
  for (const TableRow& r : out.rows)
    std::printf("%-10s %-26s %-5s %10.3f %10.3f %10.1f %10.1f %10.1f %10.1f %6.1f%%  %s\n", r.system.c_str(),
                r.point.c_str(), r.path.c_str(), r.ops_per_s / 1e6, r.ops_per_s_inside / 1e6, r.mean_us, r.p50_us,
                r.p99_us, r.p999_us, r.share * 100, r.note.c_str());
  std::printf("Mops/s: wall clock, requests / time from the start to the last answer (the headline); "
              "(in store): requests / time inside the store's calls\n");
  for (const std::string& n : out.notes) std::printf("%s\n", n.c_str());
}

}  // namespace duet::bench::kv
