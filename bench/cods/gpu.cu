// The GPU measurements of duet_bench_cods (see gpu.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gpu.hpp"
#include "gpu/cuda_try.hpp"
#include "gpu/device.hpp"
#include "index/cods/gpu_batch.hpp"
#include "index/lit/batch.hpp"
#include "index/lslab/map.hpp"
#include "workload.hpp"

namespace duet::bench::cods {
namespace {

namespace ds = duet::cods::ds;
using Clk = std::chrono::steady_clock;

double since(Clk::time_point t0) { return std::chrono::duration<double>(Clk::now() - t0).count(); }

/// Device memory freed with the object.
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

/// Prefill batches: 4,096 keys, then 16 times more each, so the first splits of a tree are not
/// fought over by every tile of the GPU at once. Returns [begin, end) offsets.
std::vector<std::pair<std::size_t, std::size_t>> prefill_slices(std::size_t n) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  std::size_t at = 0, len = 4096;
  while (at < n) {
    const std::size_t e = std::min(n, at + len);
    out.emplace_back(at, e);
    at = e;
    len *= 16;
  }
  return out;
}

/// A stream's operations in one system's op codes, uploaded once per measurement.
template <class OpT>
struct DevWork {
  Dev<OpT> ops, pre_ops;
  Dev<std::uint64_t> keys, pre_keys;
  Dev<std::uint64_t> out;
  std::size_t n = 0, pre = 0;

  template <class Map>
  Status init(const std::vector<std::uint64_t>& prefill, const std::vector<std::uint64_t>& stream, OpT insert,
              Map map_op) {
    n = stream.size();
    pre = prefill.size();
    std::vector<OpT> o(n), po(pre, insert);
    std::vector<std::uint64_t> k(n);
    for (std::size_t i = 0; i < n; ++i) {
      o[i] = map_op(kind_of(stream[i]));
      k[i] = key_of(stream[i]);
    }
    DUET_CUDA_TRY(ops.upload(o));
    DUET_CUDA_TRY(keys.upload(k));
    DUET_CUDA_TRY(pre_ops.upload(po));
    DUET_CUDA_TRY(pre_keys.upload(prefill));
    DUET_CUDA_TRY(out.alloc(std::max(n, pre)));
    return Status::Ok();
  }
};

std::uint64_t updates_in(const std::vector<std::uint64_t>& stream) {
  std::uint64_t u = 0;
  for (std::uint64_t e : stream) u += kind_of(e) != Kind::kContains;
  return u;
}

__global__ void random_loads_kernel(const std::uint64_t* a, std::uint64_t mask, std::uint64_t loads,
                                    std::uint64_t* sink) {
  std::uint64_t acc = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < loads;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    std::uint64_t h = i * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    acc += a[h & mask];
  }
  if (acc == 0x123456789abcdefull) *sink = acc;  // never true for a zeroed array; keeps the loads
}

}  // namespace

bool gpu_present(std::string* why) {
  if (!gpu::device().present) {
    *why = gpu::device().reason;
    return false;
  }
  return true;
}

std::string gpu_name() { return gpu::device().present ? gpu::device().name : "cpu"; }

