// The GPU operators. Each call is one block on the transaction's lane (its stream and scratch
// memory): copy the inputs in, run the kernels, copy the result out, synchronise. Operators whose
// output size depends on the data (filter, joins, aggregate) read that size back first, so
// they synchronise twice; the CPU does no work for the transaction in between either way.
//
// Hash tables hold a representative row per slot (claimed by compare-and-swap) and compare keys
// through it, so keys of any value need no sentinel. Outputs are put into the defined orders
// with stable radix sorts, which makes them identical to the CPU twin's.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "compute/internal.hpp"
#include "compute/kernels_common.hpp"
#include "gpu/cuda_try.hpp"
#include "gpu/host_copy.hpp"
#include "gpu/device.hpp"
#include "gpu/device_buffer.hpp"

namespace duet::compute {

/// A pooled stream with its cuBLAS handle and scratch arenas (leased by one context at a time).
struct Context::Lane {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  ::duet::gpu::DeviceBuffer<char> arena[3];  // 0: inputs and tables, 1: data-sized outputs, 2: sorting
  char* staging = nullptr;                    // page-locked host buffer for inference's copies
  std::size_t staging_bytes = 0;
};

}  // namespace duet::compute

namespace duet::compute::detail::gpu {

namespace {

using Lane = Context::Lane;
constexpr std::uint32_t kEmpty = 0xffffffffu;
constexpr unsigned kThreads = 256;

unsigned blocks(std::size_t n) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + kThreads - 1) / kThreads, 1u << 20)));
}

#define DUET_BLAS_TRY(expr)                                                                    \
  do {                                                                                         \
    const cublasStatus_t duet_blas_status = (expr);                                            \
    if (duet_blas_status != CUBLAS_STATUS_SUCCESS)                                             \
      return Status::Internal(std::string(#expr) + ": cuBLAS status " +                       \
                              std::to_string(static_cast<int>(duet_blas_status)));             \
  } while (0)

#define DUET_TRY(expr)           \
  do {                           \
    Status duet_s_ = (expr);     \
    if (!duet_s_.ok()) return duet_s_; \
  } while (0)

// Carves one arena into 256-byte-aligned arrays: add() every array, then commit().
class Plan {
 public:
  template <class T>
  void add(T** p, std::size_t n) {
    items_.push_back({reinterpret_cast<void**>(p), (n * sizeof(T) + 255) / 256 * 256});
  }
  Status commit(Lane* l, int arena) {
    std::size_t total = 0;
    for (auto& it : items_) total += it.second;
    DUET_TRY(l->arena[arena].reserve(std::max<std::size_t>(total, 256)));
    char* at = l->arena[arena].data();
    for (auto& it : items_) {
      *it.first = at;
      at += it.second;
    }
    return Status::Ok();
  }

 private:
  std::vector<std::pair<void**, std::size_t>> items_;
};

Status too_many(std::size_t n) {
  if (n >= (1ull << 30)) return Status::InvalidArgument("compute: GPU operators take fewer than 2^30 rows");
  return Status::Ok();
}

Status h2d(Lane* l, void* d, const void* h, std::size_t bytes) {
  if (bytes) DUET_CUDA_TRY(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, l->stream));
  return Status::Ok();
}
Status d2h(Lane* l, void* h, const void* d, std::size_t bytes) {
  if (bytes) DUET_CUDA_TRY(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, l->stream));
  return Status::Ok();
}
Status sync(Lane* l) {
  DUET_CUDA_TRY(cudaGetLastError());
  DUET_CUDA_TRY(cudaStreamSynchronize(l->stream));
  return Status::Ok();
}

// ----- kernels

struct DevPred {
  const char* col;
  Type type;
  Cmp cmp;
  std::uint32_t width;
  std::int64_t i, i_hi;
  double f, f_hi;
  const char *s, *s_hi;
};

__global__ void k_pred(DevPred p, std::size_t n, std::uint8_t* flags, bool first) {
  for (std::size_t r = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; r < n; r += std::size_t{gridDim.x} * blockDim.x) {
    bool ok;
    switch (p.type) {
      case Type::kFloat64: ok = pred_f64(reinterpret_cast<const double*>(p.col)[r], p.cmp, p.f, p.f_hi); break;
      case Type::kFloat32:
        ok = pred_f64(static_cast<double>(reinterpret_cast<const float*>(p.col)[r]), p.cmp, p.f, p.f_hi);
        break;
      case Type::kBytes: ok = pred_bytes(p.col + r * p.width, p.cmp, p.s, p.s_hi, p.width); break;
      default: ok = pred_i64(reinterpret_cast<const std::int64_t*>(p.col)[r], p.cmp, p.i, p.i_hi);
    }
    flags[r] = first ? static_cast<std::uint8_t>(ok) : static_cast<std::uint8_t>(flags[r] & ok);
  }
}

