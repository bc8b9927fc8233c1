// The column mirror's device copy (internal.hpp, MirrorCopy): row arrays kept in GPU memory by
// incremental copies, and one kernel that filters the rows visible at a start and aggregates them
// by a small group key. Each block accumulates into shared memory (a count and one value per
// aggregate per group), then folds its partial into the global result with atomics; sums wrap
// modulo 2^64 as on the CPU, so results are bit-identical.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "compute/internal.hpp"
#include "gpu/cuda_try.hpp"
#include "gpu/device_buffer.hpp"

namespace duet::compute::detail::gpu {

struct MirrorCopy {
  cudaStream_t stream = nullptr;
  std::size_t ncols = 0;
  std::uint64_t cap = 0;  ///< rows the arrays hold
  std::uint64_t* begin = nullptr;
  std::uint64_t* end = nullptr;
  std::int64_t* cols = nullptr;  ///< column c at cols + c * cap
  ::duet::gpu::DeviceBuffer<std::uint64_t> end_rows, end_ts;
  ::duet::gpu::DeviceBuffer<unsigned long long> counts;
  ::duet::gpu::DeviceBuffer<long long> acc;
  ::duet::gpu::DeviceBuffer<int> flag;
  int sms = 1;
  ~MirrorCopy() {
    cudaFree(begin);
    cudaFree(end);
    cudaFree(cols);
    if (stream) cudaStreamDestroy(stream);
  }
  // Grows the arrays to hold `rows`, keeping their contents (doubling, so appends cost amortised
  // one copy each).
  Status reserve(std::uint64_t rows) {
    if (rows <= cap) return Status::Ok();
    std::uint64_t want = cap ? cap : (std::uint64_t{1} << 16);
    while (want < rows) want *= 2;
    std::uint64_t *nb = nullptr, *ne = nullptr;
    std::int64_t* nc = nullptr;
    auto fail = [&](cudaError_t e, const char* what) {
      cudaFree(nb);
      cudaFree(ne);
      cudaFree(nc);
      cudaGetLastError();
      return ::duet::gpu::cuda_status(e, what);
    };
    if (cudaError_t e = cudaMalloc(&nb, want * 8); e != cudaSuccess) return fail(e, "cudaMalloc(mirror begin)");
    if (cudaError_t e = cudaMalloc(&ne, want * 8); e != cudaSuccess) return fail(e, "cudaMalloc(mirror end)");
    if (cudaError_t e = cudaMalloc(&nc, want * 8 * std::max<std::size_t>(ncols, 1)); e != cudaSuccess)
      return fail(e, "cudaMalloc(mirror columns)");
    if (cap) {
      DUET_CUDA_TRY(cudaMemcpyAsync(nb, begin, cap * 8, cudaMemcpyDeviceToDevice, stream));
      DUET_CUDA_TRY(cudaMemcpyAsync(ne, end, cap * 8, cudaMemcpyDeviceToDevice, stream));
      for (std::size_t c = 0; c < ncols; ++c)
        DUET_CUDA_TRY(cudaMemcpyAsync(nc + c * want, cols + c * cap, cap * 8, cudaMemcpyDeviceToDevice, stream));
      DUET_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    cudaFree(begin);
    cudaFree(end);
    cudaFree(cols);
    begin = nb;
    end = ne;
    cols = nc;
    cap = want;
    return Status::Ok();
  }
};

namespace {

constexpr unsigned kThreads = 256;

struct KPred {
  int col, cmp;
  long long lo, hi;
};
struct KAgg {
  int op, col;
};
struct KArgs {
  KPred preds[kMirrorMaxTerms];
  KAgg aggs[kMirrorMaxTerms];
  int npreds, naggs, gcol, groups;
  unsigned long long start;
  unsigned long long rows, stride;
};

__device__ __forceinline__ bool passes(long long x, const KPred& p) {
  switch (p.cmp) {
    case static_cast<int>(Cmp::kLt): return x < p.lo;
    case static_cast<int>(Cmp::kLe): return x <= p.lo;
    case static_cast<int>(Cmp::kEq): return x == p.lo;
    case static_cast<int>(Cmp::kNe): return x != p.lo;
    case static_cast<int>(Cmp::kGe): return x >= p.lo;
    case static_cast<int>(Cmp::kGt): return x > p.lo;
    default: return x >= p.lo && x <= p.hi;
  }
}

__device__ __forceinline__ long long agg_identity(int op) {
  return op == Agg::kMin ? LLONG_MAX : op == Agg::kMax ? LLONG_MIN : 0;
}

__global__ void init_acc(unsigned long long* counts, long long* acc, KArgs a) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.groups * (a.naggs + 1); i += gridDim.x * blockDim.x) {
    if (i < a.groups) counts[i] = 0;
    else acc[i - a.groups] = agg_identity(a.aggs[(i - a.groups) % a.naggs].op);
  }
}

__global__ void aggregate_kernel(const unsigned long long* __restrict__ begin, const unsigned long long* __restrict__ end,
                                 const long long* __restrict__ cols, KArgs a, unsigned long long* counts, long long* acc,
                                 int* out_of_range) {
  extern __shared__ long long sh[];
  unsigned long long* sc = reinterpret_cast<unsigned long long*>(sh);
  long long* sa = sh + a.groups;
  for (int i = threadIdx.x; i < a.groups * (a.naggs + 1); i += blockDim.x) {
    if (i < a.groups) sc[i] = 0;
    else sa[i - a.groups] = agg_identity(a.aggs[(i - a.groups) % a.naggs].op);
  }
  __syncthreads();
  for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x; i < a.rows;
       i += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
    if (begin[i] > a.start || end[i] <= a.start) continue;
    bool ok = true;
    for (int p = 0; p < a.npreds && ok; ++p) ok = passes(cols[a.preds[p].col * a.stride + i], a.preds[p]);
    if (!ok) continue;
    int g = 0;
    if (a.gcol >= 0) {
      const long long v = cols[a.gcol * a.stride + i];
      if (v < 0 || v >= a.groups) {
        *out_of_range = 1;
        continue;
      }
      g = static_cast<int>(v);
    }
    atomicAdd(&sc[g], 1ull);
    for (int k = 0; k < a.naggs; ++k) {
      long long* dst = &sa[g * a.naggs + k];
      if (a.aggs[k].op == Agg::kCount) {
        atomicAdd(reinterpret_cast<unsigned long long*>(dst), 1ull);
        continue;
      }
      const long long x = cols[a.aggs[k].col * a.stride + i];
      if (a.aggs[k].op == Agg::kSum) atomicAdd(reinterpret_cast<unsigned long long*>(dst), static_cast<unsigned long long>(x));
      else if (a.aggs[k].op == Agg::kMin) atomicMin(dst, x);
      else atomicMax(dst, x);
    }
  }
  __syncthreads();
  for (int g = threadIdx.x; g < a.groups; g += blockDim.x) {
    if (sc[g] == 0) continue;
    atomicAdd(&counts[g], sc[g]);
    for (int k = 0; k < a.naggs; ++k) {
      const long long x = sa[g * a.naggs + k];
      long long* dst = &acc[g * a.naggs + k];
      if (a.aggs[k].op == Agg::kMin) atomicMin(dst, x);
      else if (a.aggs[k].op == Agg::kMax) atomicMax(dst, x);
      else atomicAdd(reinterpret_cast<unsigned long long*>(dst), static_cast<unsigned long long>(x));
    }
  }
}

