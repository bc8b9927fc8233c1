// An example procedure library with a GPU kernel ("gpusum"), built with nvcc.
//
//   FCALL_RO gpu_sum 0 first last      the sum of the 8-byte little-endian int64 values of the
//                                      keys in [first, last], at the transaction's snapshot
//
// It reads the range with SNAPSHOT, decodes it into a typed column through the row codec, and
// on a machine with a GPU copies the column to the device and sums it with a kernel launched on
// the call's pooled stream (duet_gpu_stream), synchronising that stream before it returns (no
// CPU/GPU overlap within a transaction). The kernel registers with the CUDA runtime when the
// library is loaded, as in any CUDA shared object. Without a GPU (duet_gpu_stream answers
// DUET_ERR_UNAVAILABLE) it sums on the CPU: the same answer.
//
// Build (from the repository root):
//   nvcc -std=c++17 -O2 -arch=sm_90 -shared -Xcompiler -fPIC,-fvisibility=hidden -Iinclude \
//        -o /srv/duet-procedures/gpu_sum.so examples/procedures/gpu_sum.cu
#include <cuda_runtime.h>

#include <cstdint>

#include "duet/procedure.h"

namespace {

__global__ void sum_kernel(const long long* v, std::size_t n, unsigned long long* out) {
  unsigned long long s = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += static_cast<unsigned long long>(v[i]);
  atomicAdd(out, s);  // wrapping sum, as the CPU path's
}

/// Sums n values on the GPU on `stream`; false when a CUDA call fails.
bool gpu_sum(const long long* host, std::size_t n, cudaStream_t stream, long long* result) {
  long long* dv = nullptr;
  unsigned long long* dsum = nullptr;
  unsigned long long sum = 0;
  bool ok = cudaMallocAsync(reinterpret_cast<void**>(&dv), n * sizeof(long long) + 8, stream) == cudaSuccess &&
            cudaMallocAsync(reinterpret_cast<void**>(&dsum), sizeof sum, stream) == cudaSuccess &&
            cudaMemcpyAsync(dv, host, n * sizeof(long long), cudaMemcpyHostToDevice, stream) == cudaSuccess &&
            cudaMemsetAsync(dsum, 0, sizeof sum, stream) == cudaSuccess;
  if (ok && n > 0) {
    sum_kernel<<<static_cast<unsigned>((n + 255) / 256 < 1024 ? (n + 255) / 256 : 1024), 256, 0, stream>>>(dv, n, dsum);
    ok = cudaGetLastError() == cudaSuccess;
  }
  ok = ok && cudaMemcpyAsync(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost, stream) == cudaSuccess;
  if (dv) cudaFreeAsync(dv, stream);
  if (dsum) cudaFreeAsync(dsum, stream);
  ok = cudaStreamSynchronize(stream) == cudaSuccess && ok;  // the one sync of this block
  *result = static_cast<long long>(sum);
  return ok;
}

int sum_proc(duet_txn* t, const duet_bytes* keys, size_t nkeys, const duet_bytes* args, size_t nargs,
             duet_reply* r) {
  (void)keys;
  if (nkeys != 0 || nargs != 2) {
    duet_reply_error(r, "ERR usage: FCALL_RO gpu_sum 0 first last");
    return DUET_ERR_INVALID;
  }
  duet_snapshot_arg arg{};
  arg.is_range = 1;
  arg.range.start = args[0];
  arg.range.end = args[1];
  duet_snapshot* snap = nullptr;
  duet_table* table = nullptr;
  const duet_field field{"v", DUET_INT64, 0};
  duet_column_view col{};
  int rc;
  if ((rc = t->api->snapshot(t, &arg, 1, &snap)) != DUET_OK) return rc;
  if ((rc = t->api->decode(t, snap, &field, 1, 0, &table)) != DUET_OK) {
    duet_reply_error(r, "ERR a value in the range is not an 8-byte integer");
    return rc;
  }
  if ((rc = t->api->column(table, "v", &col)) != DUET_OK) return rc;
  const long long* v = static_cast<const long long*>(col.data);
  long long sum = 0;
  void* stream = nullptr;
  if (t->api->gpu_stream(t, &stream) == DUET_OK) {
    if (!gpu_sum(v, col.rows, static_cast<cudaStream_t>(stream), &sum)) {
      duet_reply_error(r, "ERR the GPU failed");
      return DUET_ERR_FAILED;
    }
  } else {
    unsigned long long s = 0;
    for (std::size_t i = 0; i < col.rows; ++i) s += static_cast<unsigned long long>(v[i]);
    sum = static_cast<long long>(s);
  }
  return duet_reply_int(r, sum);
}

const duet_procedure_def kProcedures[] = {{"gpu_sum", sum_proc, DUET_PROC_READ_ONLY}};
const duet_library_def kLibrary = {DUET_PROCEDURE_ABI_VERSION, "gpusum", kProcedures, 1};

}  // namespace

extern "C" DUET_PROCEDURE_EXPORT const duet_library_def* duet_procedure_register(void) { return &kLibrary; }
