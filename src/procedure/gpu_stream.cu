// The calls' pooled CUDA streams: a call that asks for a stream (duet_gpu_stream) leases one
// until it returns; streams are created on demand (non-blocking, so they never serialise with
// the legacy default stream) and kept for reuse. A procedure synchronises its stream before it
// returns; the stream is synchronised again here before it goes back to the pool, so a
// procedure that forgot cannot leak work into the next call.
#include <cuda_runtime.h>

#include <mutex>
#include <vector>

#include "procedure/internal.hpp"

namespace duet::procedure {

namespace {
std::mutex g_m;
std::vector<cudaStream_t>& idle() {
  static auto* v = new std::vector<cudaStream_t>();  // never destroyed: streams live for the process
  return *v;
}
}  // namespace

Status gpu_stream_lease(void** stream) {
  *stream = nullptr;
  {
    std::lock_guard<std::mutex> lk(g_m);
    if (!idle().empty()) {
      *stream = idle().back();
      idle().pop_back();
      return Status::Ok();
    }
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    return Status::Unavailable("procedures: no GPU");
  }
  cudaStream_t s = nullptr;
  if (cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess)
    return Status::ResourceExhausted(std::string("procedures: cudaStreamCreate: ") + cudaGetErrorString(e));
  *stream = s;
  return Status::Ok();
}

void gpu_stream_return(void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  if (cudaStreamSynchronize(s) != cudaSuccess) {
    (void)cudaGetLastError();
    (void)cudaStreamDestroy(s);
    return;
  }
  std::lock_guard<std::mutex> lk(g_m);
  idle().push_back(s);
}

}  // namespace duet::procedure