__global__ void k_gather8(const std::uint64_t* in, const std::uint32_t* sel, std::size_t n, std::uint64_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = in[sel[i]];
}
__global__ void k_gather(const char* in, const std::uint32_t* sel, std::size_t n, std::uint32_t w, char* out) {
  // One thread per output byte, so wide rows copy coalesced.
  const std::size_t total = n * w;
  for (std::size_t t = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; t < total; t += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t i = t / w, b = t % w;
    out[t] = in[std::size_t{sel[i]} * w + b];
  }
}

__global__ void k_derive(Expr::Op op, const std::int64_t* a, const std::int64_t* b, std::int64_t k, std::size_t n,
                         std::int64_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = apply_expr(op, a[i], b ? b[i] : k);
}

constexpr unsigned kMaxAggs = 16;
struct AggArgs {
  const std::int64_t* keys[4];
  unsigned nk;
  const std::int64_t* in[kMaxAggs];
  Agg::Op op[kMaxAggs];
  unsigned na;
  const std::uint32_t* sel;
  std::size_t n;
  std::uint32_t* rep;
  std::int64_t* acc;  // [agg * cap + slot]
  std::uint64_t mask;
};

__global__ void k_agg_init(AggArgs a) {
  const std::size_t cap = a.mask + 1;
  for (std::size_t t = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; t < cap * a.na; t += std::size_t{gridDim.x} * blockDim.x) {
    const Agg::Op op = a.op[t / cap];
    a.acc[t] = op == Agg::kMin ? std::numeric_limits<std::int64_t>::max()
               : op == Agg::kMax ? std::numeric_limits<std::int64_t>::min()
                                 : 0;
  }
}

__device__ __forceinline__ bool same_key(const AggArgs& a, std::uint32_t x, std::uint32_t y) {
  for (unsigned j = 0; j < a.nk; ++j)
    if (a.keys[j][x] != a.keys[j][y]) return false;
  return true;
}

__global__ void k_agg(AggArgs a) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < a.n; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t r = a.sel ? a.sel[i] : static_cast<std::uint32_t>(i);
    std::uint64_t h = 0x51ed270b27a3c5a1ULL;
    for (unsigned j = 0; j < a.nk; ++j) h = hash_step(h, a.keys[j][r]);
    std::uint64_t s = h & a.mask;
    for (;;) {
      std::uint32_t cur = a.rep[s];
      if (cur == kEmpty) {
        cur = atomicCAS(a.rep + s, kEmpty, r);
        if (cur == kEmpty) break;  // claimed
      }
      if (same_key(a, cur, r)) break;
      s = (s + 1) & a.mask;
    }
    const std::size_t cap = a.mask + 1;
    for (unsigned j = 0; j < a.na; ++j) {
      std::int64_t* p = a.acc + j * cap + s;
      switch (a.op[j]) {
        case Agg::kCount: atomicAdd(reinterpret_cast<unsigned long long*>(p), 1ULL); break;
        case Agg::kSum:
          atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(a.in[j][r]));
          break;
        case Agg::kMin: atomicMin(reinterpret_cast<long long*>(p), static_cast<long long>(a.in[j][r])); break;
        case Agg::kMax: atomicMax(reinterpret_cast<long long*>(p), static_cast<long long>(a.in[j][r])); break;
      }
    }
  }
}

__global__ void k_occupied(const std::uint32_t* rep, std::size_t cap, std::uint8_t* flags) {
  for (std::size_t s = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; s < cap; s += std::size_t{gridDim.x} * blockDim.x)
    flags[s] = rep[s] != kEmpty;
}

// tk[g] = the order key of group g's key column j (through its representative row).
__global__ void k_group_key(const std::int64_t* col, const std::uint32_t* rep, const std::uint32_t* slots, std::size_t g,
                            std::uint64_t* tk) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < g; i += std::size_t{gridDim.x} * blockDim.x)
    tk[i] = order_i64(col[rep[slots[i]]], false);
}

__global__ void k_agg_out(AggArgs a, const std::uint32_t* slots, const std::uint32_t* perm, std::size_t g,
                          std::int64_t* kout, std::int64_t* vout) {
  const std::size_t cap = a.mask + 1;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < g; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t s = slots[perm[i]];
    for (unsigned j = 0; j < a.nk; ++j) kout[j * g + i] = a.keys[j][a.rep[s]];
    for (unsigned j = 0; j < a.na; ++j) vout[j * g + i] = a.acc[j * cap + s];
  }
}

// Sorting: order keys of a column, and the gather of one key array through a permutation.
__global__ void k_order(const char* col, Type t, bool desc, std::size_t n, std::uint64_t* tk) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    switch (t) {
      case Type::kFloat64: tk[i] = order_f64(reinterpret_cast<const double*>(col)[i], desc); break;
      case Type::kFloat32: tk[i] = order_f32(reinterpret_cast<const float*>(col)[i], desc); break;
      default: tk[i] = order_i64(reinterpret_cast<const std::int64_t*>(col)[i], desc);
    }
  }
}
__global__ void k_permute(const std::uint64_t* tk, const std::uint32_t* perm, std::size_t n, std::uint64_t* out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = tk[perm[i]];
}
__global__ void k_iota(std::uint32_t* p, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x)
    p[i] = static_cast<std::uint32_t>(i);
}

