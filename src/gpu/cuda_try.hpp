// DUET_CUDA_TRY: the one way CUDA host code turns a failed runtime call into a Status.
//
// CUDA-only header (include it from .cu files). Every GPU map uses it, so a failed call reads
// the same everywhere: the expression's text and CUDA's message.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "duet/status.hpp"

/// Evaluates `expr` (a cudaError_t). On failure it clears CUDA's last error, so the next call
/// starts clean, and returns from the enclosing function (which must return duet::Status):
/// ResourceExhausted when the device is out of memory, Internal otherwise, with the message
/// "<expr>: <CUDA's text>". Costs nothing beyond the call on success.
#define DUET_CUDA_TRY(expr)                                                                              \
  do {                                                                                                   \
    const cudaError_t duet_cuda_error = (expr);                                                          \
    if (duet_cuda_error != cudaSuccess) {                                                                \
      cudaGetLastError();                                                                                \
      return ::duet::gpu::cuda_status(duet_cuda_error, #expr);                                           \
    }                                                                                                    \
  } while (0)

namespace duet::gpu {

/// The Status for a failed CUDA call `what`: ResourceExhausted for cudaErrorMemoryAllocation,
/// Internal for anything else. Ok for cudaSuccess.
inline Status cuda_status(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return Status::Ok();
  std::string message = std::string(what) + ": " + cudaGetErrorString(e);
  return e == cudaErrorMemoryAllocation ? Status::ResourceExhausted(std::move(message))
                                        : Status::Internal(std::move(message));
}

}  // namespace duet::gpu
