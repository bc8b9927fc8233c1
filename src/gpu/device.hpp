// The GPU behind one small interface: discovery, streams and pinned host buffers.
//
// Every function here exists in every build. In a build without the CUDA toolkit, or on a
// machine without a GPU or driver, discovery reports "no device" (logged once, at info level)
// and the rest degrades: Stream is a no-op handle and PinnedPool hands out ordinary host
// memory. Callers decide whether to fall back to the CPU twin by asking device().present.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "duet/status.hpp"

namespace duet::gpu {

/// What discovery found. Fields past `present` are meaningful only when present is true.
struct DeviceInfo {
  bool present = false;
  bool cuda_build = false;       ///< the binary was built with CUDA
  std::string reason;            ///< why no device is used (empty when present)
  int ordinal = -1;
  std::string name;              ///< as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t global_bytes = 0;
  std::size_t l2_bytes = 0;
  int memory_bus_bits = 0;
  bool managed_memory = false;   ///< supports cudaMallocManaged
};

/// Discovers device 0 once (thread-safe) and logs the outcome once. Cheap after the first call.
const DeviceInfo& device();

/// One line for logs and INFO: "gpu: NVIDIA H100 ... (132 SMs, 79 GiB)" or "cpu: <reason>".
std::string describe();

/// An ordered queue of device work. Default-constructed streams are not created until
/// create(); without a GPU, create() fails with Unavailable and handle() stays null.
class Stream {
 public:
  Stream() = default;
  ~Stream();
  Stream(Stream&& o) noexcept : handle_(o.handle_) { o.handle_ = nullptr; }
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Status create();
  /// Waits for all work queued so far; reports the first asynchronous error, if any.
  Status synchronize();
  /// The cudaStream_t, as an opaque pointer (null when not created).
  void* handle() const { return handle_; }

 private:
  void* handle_ = nullptr;
};

/// A pool of page-locked host buffers, reused by size class (powers of two from 4 KiB).
/// Pinned memory makes host-device copies asynchronous and full speed; allocating it is slow,
/// so buffers are kept and handed out again. Thread-safe. Without a GPU it returns ordinary
/// 64-byte-aligned host memory so callers need no second code path.
class PinnedPool {
 public:
  PinnedPool() = default;
  ~PinnedPool();
  PinnedPool(const PinnedPool&) = delete;
  PinnedPool& operator=(const PinnedPool&) = delete;

  /// A buffer of at least `bytes`, or null when the system refuses (the caller reports it).
  void* acquire(std::size_t bytes);
  /// Returns a buffer from acquire() to the pool. Null is ignored.
  void release(void* p);
  /// Bytes held by the pool (in use and idle).
  std::size_t bytes_held() const;

 private:
  struct Block {
    void* p;
    std::size_t bytes;
    bool in_use;
  };
  mutable std::mutex m_;
  std::vector<Block> blocks_;
  std::size_t held_ = 0;
};

/// Host memory that is page-locked when a GPU is present: free with free_host().
void* alloc_host(std::size_t bytes);
void free_host(void* p);

}  // namespace duet::gpu