// Joins.
__global__ void k_join_build(const std::int64_t* rk, std::size_t nr, std::uint32_t* rep, std::uint32_t* cnt,
                             std::uint32_t* slot_of, std::uint64_t mask) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < nr; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::int64_t k = rk[i];
    std::uint64_t s = hash64(static_cast<std::uint64_t>(k)) & mask;
    for (;;) {
      std::uint32_t cur = rep[s];
      if (cur == kEmpty) {
        cur = atomicCAS(rep + s, kEmpty, static_cast<std::uint32_t>(i));
        if (cur == kEmpty) break;
      }
      if (rk[cur] == k) break;
      s = (s + 1) & mask;
    }
    atomicAdd(cnt + s, 1u);
    slot_of[i] = static_cast<std::uint32_t>(s);
  }
}
__global__ void k_join_probe(const std::int64_t* lk, std::size_t nl, const std::int64_t* rk, const std::uint32_t* rep,
                             const std::uint32_t* cnt, std::uint64_t mask, std::uint32_t* lslot, std::uint64_t* m) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < nl; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::int64_t k = lk[i];
    std::uint64_t s = hash64(static_cast<std::uint64_t>(k)) & mask;
    std::uint32_t found = kEmpty;
    for (;;) {
      const std::uint32_t cur = rep[s];
      if (cur == kEmpty) break;
      if (rk[cur] == k) {
        found = static_cast<std::uint32_t>(s);
        break;
      }
      s = (s + 1) & mask;
    }
    lslot[i] = found;
    m[i] = found == kEmpty ? 0 : cnt[found];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) m[nl] = 0;
}
__global__ void k_join_write(std::size_t nl, const std::uint32_t* lslot, const std::uint64_t* off,
                             const std::uint32_t* start, const std::uint32_t* cnt, const std::uint32_t* rows,
                             std::uint32_t* lo, std::uint32_t* ro) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < nl; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t s = lslot[i];
    if (s == kEmpty) continue;
    const std::uint64_t at = off[i];
    for (std::uint32_t j = 0; j < cnt[s]; ++j) {
      lo[at + j] = static_cast<std::uint32_t>(i);
      ro[at + j] = rows[start[s] + j];
    }
  }
}
__global__ void k_unsorted(const std::int64_t* rk, std::size_t nr, int* bad) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i + 1 < nr; i += std::size_t{gridDim.x} * blockDim.x)
    if (rk[i] > rk[i + 1]) *bad = 1;
}
__global__ void k_index_probe(const std::int64_t* lk, std::size_t nl, const std::int64_t* rk, std::size_t nr,
                              std::uint32_t* lo, std::uint64_t* m) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < nl; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::int64_t k = lk[i];
    std::size_t a = 0, b = nr;  // lower bound
    while (a < b) {
      const std::size_t mid = (a + b) / 2;
      if (rk[mid] < k) a = mid + 1; else b = mid;
    }
    std::size_t c = a, d = nr;  // upper bound
    while (c < d) {
      const std::size_t mid = (c + d) / 2;
      if (rk[mid] <= k) c = mid + 1; else d = mid;
    }
    lo[i] = static_cast<std::uint32_t>(a);
    m[i] = c - a;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) m[nl] = 0;
}
__global__ void k_index_write(std::size_t nl, const std::uint32_t* lo, const std::uint64_t* m, const std::uint64_t* off,
                              std::uint32_t* lout, std::uint32_t* rout) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < nl; i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint64_t at = off[i];
    for (std::uint64_t j = 0; j < m[i]; ++j) {
      lout[at + j] = static_cast<std::uint32_t>(i);
      rout[at + j] = lo[i] + static_cast<std::uint32_t>(j);
    }
  }
}

__global__ void k_bias_act(float* y, const float* b, std::size_t rows, std::uint32_t out, Dense::Act act) {
  const std::size_t total = rows * out;
  for (std::size_t t = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; t < total; t += std::size_t{gridDim.x} * blockDim.x) {
    const float v = y[t] + b[t % out];
    y[t] = act == Dense::kRelu ? (v > 0.0f ? v : 0.0f) : act == Dense::kSigmoid ? 1.0f / (1.0f + expf(-v)) : v;
  }
}

// Stable LSD sort of n items by the key arrays tk[0..k) (tk[0] most significant): *perm gets
// the order (ties by item number). Uses arena 2; tk arrays must live elsewhere.
Status lsd_sort(Lane* l, std::size_t n, const std::vector<const std::uint64_t*>& tk, std::uint32_t** perm) {
  std::uint64_t *ka = nullptr, *kb = nullptr;
  std::uint32_t *pa = nullptr, *pb = nullptr;
  void* temp = nullptr;
  std::size_t temp_bytes = 0;
  DUET_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, ka, kb, pa, pb, static_cast<int>(n), 0, 64,
                                                l->stream));
  Plan plan;
  plan.add(&ka, n);
  plan.add(&kb, n);
  plan.add(&pa, n);
  plan.add(&pb, n);
  plan.add(reinterpret_cast<char**>(&temp), temp_bytes);
  DUET_TRY(plan.commit(l, 2));
  k_iota<<<blocks(n), kThreads, 0, l->stream>>>(pa, n);
  for (std::size_t j = tk.size(); j-- > 0;) {
    k_permute<<<blocks(n), kThreads, 0, l->stream>>>(tk[j], pa, n, ka);
    DUET_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, ka, kb, pa, pb, static_cast<int>(n), 0, 64, l->stream));
    std::swap(pa, pb);
  }
  *perm = pa;
  return Status::Ok();
}

}  // namespace

