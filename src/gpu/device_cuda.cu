// The CUDA implementation of the device layer.
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "common/log.hpp"
#include "gpu/device.hpp"

namespace duet::gpu {

const DeviceInfo& device() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    d.cuda_build = true;
    const char* force_cpu = std::getenv("DUET_NO_GPU");
    int count = 0;
    cudaError_t e = cudaSuccess;
    if (force_cpu && *force_cpu && std::string(force_cpu) != "0") {
      d.reason = "DUET_NO_GPU is set; running on the CPU";
    } else if ((e = cudaGetDeviceCount(&count)) != cudaSuccess || count == 0) {
      d.reason = std::string("no usable GPU (") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
                 "); running on the CPU";
      cudaGetLastError();  // clear the sticky-free error so later calls start clean
    } else {
      cudaDeviceProp p{};
      if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess || (e = cudaSetDevice(0)) != cudaSuccess) {
        d.reason = std::string("GPU 0 unusable (") + cudaGetErrorString(e) + "); running on the CPU";
      } else {
        // How a host thread waits for the GPU (DUET_GPU_SYNC=spin|yield|blocking; unset: CUDA's
        // heuristic, which spins while there are fewer contexts than cores). Must precede the
        // context's creation, which the first allocation triggers.
        if (const char* sync = std::getenv("DUET_GPU_SYNC"); sync && *sync) {
          const std::string m = sync;
          const unsigned flags = m == "spin" ? cudaDeviceScheduleSpin
                                 : m == "yield" ? cudaDeviceScheduleYield
                                 : m == "blocking" ? cudaDeviceScheduleBlockingSync
                                                   : cudaDeviceScheduleAuto;
          if (flags == cudaDeviceScheduleAuto && m != "auto")
            log(LogLevel::kWarn, "DUET_GPU_SYNC=" + m + " is not spin, yield, blocking or auto; using auto");
          if (cudaSetDeviceFlags(flags) != cudaSuccess) cudaGetLastError();
        }
        d.present = true;
        d.ordinal = 0;
        d.name = p.name;
        d.cc_major = p.major;
        d.cc_minor = p.minor;
        d.sm_count = p.multiProcessorCount;
        d.global_bytes = p.totalGlobalMem;
        d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
        d.memory_bus_bits = p.memoryBusWidth;
        d.managed_memory = p.managedMemory != 0;
      }
    }
    log(LogLevel::kInfo, d.present ? "GPU: " + d.name : "no GPU: " + d.reason);
    return d;
  }();
  return info;
}

Stream::~Stream() {
  if (handle_) cudaStreamDestroy(static_cast<cudaStream_t>(handle_));
}

Stream& Stream::operator=(Stream&& o) noexcept {
  std::swap(handle_, o.handle_);
  return *this;
}

Status Stream::create() {
  if (handle_) return Status::Ok();
  if (!device().present) return Status::Unavailable("no GPU: " + device().reason);
  cudaStream_t s;
  cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e != cudaSuccess) return Status::Internal(std::string("cudaStreamCreate: ") + cudaGetErrorString(e));
  handle_ = s;
  return Status::Ok();
}

Status Stream::synchronize() {
  if (!handle_) return Status::Ok();
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(handle_));
  if (e != cudaSuccess) return Status::Internal(std::string("stream: ") + cudaGetErrorString(e));
  return Status::Ok();
}

void* alloc_host(std::size_t bytes) {
  if (!device().present) return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  void* p = nullptr;
  if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void free_host(void* p) {
  if (!p) return;
  if (!device().present) {
    std::free(p);
    return;
  }
  cudaFreeHost(p);
}

}  // namespace duet::gpu
