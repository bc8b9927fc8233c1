// Host-to-device copies that have landed when they return.
//
// CUDA-only header (include it from .cu files). cudaMemcpy from pageable host memory may return
// once the bytes are staged, before their DMA reaches the device, and work on a non-blocking
// stream (every stream Duet creates) is not ordered after it: a kernel launched next could read
// the old bytes. Copies whose readers run on such streams go through copy_to_device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace duet::gpu {

/// Copies `bytes` from host memory (pageable or pinned) to device memory and waits until they
/// are there (a synchronisation of the default stream the copy ran on). Returns CUDA's error.
inline cudaError_t copy_to_device(void* dst, const void* src, std::size_t bytes) {
  const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return e != cudaSuccess ? e : cudaStreamSynchronize(0);
}

}  // namespace duet::gpu