bool available(std::string* reason) {
  const auto& d = ::duet::gpu::device();
  if (!d.present) *reason = d.reason;
  return d.present;
}

Status lane_create(Lane** out) {
  auto* l = new Lane();
  cudaError_t e = cudaStreamCreateWithFlags(&l->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    delete l;
    cudaGetLastError();
    return ::duet::gpu::cuda_status(e, "cudaStreamCreateWithFlags");
  }
  if (cublasCreate(&l->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(l->blas, l->stream) != CUBLAS_STATUS_SUCCESS) {
    if (l->blas) cublasDestroy(l->blas);
    cudaStreamDestroy(l->stream);
    delete l;
    return Status::Internal("compute: cublasCreate failed");
  }
  *out = l;
  return Status::Ok();
}

void lane_destroy(Lane* l) {
  if (!l) return;
  ::duet::gpu::free_host(l->staging);
  if (l->blas) cublasDestroy(l->blas);
  if (l->stream) cudaStreamDestroy(l->stream);
  delete l;
}

namespace {
struct DevModel {
  std::vector<float*> w, b;
};
}  // namespace

Status model_upload(const Mlp& m, void** handle) {
  auto* dm = new DevModel();
  for (const Dense& d : m.layers) {
    float* w = nullptr;
    float* b = nullptr;
    cudaError_t e = cudaMalloc(&w, d.w.size() * sizeof(float));
    if (e == cudaSuccess) e = cudaMalloc(&b, d.b.size() * sizeof(float));
    if (e == cudaSuccess) e = ::duet::gpu::copy_to_device(w, d.w.data(), d.w.size() * sizeof(float));
    if (e == cudaSuccess) e = ::duet::gpu::copy_to_device(b, d.b.data(), d.b.size() * sizeof(float));
    dm->w.push_back(w);
    dm->b.push_back(b);
    if (e != cudaSuccess) {
      cudaGetLastError();
      model_free(dm);
      return ::duet::gpu::cuda_status(e, "compute: model upload");
    }
  }
  *handle = dm;
  return Status::Ok();
}

void model_free(void* handle) {
  auto* dm = static_cast<DevModel*>(handle);
  if (!dm) return;
  for (float* p : dm->w) cudaFree(p);
  for (float* p : dm->b) cudaFree(p);
  delete dm;
}

Status bandwidth(double* h2d, double* d2d) {
  const std::size_t bytes = 256u << 20;
  void* host = ::duet::gpu::alloc_host(bytes);
  if (!host) return Status::ResourceExhausted("compute: bandwidth: pinned buffer refused");
  std::memset(host, 1, bytes);
  char *a = nullptr, *b = nullptr;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  auto finish = [&](Status s) {
    cudaFree(a);
    cudaFree(b);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    ::duet::gpu::free_host(host);
    return s;
  };
  auto run = [&]() -> Status {
    DUET_CUDA_TRY(cudaMalloc(&a, bytes));
    DUET_CUDA_TRY(cudaMalloc(&b, bytes));
    DUET_CUDA_TRY(cudaEventCreate(&e0));
    DUET_CUDA_TRY(cudaEventCreate(&e1));
    float best_h = 1e30f, best_d = 1e30f;
    for (int i = 0; i < 5; ++i) {
      float ms = 0;
      DUET_CUDA_TRY(cudaEventRecord(e0));
      DUET_CUDA_TRY(cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice));
      DUET_CUDA_TRY(cudaEventRecord(e1));
      DUET_CUDA_TRY(cudaEventSynchronize(e1));
      DUET_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
      best_h = std::min(best_h, ms);
      DUET_CUDA_TRY(cudaEventRecord(e0));
      DUET_CUDA_TRY(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
      DUET_CUDA_TRY(cudaEventRecord(e1));
      DUET_CUDA_TRY(cudaEventSynchronize(e1));
      DUET_CUDA_TRY(cudaEventElapsedTime(&ms, e0, e1));
      best_d = std::min(best_d, ms);
    }
    *h2d = bytes / (best_h / 1e3);
    *d2d = 2.0 * bytes / (best_d / 1e3);
    return Status::Ok();
  };
  return finish(run());
}

Status filter(Lane* l, std::size_t rows, std::span<const BoundPred> preds, Selection* out) {
  DUET_TRY(too_many(rows));
  std::size_t widest = 8, bounds = 0;
  for (const BoundPred& p : preds) {
    widest = std::max<std::size_t>(widest, p.col->width());
    bounds += 2 * p.s.size();
  }
  char* col = nullptr;
  char* bnd = nullptr;
  std::uint8_t* flags = nullptr;
  std::uint32_t* sel = nullptr;
  int* num = nullptr;
  void* temp = nullptr;
  std::size_t temp_bytes = 0;
  DUET_CUDA_TRY(cub::DeviceSelect::Flagged(nullptr, temp_bytes, thrust::counting_iterator<std::uint32_t>(0), flags, sel,
                                           num, static_cast<int>(rows), l->stream));
  Plan plan;
  plan.add(&col, rows * widest);
  plan.add(&bnd, bounds + 1);
  plan.add(&flags, rows);
  plan.add(&sel, rows);
  plan.add(&num, 1);
  plan.add(reinterpret_cast<char**>(&temp), temp_bytes);
  DUET_TRY(plan.commit(l, 0));
  if (preds.empty()) {
    DUET_CUDA_TRY(cudaMemsetAsync(flags, 1, rows, l->stream));
  } else {
    // Byte-string bounds, all at once (their host strings outlive the block).
    std::string all;
    for (const BoundPred& p : preds) all += p.s + p.s_hi;
    DUET_TRY(h2d(l, bnd, all.data(), all.size()));
    std::size_t at = 0;
    for (std::size_t j = 0; j < preds.size(); ++j) {
      const BoundPred& p = preds[j];
      // The column's copy waits for the previous predicate's kernel (stream order).
      DUET_TRY(h2d(l, col, p.col->data(), rows * p.col->width()));
      DevPred d{col, p.col->type(), p.cmp, p.col->width(), p.i, p.i_hi, p.f, p.f_hi, bnd + at, bnd + at + p.s.size()};
      at += 2 * p.s.size();
      k_pred<<<blocks(rows), kThreads, 0, l->stream>>>(d, rows, flags, j == 0);
    }
  }
  DUET_CUDA_TRY(cub::DeviceSelect::Flagged(temp, temp_bytes, thrust::counting_iterator<std::uint32_t>(0), flags, sel, num,
                                           static_cast<int>(rows), l->stream));
  int n = 0;
  DUET_TRY(d2h(l, &n, num, sizeof(int)));
  DUET_TRY(sync(l));
  out->resize(static_cast<std::size_t>(n));
  DUET_TRY(d2h(l, out->data(), sel, static_cast<std::size_t>(n) * sizeof(std::uint32_t)));
  return sync(l);
}

Status gather(Lane* l, const Column& in, const Selection& sel, Column* out) {
  DUET_TRY(too_many(std::max(in.rows(), sel.size())));
  const std::size_t w = in.width();
  char* din = nullptr;
  char* dout = nullptr;
  std::uint32_t* dsel = nullptr;
  Plan plan;
  plan.add(&din, in.rows() * w);
  plan.add(&dsel, sel.size());
  plan.add(&dout, sel.size() * w);
  DUET_TRY(plan.commit(l, 0));
  DUET_TRY(h2d(l, din, in.data(), in.rows() * w));
  DUET_TRY(h2d(l, dsel, sel.data(), sel.size() * sizeof(std::uint32_t)));
  if (w == 8) {
    k_gather8<<<blocks(sel.size()), kThreads, 0, l->stream>>>(reinterpret_cast<const std::uint64_t*>(din), dsel,
                                                             sel.size(), reinterpret_cast<std::uint64_t*>(dout));
  } else {
    k_gather<<<blocks(sel.size() * w), kThreads, 0, l->stream>>>(din, dsel, sel.size(), static_cast<std::uint32_t>(w), dout);
  }
  DUET_TRY(d2h(l, out->data(), dout, sel.size() * w));
  return sync(l);
}

Status derive(Lane* l, Expr::Op op, const Column& a, const Column* b, std::int64_t k, Column* out) {
  const std::size_t n = a.rows();
  DUET_TRY(too_many(n));
  std::int64_t *da = nullptr, *db = nullptr, *dz = nullptr;
  Plan plan;
  plan.add(&da, n);
  plan.add(&db, b ? n : 1);
  plan.add(&dz, n);
  DUET_TRY(plan.commit(l, 0));
  DUET_TRY(h2d(l, da, a.data(), n * 8));
  if (b) DUET_TRY(h2d(l, db, b->data(), n * 8));
  k_derive<<<blocks(n), kThreads, 0, l->stream>>>(op, da, b ? db : nullptr, k, n, dz);
  DUET_TRY(d2h(l, out->data(), dz, n * 8));
  return sync(l);
}

Status aggregate(Lane* l, std::size_t rows, const Selection* sel, std::span<const Column* const> keys,
                 std::span<const BoundAgg> aggs, AggOut* out) {
  DUET_TRY(too_many(rows));
  if (aggs.size() > kMaxAggs) return Status::InvalidArgument("compute: aggregate: at most 16 aggregates on the GPU");
  const std::size_t n = sel ? sel->size() : rows;
  const unsigned nk = static_cast<unsigned>(keys.size()), na = static_cast<unsigned>(aggs.size());
  const std::uint64_t cap = table_capacity(n);
  AggArgs a{};
  a.nk = nk;
  a.na = na;
  a.n = n;
  a.mask = cap - 1;
  // Inputs: each distinct column once.
  std::vector<const Column*> cols;
  for (const Column* c : keys) cols.push_back(c);
  for (const BoundAgg& g : aggs)
    if (g.col) cols.push_back(g.col);
  std::sort(cols.begin(), cols.end());
  cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
  std::vector<std::int64_t*> dcols(cols.size());
  std::uint32_t* dsel = nullptr;
  std::uint8_t* flags = nullptr;
  std::uint32_t* slots = nullptr;
  int* num = nullptr;
  void* temp = nullptr;
  std::size_t temp_bytes = 0;
  DUET_CUDA_TRY(cub::DeviceSelect::Flagged(nullptr, temp_bytes, thrust::counting_iterator<std::uint32_t>(0), flags, slots,
                                           num, static_cast<int>(cap), l->stream));
  Plan plan;
  for (auto& d : dcols) plan.add(&d, rows);
  plan.add(&dsel, sel ? sel->size() : 1);
  plan.add(&a.rep, cap);
  plan.add(&a.acc, cap * std::max(na, 1u));
  plan.add(&flags, cap);
  plan.add(&slots, cap);
  plan.add(&num, 1);
  plan.add(reinterpret_cast<char**>(&temp), temp_bytes);
  DUET_TRY(plan.commit(l, 0));
  auto dev = [&](const Column* c) {
    return dcols[static_cast<std::size_t>(std::lower_bound(cols.begin(), cols.end(), c) - cols.begin())];
  };
  for (std::size_t i = 0; i < cols.size(); ++i) DUET_TRY(h2d(l, dcols[i], cols[i]->data(), rows * 8));
  for (unsigned j = 0; j < nk; ++j) a.keys[j] = dev(keys[j]);
  for (unsigned j = 0; j < na; ++j) {
    a.op[j] = aggs[j].op;
    a.in[j] = aggs[j].col ? dev(aggs[j].col) : nullptr;
  }
  if (sel) {
    DUET_TRY(h2d(l, dsel, sel->data(), sel->size() * sizeof(std::uint32_t)));
    a.sel = dsel;
  }
  DUET_CUDA_TRY(cudaMemsetAsync(a.rep, 0xff, cap * sizeof(std::uint32_t), l->stream));
  if (na) k_agg_init<<<blocks(cap * na), kThreads, 0, l->stream>>>(a);
  k_agg<<<blocks(n), kThreads, 0, l->stream>>>(a);
  k_occupied<<<blocks(cap), kThreads, 0, l->stream>>>(a.rep, cap, flags);
  DUET_CUDA_TRY(cub::DeviceSelect::Flagged(temp, temp_bytes, thrust::counting_iterator<std::uint32_t>(0), flags, slots, num,
                                           static_cast<int>(cap), l->stream));
  int g = 0;
  DUET_TRY(d2h(l, &g, num, sizeof(int)));
  DUET_TRY(sync(l));
  // Order the groups by key: per key column, the order keys of the groups, then an LSD sort.
  std::uint64_t* tk = nullptr;
  std::int64_t *kout = nullptr, *vout = nullptr;
  Plan p2;
  p2.add(&tk, static_cast<std::size_t>(g) * std::max(nk, 1u));
  p2.add(&kout, static_cast<std::size_t>(g) * std::max(nk, 1u));
  p2.add(&vout, static_cast<std::size_t>(g) * std::max(na, 1u));
  DUET_TRY(p2.commit(l, 1));
  std::vector<const std::uint64_t*> tks;
  for (unsigned j = 0; j < nk; ++j) {
    k_group_key<<<blocks(g), kThreads, 0, l->stream>>>(a.keys[j], a.rep, slots, g, tk + std::size_t{j} * g);
    tks.push_back(tk + std::size_t{j} * g);
  }
  std::uint32_t* perm = nullptr;
  DUET_TRY(lsd_sort(l, static_cast<std::size_t>(g), tks, &perm));  // no keys: perm is the identity
  k_agg_out<<<blocks(g), kThreads, 0, l->stream>>>(a, slots, perm, g, kout, vout);
  out->keys.assign(nk, std::vector<std::int64_t>(g));
  out->vals.assign(na, std::vector<std::int64_t>(g));
  for (unsigned j = 0; j < nk; ++j) DUET_TRY(d2h(l, out->keys[j].data(), kout + std::size_t{j} * g, g * 8));
  for (unsigned j = 0; j < na; ++j) DUET_TRY(d2h(l, out->vals[j].data(), vout + std::size_t{j} * g, g * 8));
  return sync(l);
}

Status hash_join(Lane* l, const Column& lk, const Column& rk, JoinPairs* out) {
  const std::size_t nl = lk.rows(), nr = rk.rows();
  DUET_TRY(too_many(std::max(nl, nr)));
  const std::uint64_t cap = table_capacity(nr);
  unsigned bits = 1;
  while ((1ull << bits) < cap) ++bits;
  std::int64_t *dl = nullptr, *dr = nullptr;
  std::uint32_t *rep = nullptr, *cnt = nullptr, *start = nullptr, *slot_of = nullptr, *slot_sorted = nullptr;
  std::uint32_t *iota = nullptr, *rows = nullptr, *lslot = nullptr;
  std::uint64_t *m = nullptr, *off = nullptr;
  void *t1 = nullptr, *t2 = nullptr, *t3 = nullptr;
  std::size_t b1 = 0, b2 = 0, b3 = 0;
  DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, b1, cnt, start, static_cast<int>(cap), l->stream));
  DUET_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, b2, slot_of, slot_sorted, iota, rows, static_cast<int>(nr), 0,
                                                static_cast<int>(bits), l->stream));
  DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, b3, m, off, static_cast<int>(nl + 1), l->stream));
  Plan plan;
  plan.add(&dl, nl);
  plan.add(&dr, nr);
  plan.add(&rep, cap);
  plan.add(&cnt, cap);
  plan.add(&start, cap);
  plan.add(&slot_of, nr);
  plan.add(&slot_sorted, nr);
  plan.add(&iota, nr);
  plan.add(&rows, nr);
  plan.add(&lslot, nl);
  plan.add(&m, nl + 1);
  plan.add(&off, nl + 1);
  plan.add(reinterpret_cast<char**>(&t1), b1);
  plan.add(reinterpret_cast<char**>(&t2), b2);
  plan.add(reinterpret_cast<char**>(&t3), b3);
  DUET_TRY(plan.commit(l, 0));
  DUET_TRY(h2d(l, dl, lk.data(), nl * 8));
  DUET_TRY(h2d(l, dr, rk.data(), nr * 8));
  DUET_CUDA_TRY(cudaMemsetAsync(rep, 0xff, cap * 4, l->stream));
  DUET_CUDA_TRY(cudaMemsetAsync(cnt, 0, cap * 4, l->stream));
  k_join_build<<<blocks(nr), kThreads, 0, l->stream>>>(dr, nr, rep, cnt, slot_of, cap - 1);
  DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(t1, b1, cnt, start, static_cast<int>(cap), l->stream));
  k_iota<<<blocks(nr), kThreads, 0, l->stream>>>(iota, nr);
  // Stable: each slot's rows stay ascending.
  DUET_CUDA_TRY(cub::DeviceRadixSort::SortPairs(t2, b2, slot_of, slot_sorted, iota, rows, static_cast<int>(nr), 0,
                                                static_cast<int>(bits), l->stream));
  k_join_probe<<<blocks(nl), kThreads, 0, l->stream>>>(dl, nl, dr, rep, cnt, cap - 1, lslot, m);
  DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(t3, b3, m, off, static_cast<int>(nl + 1), l->stream));
  std::uint64_t total = 0;
  DUET_TRY(d2h(l, &total, off + nl, 8));
  DUET_TRY(sync(l));
  if (total >= (1ull << 32)) return Status::ResourceExhausted("compute: hash_join: 2^32 or more result pairs");
  std::uint32_t *lo = nullptr, *ro = nullptr;
  Plan p2;
  p2.add(&lo, total);
  p2.add(&ro, total);
  DUET_TRY(p2.commit(l, 1));
  k_join_write<<<blocks(nl), kThreads, 0, l->stream>>>(nl, lslot, off, start, cnt, rows, lo, ro);
  out->left.resize(total);
  out->right.resize(total);
  DUET_TRY(d2h(l, out->left.data(), lo, total * 4));
  DUET_TRY(d2h(l, out->right.data(), ro, total * 4));
  return sync(l);
}