Status gpu_run_cods(const GpuPoint& p, const std::vector<std::uint64_t>& prefill,
                    const std::vector<std::uint64_t>& stream, unsigned repeats, GpuTimes* out) {
  ds::GpuConfig c;
  c.kind = p.structure == "list" ? ds::GpuKind::kList : p.structure == "hash" ? ds::GpuKind::kHashSet : ds::GpuKind::kTree;
  c.keys_per_node = p.k;
  c.group = p.group;
  c.regime = p.fully_atomic ? ds::Regime::kFullyAtomic : ds::Regime::kElementwise;
  c.buckets = p.buckets;
  c.mode = p.mixed ? ds::GpuMode::kMixed : ds::GpuMode::kGroup;
  c.order = p.order == 1 ? ds::GpuOrder::kGetsFirst : p.order == 2 ? ds::GpuOrder::kIndex : ds::GpuOrder::kAuto;
  // Nodes: the tree never frees, and the sets recycle only between batches, so one batch may
  // need a node per update (two when it splits) beside the live ones.
  const std::uint64_t updates = updates_in(stream);
  const std::uint64_t half = std::max<unsigned>(1, p.k / 2);
  if (c.kind == ds::GpuKind::kTree)
    c.pool_nodes = 2 * (prefill.size() + updates) / half + 65536;
  else
    c.pool_nodes = 2 * (prefill.size() + updates) + p.buckets + 65536;
  DevWork<ds::Op> w;
  Status s = w.init(prefill, stream, ds::Op::kInsert, [](Kind k) {
    return k == Kind::kContains ? ds::Op::kGet : k == Kind::kInsert ? ds::Op::kInsert : ds::Op::kRemove;
  });
  if (!s.ok()) return s;
  Dev<ds::OpStatus> st;
  DUET_CUDA_TRY(st.alloc(std::max(w.n, w.pre)));
  for (unsigned r = 0; r < repeats; ++r) {
    std::unique_ptr<ds::GpuStructure> g;
    s = ds::make_gpu_structure(c, &g);
    if (!s.ok()) return s;
    ds::BatchResult res{st.p, w.out.p};
    const auto t0 = Clk::now();
    for (auto [b, e] : prefill_slices(w.pre)) {
      const ds::Batch pb{w.pre_ops.p + b, w.pre_keys.p + b, w.pre_keys.p + b, e - b};
      s = g->execute_resident(pb, res);
      if (!s.ok()) return s;
    }
    out->prefill_s.push_back(since(t0));
    const ds::Batch rb{w.ops.p, w.keys.p, w.keys.p, w.n};
    const auto t1 = Clk::now();
    s = g->execute_resident(rb, res);
    out->run_s.push_back(since(t1));
    if (!s.ok() && s.code() != StatusCode::kResourceExhausted) return s;
    if (r + 1 == repeats) {
      std::vector<ds::OpStatus> h(w.n);
      DUET_CUDA_TRY(cudaMemcpy(h.data(), st.p, w.n * sizeof(ds::OpStatus), cudaMemcpyDeviceToHost));
      out->hits = 0;
      for (auto x : h) {
        out->hits += x == ds::OpStatus::kFound;
        out->retries += x == ds::OpStatus::kRetry;
      }
      out->nodes_used = g->nodes_used();
    }
  }
  return Status::Ok();
}

Status gpu_run_lslab(std::uint64_t expected_keys, const std::vector<std::uint64_t>& prefill,
                     const std::vector<std::uint64_t>& stream, unsigned repeats, GpuTimes* out) {
  lslab::Config c;
  c.expected_keys = expected_keys;
  DevWork<lslab::Op> w;
  Status s = w.init(prefill, stream, lslab::Op::kPut, [](Kind k) {
    return k == Kind::kContains ? lslab::Op::kGet : k == Kind::kInsert ? lslab::Op::kPut : lslab::Op::kDelete;
  });
  if (!s.ok()) return s;
  Dev<lslab::OpStatus> st;
  DUET_CUDA_TRY(st.alloc(std::max(w.n, w.pre)));
  for (unsigned r = 0; r < repeats; ++r) {
    std::unique_ptr<lslab::Map> m;
    s = lslab::make_gpu_map(c, &m, 8);
    if (!s.ok()) return s;
    lslab::BatchResult res{st.p, w.out.p};
    const auto t0 = Clk::now();
    for (auto [b, e] : prefill_slices(w.pre)) {
      const lslab::Batch pb{w.pre_ops.p + b, w.pre_keys.p + b, w.pre_keys.p + b, e - b};
      s = m->execute_resident(pb, res);
      if (!s.ok()) return s;
    }
    out->prefill_s.push_back(since(t0));
    const lslab::Batch rb{w.ops.p, w.keys.p, w.keys.p, w.n};
    const auto t1 = Clk::now();
    s = m->execute_resident(rb, res);
    out->run_s.push_back(since(t1));
    if (!s.ok()) return s;
    if (r + 1 == repeats) {
      std::vector<lslab::OpStatus> h(w.n);
      DUET_CUDA_TRY(cudaMemcpy(h.data(), st.p, w.n * sizeof(lslab::OpStatus), cudaMemcpyDeviceToHost));
      out->hits = 0;
      for (auto x : h) out->hits += x == lslab::OpStatus::kFound;
    }
  }
  return Status::Ok();
}