__global__ void set_ends_kernel(unsigned long long* end, const unsigned long long* rows, const unsigned long long* ts,
                                std::size_t n, unsigned long long cap) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (ts[i] != 0 && rows[i] < cap) end[rows[i]] = ts[i];
}

}  // namespace

Status mirror_create(std::size_t ncols, MirrorCopy** out) {
  auto* m = new MirrorCopy;
  m->ncols = ncols;
  if (cudaError_t e = cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking); e != cudaSuccess) {
    cudaGetLastError();
    delete m;
    return ::duet::gpu::cuda_status(e, "cudaStreamCreate(mirror)");
  }
  int dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&m->sms, cudaDevAttrMultiProcessorCount, dev);
  *out = m;
  return Status::Ok();
}

void mirror_destroy(MirrorCopy* m) { delete m; }

Status mirror_put(MirrorCopy* m, std::uint64_t first, std::size_t n, const std::uint64_t* begin,
                  const std::uint64_t* end, const std::int64_t* const* cols) {
  if (n == 0) return Status::Ok();
  if (Status s = m->reserve(first + n); !s.ok()) return s;
  if (begin == nullptr) {
    DUET_CUDA_TRY(cudaMemsetAsync(m->begin + first, 0xff, n * 8, m->stream));
  } else {
    DUET_CUDA_TRY(cudaMemcpyAsync(m->begin + first, begin, n * 8, cudaMemcpyHostToDevice, m->stream));
    DUET_CUDA_TRY(cudaMemcpyAsync(m->end + first, end, n * 8, cudaMemcpyHostToDevice, m->stream));
    for (std::size_t c = 0; c < m->ncols; ++c)
      DUET_CUDA_TRY(cudaMemcpyAsync(m->cols + c * m->cap + first, cols[c], n * 8, cudaMemcpyHostToDevice, m->stream));
  }
  return Status::Ok();
}

