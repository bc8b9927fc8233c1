// The no-GPU twin of the device layer, compiled when the CUDA toolkit is absent.
#include <cstdlib>

#include "common/log.hpp"
#include "gpu/device.hpp"

namespace duet::gpu {

const DeviceInfo& device() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    d.reason = "built without the CUDA toolkit; running on the CPU";
    log(LogLevel::kInfo, "no GPU: " + d.reason);
    return d;
  }();
  return info;
}

Stream::~Stream() = default;
Stream& Stream::operator=(Stream&& o) noexcept {
  std::swap(handle_, o.handle_);
  return *this;
}
Status Stream::create() { return Status::Unavailable("no GPU: " + device().reason); }
Status Stream::synchronize() { return Status::Ok(); }

void* alloc_host(std::size_t bytes) { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
void free_host(void* p) { std::free(p); }

}  // namespace duet::gpu
