// The GPU side of the L-Slab benchmark: bandwidth probes, then duet-gpu with batches resident
// in GPU memory and end to end from host memory.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "gpu/device.hpp"
#include "gpu_driver.hpp"
#include "index/lslab/map.hpp"
#include "workload.hpp"

namespace duet::bench::lslab {
namespace {

using duet::lslab::Batch;
using duet::lslab::BatchResult;
using duet::lslab::Op;
using duet::lslab::OpStatus;
using Clock = std::chrono::steady_clock;

#define BENCH_CUDA_TRY(expr)                                                                   \
  do {                                                                                         \
    cudaError_t bench_e = (expr);                                                              \
    if (bench_e != cudaSuccess) {                                                              \
      cudaGetLastError();                                                                      \
      return duet::Status::Internal(std::string(#expr) + ": " + cudaGetErrorString(bench_e)); \
    }                                                                                          \
  } while (0)

/// A cudaMalloc'd array of n T, freed on destruction. alloc() reports failure as a Status.
template <class T>
class DeviceArray {
 public:
  DeviceArray() = default;
  ~DeviceArray() { cudaFree(p_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  duet::Status alloc(std::size_t n) {
    cudaFree(p_);
    p_ = nullptr;
    BENCH_CUDA_TRY(cudaMalloc(&p_, std::max<std::size_t>(n, 1) * sizeof(T)));
    return duet::Status::Ok();
  }
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
};

/// A pair of CUDA events timing work on the default stream.
class EventTimer {
 public:
  EventTimer() {
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
  }
  ~EventTimer() {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start() { cudaEventRecord(start_); }
  /// Waits for the work since start() and returns its seconds, or a negative value on error.
  double stop() {
    cudaEventRecord(stop_);
    if (cudaEventSynchronize(stop_) != cudaSuccess) return -1;
    float ms = 0;
    cudaEventElapsedTime(&ms, start_, stop_);
    return ms * 1e-3;
  }

 private:
  cudaEvent_t start_{}, stop_{};
};

// ---------------------------------------------------------------------------------------------
// Bandwidth probes.

/// Murmur3's 32-bit finaliser: spreads the bits of a counter into a random-looking index.
__device__ __forceinline__ std::uint32_t fmix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

constexpr int kProbeUnroll = 8;  // independent loads in flight per thread

/// Reads `iters` random 32-byte sectors of buf (sectors of 32 bytes, sectors <= 2^32) per lane
/// pair: the two lanes of a pair each load one 16-byte half of the same sector, bypassing L1,
/// so every sector fetched from DRAM is used whole. Writes to sink only to keep the loads.
__global__ void random_sector_read_kernel(const uint4* __restrict__ buf, std::uint64_t sectors, unsigned iters,
                                          std::uint32_t seed, uint4* sink) {
  const std::uint64_t tid = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x;
  const std::uint32_t pair = static_cast<std::uint32_t>(tid >> 1);
  const unsigned half = static_cast<unsigned>(tid & 1);
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (unsigned it = 0; it < iters; it += kProbeUnroll) {
    uint4 v[kProbeUnroll];
#pragma unroll
    for (int u = 0; u < kProbeUnroll; ++u) {
      const std::uint32_t h = fmix32(pair * 0x9e3779b9u ^ fmix32((it + u) ^ seed));
      const std::uint64_t s = (static_cast<std::uint64_t>(h) * sectors) >> 32;
      v[u] = __ldcg(buf + 2 * s + half);
    }
#pragma unroll
    for (int u = 0; u < kProbeUnroll; ++u) {
      acc.x ^= v[u].x;
      acc.y ^= v[u].y;
      acc.z ^= v[u].z;
      acc.w ^= v[u].w;
    }
  }
  if ((acc.x & acc.y & acc.z & acc.w) == 0xffffffffu) sink[tid & 1023] = acc;
}

constexpr unsigned kProbeReps = 5;

/// Times a cudaMemcpy of `bytes` from one device buffer to another; counts bytes read plus
/// written. Median of kProbeReps after one warm-up.
duet::Status probe_d2d_copy(std::uint64_t bytes, Record* rec) {
  DeviceArray<unsigned char> src, dst;
  duet::Status s = src.alloc(bytes);
  if (s.ok()) s = dst.alloc(bytes);
  if (!s.ok()) return s;
  BENCH_CUDA_TRY(cudaMemset(src.get(), 1, bytes));
  BENCH_CUDA_TRY(cudaMemcpy(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));
  std::vector<double> rates;
  EventTimer t;
  for (unsigned rep = 0; rep < kProbeReps; ++rep) {
    t.start();
    BENCH_CUDA_TRY(cudaMemcpy(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice));
    const double sec = t.stop();
    BENCH_CUDA_TRY(cudaGetLastError());
    if (sec <= 0) return duet::Status::Internal("d2d copy: event timing failed");
    rates.push_back(2.0 * static_cast<double>(bytes) / sec);
  }
  rec->bytes_per_s = summarize(rates).median;
  rec->probe_bytes = 2 * bytes;
  rec->reps = kProbeReps;
  return duet::Status::Ok();
}

/// Times random_sector_read_kernel over a buffer of `bytes` (rounded down to 32-byte sectors);
/// bytes/s counts 32 bytes per sector read. Median of kProbeReps after one warm-up.
duet::Status probe_random_read(std::uint64_t bytes, Record* rec) {
  const gpu::DeviceInfo& dev = gpu::device();
  const std::uint64_t sectors = std::min<std::uint64_t>(bytes / 32, std::uint64_t(1) << 32);
  DeviceArray<uint4> buf, sink;
  duet::Status s = buf.alloc(sectors * 2);
  if (s.ok()) s = sink.alloc(1024);
  if (!s.ok()) return s;
  BENCH_CUDA_TRY(cudaMemset(buf.get(), 0x5a, sectors * 32));
  const int threads = 256;
  const int blocks = dev.sm_count * (2048 / threads);  // a full load of resident threads
  const unsigned iters = 1024;
  const double moved = static_cast<double>(blocks) * threads / 2 * iters * 32;  // sectors per run x 32 B
  std::vector<double> rates;
  EventTimer t;
  for (unsigned rep = 0; rep <= kProbeReps; ++rep) {
    t.start();
    random_sector_read_kernel<<<blocks, threads>>>(buf.get(), sectors, iters, 0x9e37u + rep, sink.get());
    BENCH_CUDA_TRY(cudaGetLastError());
    const double sec = t.stop();
    BENCH_CUDA_TRY(cudaGetLastError());
    if (sec <= 0) return duet::Status::Internal("random-read probe: event timing failed");
    if (rep > 0) rates.push_back(moved / sec);  // rep 0 is the warm-up
  }
  rec->bytes_per_s = summarize(rates).median;
  rec->probe_bytes = static_cast<std::uint64_t>(moved);
  rec->reps = kProbeReps;
  return duet::Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// The DRAM traffic model behind fraction_of_random_access_limit.
//
// Estimated DRAM bytes per operation on a map of slab width W, assuming every random access
// misses L2 (roughly so from R = 2^22, whose head slabs take 85 MB and up against an L2 of
// 50-60 MB; for smaller maps the fraction overstates DRAM traffic) and ignoring overflow slabs
// (a minority of keys at load factors <= 0.9):
//   key line     W * 8 bytes (the slab's key c-object: 64, 128 or 256 B), at least one 32 B sector;
//   value        one 32 B sector of the value c-object, read once the key matched;
//   request      the request's own streamed bytes: op 1 + key 8 + result value 8 + status 1 = 18 B,
//                plus the 8 B input value for a PUT;
//   PUT, DELETE  also one written 32 B sector (the value for PUT, the key slot for DELETE) and
//                two atomics on the bucket's lock word (lock, unlock), one 32 B sector each;
//   MIX          the mean of GET and PUT.
// The probe's random 32 B sector reads are the ceiling this is compared against, so a
// fraction near 1 means the map runs at the GPU's random-access limit.
double bytes_per_op_estimate(BenchOp op, unsigned width) {
  const double sector = 32;
  const double key_line = std::max(sector, width * 8.0);
  const double get = key_line + sector + 18;
  const double update_extra = sector + 2 * sector;
  switch (op) {
    case BenchOp::kGet: return get;
    case BenchOp::kPut: return get + 8 + update_extra;
    case BenchOp::kDelete: return get + update_extra;
    case BenchOp::kMix: return get + (8 + update_extra) / 2;
  }
  return get;
}

// ---------------------------------------------------------------------------------------------
// Map runs.

/// Device and host arrays for every run of one map, sized for the largest configuration.
struct GpuBuffers {
  std::size_t capacity = 0;  ///< requests the arrays hold
  DeviceArray<Op> ops, put_ops, get_ops;
  DeviceArray<std::uint64_t> keys, values, out, reinsert_out;
  DeviceArray<OpStatus> status, reinsert_status;
  Requests host_req;
  std::vector<Op> host_get_ops;
  std::vector<OpStatus> host_status, host_reinsert_status;
  std::vector<std::uint64_t> host_out;

  duet::Status init(std::size_t n, std::size_t max_batch) {
    capacity = n;
    for (DeviceArray<Op>* a : {&ops, &put_ops, &get_ops}) {
      duet::Status s = a->alloc(n);
      if (!s.ok()) return s;
    }
    for (DeviceArray<std::uint64_t>* a : {&keys, &values, &out, &reinsert_out}) {
      duet::Status s = a->alloc(n);
      if (!s.ok()) return s;
    }
    for (DeviceArray<OpStatus>* a : {&status, &reinsert_status}) {
      duet::Status s = a->alloc(n);
      if (!s.ok()) return s;
    }
    std::vector<Op> fill(max_batch, Op::kPut);
    BENCH_CUDA_TRY(cudaMemcpy(put_ops.get(), fill.data(), max_batch * sizeof(Op), cudaMemcpyHostToDevice));
    fill.assign(max_batch, Op::kGet);
    BENCH_CUDA_TRY(cudaMemcpy(get_ops.get(), fill.data(), max_batch * sizeof(Op), cudaMemcpyHostToDevice));
    host_req.reserve(n);
    host_get_ops = std::move(fill);
    host_status.resize(n);
    host_reinsert_status.resize(n);
    host_out.resize(n);
    return duet::Status::Ok();
  }

  /// Copies the first n generated requests to the device arrays.
  duet::Status upload(std::size_t n) {
    BENCH_CUDA_TRY(cudaMemcpy(ops.get(), host_req.ops.data(), n * sizeof(Op), cudaMemcpyHostToDevice));
    BENCH_CUDA_TRY(cudaMemcpy(keys.get(), host_req.keys.data(), n * 8, cudaMemcpyHostToDevice));
    BENCH_CUDA_TRY(cudaMemcpy(values.get(), host_req.values.data(), n * 8, cudaMemcpyHostToDevice));
    return duet::Status::Ok();
  }
};

/// Counts statuses other than `want` among the first n of a device array.
duet::Status count_wrong(const OpStatus* d_status, std::size_t n, OpStatus want, std::vector<OpStatus>* host,
                         std::uint64_t* wrong) {
  BENCH_CUDA_TRY(cudaMemcpy(host->data(), d_status, n * sizeof(OpStatus), cudaMemcpyDeviceToHost));
  *wrong += static_cast<std::uint64_t>(n) - std::count(host->begin(), host->begin() + n, want);
  return duet::Status::Ok();
}

/// Inserts the resident keys of ks through execute_resident, in chunks of buf->capacity.
duet::Status prefill(duet::lslab::Map* map, const Keyspace& ks, GpuBuffers* buf) {
  const std::uint64_t chunk = std::min<std::uint64_t>(ks.size(), buf->capacity);
  for (std::uint64_t begin = 0; begin < ks.size(); begin += chunk) {
    const std::uint64_t end = std::min(ks.size(), begin + chunk);
    const std::size_t n = static_cast<std::size_t>(end - begin);
    generate_prefill(ks, begin, end, &buf->host_req);
    duet::Status s = buf->upload(n);
    if (!s.ok()) return s;
    Batch b{buf->ops.get(), buf->keys.get(), buf->values.get(), n};
    BatchResult r{buf->status.get(), buf->out.get()};
    s = map->execute_resident(b, r);
    if (!s.ok()) return s;
    std::uint64_t wrong = 0;
    s = count_wrong(buf->status.get(), n, OpStatus::kNotFound, &buf->host_status, &wrong);
    if (!s.ok()) return s;
    if (wrong) return duet::Status::Internal("prefill: " + std::to_string(wrong) + " new keys reported present");
  }
  return duet::Status::Ok();
}

/// Times o.reps repetitions of the uploaded requests (n, in batches of `batch`), either with
/// device arrays (resident) or host arrays (end to end), into rec. DELETE batches are put
/// back untimed through execute_resident.
duet::Status measure(duet::lslab::Map* map, BenchOp op, std::size_t n, std::size_t batch, bool resident,
                     const Options& o, GpuBuffers* buf, Record* rec) {
  // Warm-up: one GET batch, so pool headroom and the map's pinned staging for this batch size
  // are allocated before timing.
  {
    Batch b{resident ? buf->get_ops.get() : buf->host_get_ops.data(),
            resident ? buf->keys.get() : buf->host_req.keys.data(), nullptr, batch};
    BatchResult r{resident ? buf->status.get() : buf->host_status.data(),
                  resident ? buf->out.get() : buf->host_out.data()};
    duet::Status s = resident ? map->execute_resident(b, r) : map->execute(b, r);
    if (!s.ok()) return s;
  }
  std::vector<double> samples;
  for (unsigned rep = 0; rep < o.reps; ++rep) {
    Clock::duration timed{};
    for (std::size_t off = 0; off < n; off += batch) {
      duet::Status s;
      if (resident) {
        Batch b{buf->ops.get() + off, buf->keys.get() + off, buf->values.get() + off, batch};
        BatchResult r{buf->status.get() + off, buf->out.get() + off};
        const auto t0 = Clock::now();
        s = map->execute_resident(b, r);
        timed += Clock::now() - t0;
      } else {
        Batch b{buf->host_req.ops.data() + off, buf->host_req.keys.data() + off, buf->host_req.values.data() + off,
                batch};
        BatchResult r{buf->host_status.data() + off, buf->host_out.data() + off};
        const auto t0 = Clock::now();
        s = map->execute(b, r);
        timed += Clock::now() - t0;
      }
      if (!s.ok()) return s;
      if (op == BenchOp::kDelete) {
        Batch rb{buf->put_ops.get(), buf->keys.get() + off, buf->values.get() + off, batch};
        BatchResult rr{buf->reinsert_status.get() + off, buf->reinsert_out.get() + off};
        s = map->execute_resident(rb, rr);
        if (!s.ok()) return duet::Status(s.code(), "re-insert: " + s.message());
      }
    }
    BENCH_CUDA_TRY(cudaGetLastError());
    // Every request targets a resident key: all must be found; every re-insert is new.
    if (resident) {
      duet::Status s = count_wrong(buf->status.get(), n, OpStatus::kFound, &buf->host_status, &rec->wrong_status);
      if (!s.ok()) return s;
    } else {
      rec->wrong_status += static_cast<std::uint64_t>(n) -
                           std::count(buf->host_status.begin(), buf->host_status.begin() + n, OpStatus::kFound);
    }
    if (op == BenchOp::kDelete) {
      duet::Status s = count_wrong(buf->reinsert_status.get(), n, OpStatus::kNotFound, &buf->host_reinsert_status,
                                   &rec->wrong_status);
      if (!s.ok()) return s;
    }
    samples.push_back(static_cast<double>(n) / std::chrono::duration<double>(timed).count());
  }
  rec->ops_per_s = summarize(samples);
  return duet::Status::Ok();
}

}  // namespace

duet::Status run_gpu_benchmark(const Options& o, std::vector<Record>* records, std::string* device_name) {
  const gpu::DeviceInfo& dev = gpu::device();
  if (!dev.present) return duet::Status::Unavailable("no GPU: " + dev.reason);
  *device_name = dev.name;
  std::fprintf(stderr, "%s: %d SMs, %.1f GiB, L2 %.1f MiB\n", dev.name.c_str(), dev.sm_count,
               dev.global_bytes / double(1u << 30), dev.l2_bytes / double(1u << 20));

  // Probes first, on an empty GPU.
  Record copy;
  copy.system = "probe";
  copy.op = "d2d_copy";
  duet::Status s = probe_d2d_copy(o.copy_bytes, &copy);
  if (!s.ok()) copy.error = s.to_string();
  std::fprintf(stderr, "%s\n", progress_line(copy, 0, 0).c_str());
  records->push_back(copy);
  Record rnd;
  rnd.system = "probe";
  rnd.op = "random_32B_read";
  if (o.probe_bytes < 8 * static_cast<std::uint64_t>(dev.l2_bytes))
    std::fprintf(stderr, "warning: the random-access probe buffer is under 8x the L2 size\n");
  s = probe_random_read(o.probe_bytes, &rnd);
  if (!s.ok()) rnd.error = s.to_string();
  std::fprintf(stderr, "%s\n", progress_line(rnd, 0, 0).c_str());
  records->push_back(rnd);
  const double random_limit = rnd.error.empty() ? rnd.bytes_per_s : 0;

  std::size_t max_batch = 0, max_requests = 0, total = 0;
  for (std::uint64_t b : o.batches) {
    max_batch = std::max<std::size_t>(max_batch, b);
    max_requests = std::max(max_requests, requests_per_rep(b, o.min_ops_per_rep));
  }
  for (std::uint64_t r : o.resident)
    for (BenchOp op : o.ops)
      for (std::uint64_t b : o.batches)
        if (!(op == BenchOp::kDelete && b > r)) total += 2 * o.widths.size() * o.loads.size();

  GpuBuffers buf;
  s = buf.init(max_requests, max_batch);
  if (!s.ok()) return s;
  std::size_t done = 0;
  for (unsigned width : o.widths) {
    for (std::uint64_t r : o.resident) {
      const Keyspace ks(r, o.seed);
      for (double load : o.loads) {
        Record proto;
        proto.system = "duet-gpu";
        proto.resident = r;
        proto.load_factor = load;
        proto.reps = o.reps;
        proto.slab_width = width;

        duet::lslab::Config c;
        c.expected_keys = r;
        c.load_factor = load;
        std::unique_ptr<duet::lslab::Map> map;
        const auto t0 = Clock::now();
        s = duet::lslab::make_gpu_map(c, &map, width);
        if (s.ok()) s = prefill(map.get(), ks, &buf);
        const std::string setup_error = s.ok() ? "" : "setup: " + s.to_string();
        std::fprintf(stderr, "duet-gpu w%u %s: built and prefilled in %.1f s%s%s\n", width, proto.workload().c_str(),
                     std::chrono::duration<double>(Clock::now() - t0).count(), setup_error.empty() ? "" : ", FAILED: ",
                     setup_error.c_str());

        for (BenchOp op : o.ops) {
          for (std::uint64_t b : o.batches) {
            if (op == BenchOp::kDelete && b > r) {
              std::fprintf(stderr, "  skip delete batch %llu: a DELETE batch needs that many distinct resident keys\n",
                           static_cast<unsigned long long>(b));
              continue;
            }
            const std::size_t n = requests_per_rep(static_cast<std::size_t>(b), o.min_ops_per_rep);
            std::string gen_error = setup_error;
            if (gen_error.empty()) {  // generated on the host once, shared by both modes and all reps
              generate_requests(ks, op, n, static_cast<std::size_t>(b), rep_seed(o.seed, r, op, b, 0), &buf.host_req);
              s = buf.upload(n);
              if (!s.ok()) gen_error = s.to_string();
            }
            for (bool resident : {true, false}) {
              Record rec = proto;
              rec.op = bench_op_name(op);
              rec.batch = b;
              rec.ops_per_rep = n;
              rec.mode = resident ? "resident" : "end_to_end";
              rec.bytes_per_op_estimate = bytes_per_op_estimate(op, width);
              rec.error = gen_error;
              if (rec.error.empty()) {
                s = measure(map.get(), op, n, static_cast<std::size_t>(b), resident, o, &buf, &rec);
                if (!s.ok()) rec.error = s.to_string();
              }
              if (random_limit > 0)
                rec.fraction_of_random_access_limit = rec.ops_per_s.median * rec.bytes_per_op_estimate / random_limit;
              std::fprintf(stderr, "%s\n", progress_line(rec, ++done, total).c_str());
              records->push_back(std::move(rec));
            }
          }
        }
        map.reset();  // free this map before the next is built
      }
    }
  }
  return duet::Status::Ok();
}

}  // namespace duet::bench::lslab