Status mirror_set_ends(MirrorCopy* m, const std::uint64_t* rows, const std::uint64_t* ts, std::size_t n) {
  if (n == 0) return Status::Ok();
  if (Status s = m->end_rows.reserve(n); !s.ok()) return s;
  if (Status s = m->end_ts.reserve(n); !s.ok()) return s;
  DUET_CUDA_TRY(cudaMemcpyAsync(m->end_rows.data(), rows, n * 8, cudaMemcpyHostToDevice, m->stream));
  DUET_CUDA_TRY(cudaMemcpyAsync(m->end_ts.data(), ts, n * 8, cudaMemcpyHostToDevice, m->stream));
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 4096));
  set_ends_kernel<<<blocks, kThreads, 0, m->stream>>>(reinterpret_cast<unsigned long long*>(m->end),
                                                      reinterpret_cast<const unsigned long long*>(m->end_rows.data()),
                                                      reinterpret_cast<const unsigned long long*>(m->end_ts.data()), n, m->cap);
  DUET_CUDA_TRY(cudaGetLastError());
  return Status::Ok();
}

Status mirror_aggregate(MirrorCopy* m, std::uint64_t rows, std::uint64_t start, std::span<const MirrorPred> preds,
                        int group_col, std::size_t groups, std::span<const MirrorAgg> aggs,
                        std::vector<std::int64_t>* counts, std::vector<std::int64_t>* acc, bool* out_of_range) {
  if (preds.size() > kMirrorMaxTerms || aggs.size() > kMirrorMaxTerms)
    return Status::InvalidArgument("mirror: at most 8 predicates and 8 aggregates");
  KArgs a{};
  for (std::size_t i = 0; i < preds.size(); ++i)
    a.preds[i] = {preds[i].col, static_cast<int>(preds[i].cmp), preds[i].lo, preds[i].hi};
  for (std::size_t i = 0; i < aggs.size(); ++i) a.aggs[i] = {static_cast<int>(aggs[i].op), aggs[i].col};
  a.npreds = static_cast<int>(preds.size());
  a.naggs = static_cast<int>(aggs.size());
  a.gcol = group_col;
  a.groups = static_cast<int>(groups);
  a.start = start;
  a.rows = std::min<std::uint64_t>(rows, m->cap);
  a.stride = m->cap;
  const std::size_t na = aggs.size();
  if (Status s = m->counts.reserve(groups); !s.ok()) return s;
  if (Status s = m->acc.reserve(std::max<std::size_t>(groups * na, 1)); !s.ok()) return s;
  if (Status s = m->flag.reserve(1); !s.ok()) return s;
  DUET_CUDA_TRY(cudaMemsetAsync(m->flag.data(), 0, sizeof(int), m->stream));
  init_acc<<<std::max<unsigned>(1, static_cast<unsigned>((groups * (na + 1) + kThreads - 1) / kThreads)), kThreads, 0,
             m->stream>>>(m->counts.data(), m->acc.data(), a);
  DUET_CUDA_TRY(cudaGetLastError());
  if (a.rows > 0) {
    const std::size_t shared = groups * (na + 1) * 8;
    const unsigned blocks = static_cast<unsigned>(
        std::min<std::uint64_t>((a.rows + kThreads - 1) / kThreads, static_cast<std::uint64_t>(m->sms) * 8));
    aggregate_kernel<<<blocks, kThreads, shared, m->stream>>>(
        reinterpret_cast<const unsigned long long*>(m->begin), reinterpret_cast<const unsigned long long*>(m->end),
        reinterpret_cast<const long long*>(m->cols), a, m->counts.data(), m->acc.data(), m->flag.data());
    DUET_CUDA_TRY(cudaGetLastError());
  }
  counts->resize(groups);
  acc->resize(groups * na);
  int flag = 0;
  DUET_CUDA_TRY(cudaMemcpyAsync(counts->data(), m->counts.data(), groups * 8, cudaMemcpyDeviceToHost, m->stream));
  if (na) DUET_CUDA_TRY(cudaMemcpyAsync(acc->data(), m->acc.data(), groups * na * 8, cudaMemcpyDeviceToHost, m->stream));
  DUET_CUDA_TRY(cudaMemcpyAsync(&flag, m->flag.data(), sizeof(int), cudaMemcpyDeviceToHost, m->stream));
  DUET_CUDA_TRY(cudaStreamSynchronize(m->stream));
  *out_of_range = flag != 0;
  for (std::size_t g = 0; g < groups; ++g)
    if ((*counts)[g] == 0)
      for (std::size_t k = 0; k < na; ++k) (*acc)[g * na + k] = 0;  // min/max of no rows: 0, as the CPU's
  return Status::Ok();
}

}  // namespace duet::compute::detail::gpu
