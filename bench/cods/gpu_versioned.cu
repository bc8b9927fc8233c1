// The versioned B-link tree's GPU figures (see gpu_versioned.hpp).
//
// Every system of a mix replays the same pre-generated batch (generated on the host before any
// clock starts, uploaded once). Each repeat builds a fresh structure, prefills it with range / 2
// distinct keys (batches of 4,096 keys, then 16 times more each: the insert rate), then runs the
// mix as one batch resident in GPU memory, timed on the host around execute_resident (stream,
// kernels and pool recycle included). Median and range over the repeats.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/results.hpp"
#include "gpu.hpp"
#include "gpu/cuda_try.hpp"
#include "gpu_versioned.hpp"
#include "index/cods/gpu_batch.hpp"
#include "index/cods/gpu_versioned.hpp"
#include "workload.hpp"

namespace duet::bench::cods {
namespace {

namespace ds = duet::cods::ds;
using Clk = std::chrono::steady_clock;

double since(Clk::time_point t0) { return std::chrono::duration<double>(Clk::now() - t0).count(); }

template <class T>
struct Dev {
  T* p = nullptr;
  ~Dev() { cudaFree(p); }
  cudaError_t alloc(std::size_t n) { return cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)); }
  cudaError_t upload(const std::vector<T>& v) {
    cudaError_t e = alloc(v.size());
    return e != cudaSuccess ? e : cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
};

/// A mix: percentages of GET, INSERT, REMOVE and RANGE.
struct Mix {
  const char* name;
  unsigned get, ins, rem, rng;
  const char* note;
};

const Mix kMixes[] = {
    {"find", 100, 0, 0, 0, "MVGpuBTree find"},
    {"get90", 90, 5, 5, 0, "no ranges"},
    {"get80", 80, 10, 10, 0, "no ranges"},
    {"get50", 50, 25, 25, 0, "no ranges"},
    {"erase-find", 50, 0, 50, 0, "MVGpuBTree 50% erase + 50% find"},
    {"r10-get80", 80, 5, 5, 10, "10% ranges"},
    {"r10-get50", 50, 20, 20, 10, "10% ranges"},
    {"insert-rq-50", 0, 50, 0, 50, "MVGpuBTree inserts with range queries, 50% updates"},
    {"insert-rq-5", 0, 5, 0, 95, "MVGpuBTree inserts with range queries, 5% updates"},
};

/// The batch of a mix, in the versioned tree's op codes (the plain tree runs mixes without RANGE).
struct Work {
  Dev<ds::Op> ops, pre_ops;
  Dev<std::uint64_t> keys, values, pre_keys, out, rk, rv;
  Dev<ds::OpStatus> status;
  std::uint64_t n = 0, pre = 0, updates = 0;
};

Status make_work(const VersionedBenchOptions& o, const Mix& m, const std::vector<std::uint64_t>& prefill, Work* w) {
  std::mt19937_64 rng(o.seed * 1000003 + m.get * 101 + m.ins * 11 + m.rng);
  std::vector<ds::Op> ops(o.ops);
  std::vector<std::uint64_t> keys(o.ops), values(o.ops);
  for (std::uint64_t i = 0; i < o.ops; ++i) {
    const unsigned r = static_cast<unsigned>(rng() % 100);
    const std::uint64_t k = rng() % o.range;
    keys[i] = k;
    values[i] = k + 1;
    if (r < m.get) {
      ops[i] = ds::Op::kGet;
    } else if (r < m.get + m.ins) {
      ops[i] = ds::Op::kInsert;
    } else if (r < m.get + m.ins + m.rem) {
      ops[i] = ds::Op::kRemove;
    } else {
      ops[i] = ds::kOpRange;
      values[i] = k + o.span - 1;
    }
    w->updates += ops[i] == ds::Op::kInsert || ops[i] == ds::Op::kRemove;
  }
  w->n = o.ops;
  w->pre = prefill.size();
  DUET_CUDA_TRY(w->ops.upload(ops));
  DUET_CUDA_TRY(w->keys.upload(keys));
  DUET_CUDA_TRY(w->values.upload(values));
  std::vector<ds::Op> pops(prefill.size(), ds::Op::kInsert);
  DUET_CUDA_TRY(w->pre_ops.upload(pops));
  DUET_CUDA_TRY(w->pre_keys.upload(prefill));
  DUET_CUDA_TRY(w->out.alloc(std::max(w->n, w->pre)));
  DUET_CUDA_TRY(w->status.alloc(std::max(w->n, w->pre)));
  if (m.rng > 0) {
    DUET_CUDA_TRY(w->rk.alloc(o.ops * o.limit));
    DUET_CUDA_TRY(w->rv.alloc(o.ops * o.limit));
  }
  return Status::Ok();
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> slices(std::uint64_t n) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (std::uint64_t at = 0, len = 4096; at < n; len *= 16) {
    const std::uint64_t e = std::min(n, at + len);
    out.emplace_back(at, e);
    at = e;
  }
  return out;
}

struct Times {
  std::vector<double> prefill_s, run_s;
  std::uint64_t retries = 0, hits = 0, nodes_used = 0, nodes_recycled = 0, range_pairs = 0;
};

/// Who runs the requests: K keys per node on tiles of `group` lanes (1: one lane per request);
/// mixed: reads on the tiles, each update on a lane of its own.
struct Shape {
  unsigned k, group;
  bool mixed;
};
const Shape kShapes[] = {{14, 16, false}, {30, 32, false}, {14, 1, false},
                         {30, 1, false},  {14, 16, true},  {30, 32, true}};

/// One system on one mix: versioned (true) or the plain tree.
Status run_system(bool versioned, bool fully_atomic, const Shape& shape, const VersionedBenchOptions& o, const Mix& m,
                  Work& w, Times* t) {
  const unsigned k = shape.k, group = shape.group;
  const ds::GpuMode mode = shape.mixed ? ds::GpuMode::kMixed : ds::GpuMode::kGroup;
  const ds::Regime regime = fully_atomic ? ds::Regime::kFullyAtomic : ds::Regime::kElementwise;
  for (unsigned r = 0; r < o.repeats; ++r) {
    std::unique_ptr<ds::GpuVersionedTree> vt;
    std::unique_ptr<ds::GpuStructure> pt;
    if (versioned) {
      ds::GpuVersionedConfig c;
      c.keys_per_node = k;
      c.group = group;
      c.mode = mode;
      c.regime = regime;
      c.pool_nodes = 2 * (w.pre + w.updates) / 7 + (m.rng ? w.pre / 4 : 0) + 65536;
      const Status s = ds::make_gpu_versioned_tree(c, &vt);
      if (!s.ok()) return s;
    } else {
      ds::GpuConfig c;
      c.kind = ds::GpuKind::kTree;
      c.keys_per_node = k;
      c.group = group;
      c.mode = mode;
      c.regime = regime;
      c.pool_nodes = 2 * (w.pre + w.updates) / 7 + 65536;
      const Status s = ds::make_gpu_structure(c, &pt);
      if (!s.ok()) return s;
    }
    auto exec = [&](const ds::Batch& b, bool ranges) {
      if (versioned) {
        ds::VersionedBatchResult res{w.status.p, w.out.p, ranges ? w.rk.p : nullptr, ranges ? w.rv.p : nullptr,
                                     ranges ? o.limit : 0};
        return vt->execute_resident(b, res);
      }
      ds::BatchResult res{w.status.p, w.out.p};
      return pt->execute_resident(b, res);
    };
    const auto t0 = Clk::now();
    for (auto [b, e] : slices(w.pre)) {
      const Status s = exec(ds::Batch{w.pre_ops.p + b, w.pre_keys.p + b, w.pre_keys.p + b, e - b}, false);
      if (!s.ok()) return s;
    }
    t->prefill_s.push_back(since(t0));
    const auto t1 = Clk::now();
    const Status s = exec(ds::Batch{w.ops.p, w.keys.p, w.values.p, w.n}, m.rng > 0);
    t->run_s.push_back(since(t1));
    if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
    if (r + 1 == o.repeats) {
      std::vector<ds::OpStatus> h(w.n);
      std::vector<std::uint64_t> out(w.n);
      std::vector<ds::Op> ops(w.n);
      DUET_CUDA_TRY(cudaMemcpy(h.data(), w.status.p, w.n * sizeof(ds::OpStatus), cudaMemcpyDeviceToHost));
      DUET_CUDA_TRY(cudaMemcpy(out.data(), w.out.p, w.n * 8, cudaMemcpyDeviceToHost));
      DUET_CUDA_TRY(cudaMemcpy(ops.data(), w.ops.p, w.n * sizeof(ds::Op), cudaMemcpyDeviceToHost));
      for (std::uint64_t i = 0; i < w.n; ++i) {
        t->retries += h[i] == ds::OpStatus::kRetry;
        if (ops[i] == ds::kOpRange) t->range_pairs += std::min(out[i], o.limit);
        else t->hits += h[i] == ds::OpStatus::kFound;
      }
      t->nodes_used = versioned ? vt->nodes_used() : pt->nodes_used();
      if (versioned) t->nodes_recycled = vt->nodes_recycled();
    }
  }
  return Status::Ok();
}

Json summary(const std::vector<double>& xs, Summary* out = nullptr) {
  const Summary s = summarize(xs);
  if (out) *out = s;
  Json j = Json::object();
  j.set("median", s.median);
  j.set("min", s.min);
  j.set("max", s.max);
  return j;
}

std::string row(const std::string& sys, const std::string& mix, const Summary& s, const std::string& note) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-8s %-22s %-26s %10.2f [%.2f-%.2f] %s", "vtree", sys.c_str(), mix.c_str(),
                s.median / 1e6, s.min / 1e6, s.max / 1e6, note.c_str());
  return buf;
}

}  // namespace