Status gpu_run_lit(std::uint64_t range, const std::vector<std::uint64_t>& prefill,
                   const std::vector<std::uint64_t>& stream, unsigned repeats, GpuTimes* out) {
  lit::BatchConfig c;
  c.predicted_min = 0;
  c.predicted_max = range - 1;
  c.node_capacity = 0;
  DevWork<lit::BatchOp> w;
  Status s = w.init(prefill, stream, lit::BatchOp::kInsert, [](Kind k) {
    return k == Kind::kContains ? lit::BatchOp::kGet : k == Kind::kInsert ? lit::BatchOp::kInsert : lit::BatchOp::kRemove;
  });
  if (!s.ok()) return s;
  Dev<lit::BatchStatus> st;
  DUET_CUDA_TRY(st.alloc(std::max(w.n, w.pre)));
  for (unsigned r = 0; r < repeats; ++r) {
    std::unique_ptr<lit::BatchMap> m;
    s = lit::make_gpu_batch_map(c, &m);
    if (!s.ok()) return s;
    lit::PointResults res{st.p, w.out.p};
    const auto t0 = Clk::now();
    for (auto [b, e] : prefill_slices(w.pre)) {
      const lit::PointBatch pb{w.pre_ops.p + b, w.pre_keys.p + b, w.pre_keys.p + b, e - b};
      s = m->execute_resident(pb, res, nullptr, nullptr);
      if (!s.ok()) return s;
    }
    out->prefill_s.push_back(since(t0));
    const lit::PointBatch rb{w.ops.p, w.keys.p, w.keys.p, w.n};
    const auto t1 = Clk::now();
    s = m->execute_resident(rb, res, nullptr, nullptr);
    out->run_s.push_back(since(t1));
    if (!s.ok()) return s;
    if (r + 1 == repeats) {
      std::vector<lit::BatchStatus> h(w.n);
      DUET_CUDA_TRY(cudaMemcpy(h.data(), st.p, w.n * sizeof(lit::BatchStatus), cudaMemcpyDeviceToHost));
      out->hits = 0;
      for (auto x : h) out->hits += x == lit::BatchStatus::kOk;
    }
  }
  return Status::Ok();
}

Status gpu_random_loads(std::uint64_t bytes, std::uint64_t loads, unsigned repeats, std::vector<double>* seconds) {
  std::uint64_t words = 1;
  while (words * 2 * 8 <= bytes) words *= 2;
  Dev<std::uint64_t> a, sink;
  DUET_CUDA_TRY(a.alloc(words));
  DUET_CUDA_TRY(sink.alloc(1));
  DUET_CUDA_TRY(cudaMemset(a.p, 0, words * 8));
  const unsigned grid = static_cast<unsigned>(std::max(1, gpu::device().sm_count) * 16);
  random_loads_kernel<<<grid, 256>>>(a.p, words - 1, loads, sink.p);  // warm-up
  DUET_CUDA_TRY(cudaDeviceSynchronize());
  for (unsigned r = 0; r < repeats; ++r) {
    const auto t0 = Clk::now();
    random_loads_kernel<<<grid, 256>>>(a.p, words - 1, loads, sink.p);
    DUET_CUDA_TRY(cudaGetLastError());
    DUET_CUDA_TRY(cudaDeviceSynchronize());
    seconds->push_back(since(t0));
  }
  return Status::Ok();
}

}  // namespace duet::bench::cods
