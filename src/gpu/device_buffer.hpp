// DeviceBuffer<T>: an array in GPU memory that grows on demand, for scratch and staging arrays
// whose size follows the batch (sort keys, scan temporaries, range outputs, request copies).
//
// CUDA-only header (include it from .cu files). Not thread-safe; its owner serialises use.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "duet/status.hpp"
#include "gpu/cuda_try.hpp"

namespace duet::gpu {

template <class T>
class DeviceBuffer {
 public:
  /// The least number of elements a buffer allocates, so that small batches do not reallocate.
  static constexpr std::size_t kMinElements = 1024;

  DeviceBuffer() = default;
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), cap_(std::exchange(o.cap_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(cap_, o.cap_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// Makes room for at least n elements. When it must grow it frees the old array first (the
  /// contents are not kept: callers refill it per batch) and allocates max(n, kMinElements).
  /// cudaFree waits for the device, so growth belongs between batches. ResourceExhausted
  /// (the buffer then empty) when device memory is short; Ok with nothing done when it fits.
  Status reserve(std::size_t n) {
    if (n <= cap_) return Status::Ok();
    cudaFree(p_);
    p_ = nullptr;
    cap_ = 0;
    const std::size_t want = std::max(n, kMinElements);
    DUET_CUDA_TRY(cudaMalloc(&p_, want * sizeof(T)));
    cap_ = want;
    return Status::Ok();
  }

  /// The device array (null before the first reserve).
  T* data() const { return p_; }
  /// Elements the array holds.
  std::size_t capacity() const { return cap_; }

 private:
  T* p_ = nullptr;
  std::size_t cap_ = 0;
};

}  // namespace duet::gpu