Status gpu_versioned_figures(const VersionedBenchOptions& o,
                             const std::function<void(Json, const std::string&, bool)>& emit) {
  for (const std::string& name : o.mixes)
    if (std::none_of(std::begin(kMixes), std::end(kMixes), [&](const Mix& m) { return name == m.name; }))
      return Status::InvalidArgument("unknown vtree mix '" + name + "'");
  const std::vector<std::uint64_t> prefill = prefill_keys(o.range, o.range / 2, o.seed);
  for (const Mix& m : kMixes) {
    if (!o.mixes.empty() && std::find(o.mixes.begin(), o.mixes.end(), m.name) == o.mixes.end()) continue;
    Work w;
    Status s = make_work(o, m, prefill, &w);
    if (!s.ok()) return s;
    for (const Shape& shape : kShapes) {
      const unsigned k = shape.k, group = shape.group;
      for (bool fa : {true, false}) {
        double plain_median = 0;
        for (bool versioned : {false, true}) {
          if (!versioned && m.rng > 0) continue;  // the plain tree has no RANGE
          const std::string sys = std::string(versioned ? "cods-gpu-vtree" : "cods-gpu-tree") + (fa ? "-fa" : "-ew") +
                                  "-k" + std::to_string(k) + (shape.mixed ? "-mixed-g" : "-g") + std::to_string(group);
          if (!o.filter.empty() && std::none_of(o.filter.begin(), o.filter.end(), [&](const std::string& f) {
                return sys.find(f) != std::string::npos;
              }))
            continue;
          Times t;
          s = run_system(versioned, fa, shape, o, m, w, &t);
          Json rec = Json::object();
          rec.set("name", "vtree");
          rec.set("system", sys);
          rec.set("processor", "gpu");
          rec.set("structure", versioned ? "versioned-tree" : "tree");
          rec.set("k", k);
          rec.set("group", "gpu-tile-" + std::to_string(group));
          rec.set("mode", shape.mixed ? "mixed" : group == 1 ? "single-lane" : "group");
          rec.set("regime", fa ? "fully-atomic" : "elementwise");
          rec.set("mix", m.name);
          rec.set("mix_note", m.note);
          rec.set("get_percent", m.get);
          rec.set("insert_percent", m.ins);
          rec.set("remove_percent", m.rem);
          rec.set("range_percent", m.rng);
          rec.set("range_span", o.span);
          rec.set("range_limit", o.limit);
          rec.set("key_range", o.range);
          rec.set("keys", prefill.size());
          rec.set("key_bytes", 8u);
          rec.set("value_bytes", 8u);
          rec.set("batch_ops", o.ops);
          rec.set("ok", s.ok());
          if (!s.ok()) {
            rec.set("error", s.to_string());
            emit(std::move(rec), row(sys, m.name, Summary{}, "ERROR " + s.to_string()), false);
            continue;
          }
          std::vector<double> run, pre;
          for (double x : t.run_s) run.push_back(static_cast<double>(o.ops) / x);
          for (double x : t.prefill_s) pre.push_back(static_cast<double>(prefill.size()) / x);
          Summary rs, ps;
          rec.set("ops_per_s", summary(run, &rs));
          rec.set("prefill_inserts_per_s", summary(pre, &ps));
          rec.set("run_seconds", Json::array_of(t.run_s));
          rec.set("hits_last_run", t.hits);
          rec.set("range_pairs_last_run", t.range_pairs);
          rec.set("retries_last_run", t.retries);
          rec.set("pool_nodes_used", t.nodes_used);
          if (versioned) rec.set("pool_nodes_recycled", t.nodes_recycled);
          char note[160];
          std::snprintf(note, sizeof note, "prefill %.1f M inserts/s", ps.median / 1e6);
          std::string text = note;
          if (!versioned) plain_median = rs.median;
          if (versioned && plain_median > 0) {
            rec.set("plain_ops_per_s_median", plain_median);
            rec.set("ratio_to_plain", rs.median / plain_median);
            std::snprintf(note, sizeof note, "; %.3fx the plain tree", rs.median / plain_median);
            text += note;
          }
          if (t.retries) text += "; " + std::to_string(t.retries) + " retries";
          emit(std::move(rec), row(sys, m.name, rs, text), true);
        }
      }
    }
  }
  // GPU LIT at 80/10/10 on the same key range and prefill, for reference.
  {
    const std::vector<std::uint64_t> stream = make_streams(o.range, 80, 1, o.ops, o.seed + 7)[0];
    GpuTimes t;
    const Status s = gpu_run_lit(o.range, prefill, stream, o.repeats, &t);
    Json rec = Json::object();
    rec.set("name", "vtree");
    rec.set("system", "lit-gpu");
    rec.set("processor", "gpu");
    rec.set("mix", "get80");
    rec.set("get_percent", 80u);
    rec.set("insert_percent", 10u);
    rec.set("remove_percent", 10u);
    rec.set("range_percent", 0u);
    rec.set("key_range", o.range);
    rec.set("keys", prefill.size());
    rec.set("batch_ops", o.ops);
    rec.set("ok", s.ok());
    Summary rs;
    if (s.ok()) {
      std::vector<double> run;
      for (double x : t.run_s) run.push_back(static_cast<double>(o.ops) / x);
      rec.set("ops_per_s", summary(run, &rs));
    } else {
      rec.set("error", s.to_string());
    }
    emit(std::move(rec), row("lit-gpu", "get80", rs, s.ok() ? "reference (its own stream generator, same shape)" : "ERROR " + s.to_string()),
         s.ok());
  }
  return Status::Ok();
}

}  // namespace duet::bench::cods