Status index_join(Lane* l, const Column& lk, const Column& rk, bool* sorted, JoinPairs* out) {
  const std::size_t nl = lk.rows(), nr = rk.rows();
  DUET_TRY(too_many(std::max(nl, nr)));
  std::int64_t *dl = nullptr, *dr = nullptr;
  std::uint32_t* lo = nullptr;
  std::uint64_t *m = nullptr, *off = nullptr;
  int* bad = nullptr;
  void* temp = nullptr;
  std::size_t tb = 0;
  DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, tb, m, off, static_cast<int>(nl + 1), l->stream));
  Plan plan;
  plan.add(&dl, nl);
  plan.add(&dr, nr);
  plan.add(&lo, nl);
  plan.add(&m, nl + 1);
  plan.add(&off, nl + 1);
  plan.add(&bad, 1);
  plan.add(reinterpret_cast<char**>(&temp), tb);
  DUET_TRY(plan.commit(l, 0));
  DUET_TRY(h2d(l, dl, lk.data(), nl * 8));
  DUET_TRY(h2d(l, dr, rk.data(), nr * 8));
  DUET_CUDA_TRY(cudaMemsetAsync(bad, 0, sizeof(int), l->stream));
  k_unsorted<<<blocks(nr), kThreads, 0, l->stream>>>(dr, nr, bad);
  k_index_probe<<<blocks(nl), kThreads, 0, l->stream>>>(dl, nl, dr, nr, lo, m);
  DUET_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, tb, m, off, static_cast<int>(nl + 1), l->stream));
  struct {
    std::uint64_t total;
    int bad;
  } h{};
  DUET_TRY(d2h(l, &h.total, off + nl, 8));
  DUET_TRY(d2h(l, &h.bad, bad, sizeof(int)));
  DUET_TRY(sync(l));
  *sorted = h.bad == 0;
  if (!*sorted) return Status::Ok();
  if (h.total >= (1ull << 32)) return Status::ResourceExhausted("compute: index_join: 2^32 or more result pairs");
  std::uint32_t *lout = nullptr, *rout = nullptr;
  Plan p2;
  p2.add(&lout, h.total);
  p2.add(&rout, h.total);
  DUET_TRY(p2.commit(l, 1));
  k_index_write<<<blocks(nl), kThreads, 0, l->stream>>>(nl, lo, m, off, lout, rout);
  out->left.resize(h.total);
  out->right.resize(h.total);
  DUET_TRY(d2h(l, out->left.data(), lout, h.total * 4));
  DUET_TRY(d2h(l, out->right.data(), rout, h.total * 4));
  return sync(l);
}

Status sort(Lane* l, std::size_t rows, std::span<const BoundSortKey> keys, std::size_t limit, Selection* out) {
  DUET_TRY(too_many(rows));
  char* col = nullptr;
  std::uint64_t* tk = nullptr;
  Plan plan;
  plan.add(&col, rows * 8);
  plan.add(&tk, rows * keys.size());
  DUET_TRY(plan.commit(l, 0));
  std::vector<const std::uint64_t*> tks;
  for (std::size_t j = 0; j < keys.size(); ++j) {
    DUET_TRY(h2d(l, col, keys[j].col->data(), rows * keys[j].col->width()));
    k_order<<<blocks(rows), kThreads, 0, l->stream>>>(col, keys[j].col->type(), keys[j].desc, rows, tk + j * rows);
    tks.push_back(tk + j * rows);
  }
  std::uint32_t* perm = nullptr;
  DUET_TRY(lsd_sort(l, rows, tks, &perm));
  const std::size_t want = limit == 0 ? rows : std::min(limit, rows);
  out->resize(want);
  DUET_TRY(d2h(l, out->data(), perm, want * 4));
  return sync(l);
}

Status infer(Lane* l, const Mlp& m, void* handle, std::span<const float> x, std::size_t rows, std::vector<float>* y) {
  const auto* dm = static_cast<const DevModel*>(handle);
  if (!dm) return Status::Internal("compute: infer: the model has no device copy");
  std::size_t widest = m.inputs();
  for (const Dense& d : m.layers) widest = std::max<std::size_t>(widest, d.out);
  float *a = nullptr, *b = nullptr;
  Plan plan;
  plan.add(&a, rows * widest);
  plan.add(&b, rows * widest);
  DUET_TRY(plan.commit(l, 0));
  // Inputs and outputs pass through the lane's page-locked buffer: copies from pageable memory
  // are staged by the driver synchronously, which dominates a small launch.
  const std::size_t xb = x.size() * sizeof(float), yb = rows * m.outputs() * sizeof(float);
  if (std::max(xb, yb) > l->staging_bytes) {
    ::duet::gpu::free_host(l->staging);
    l->staging_bytes = 0;
    const std::size_t want = std::max<std::size_t>(std::max(xb, yb), 1 << 16);
    l->staging = static_cast<char*>(::duet::gpu::alloc_host(want));
    if (!l->staging) return Status::ResourceExhausted("compute: infer: page-locked staging buffer refused");
    l->staging_bytes = want;
  }
  std::memcpy(l->staging, x.data(), xb);
  DUET_TRY(h2d(l, a, l->staging, xb));
  const float one = 1.0f, zero = 0.0f;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const Dense& d = m.layers[i];
    // Row-major Y[rows][out] = X[rows][in] W^T is column-major Y^T = W X^T (W row-major is W^T
    // column-major, hence OP_T).
    DUET_BLAS_TRY(cublasSgemm(l->blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(d.out), static_cast<int>(rows),
                              static_cast<int>(d.in), &one, dm->w[i], static_cast<int>(d.in), a, static_cast<int>(d.in),
                              &zero, b, static_cast<int>(d.out)));
    k_bias_act<<<blocks(rows * d.out), kThreads, 0, l->stream>>>(b, dm->b[i], rows, d.out, d.act);
    std::swap(a, b);
  }
  DUET_TRY(d2h(l, l->staging, a, yb));
  DUET_TRY(sync(l));
  y->resize(rows * m.outputs());
  std::memcpy(y->data(), l->staging, yb);
  return Status::Ok();
}

}  // namespace duet::compute::detail::gpu
