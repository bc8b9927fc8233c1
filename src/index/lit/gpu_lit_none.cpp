// GpuMap::create in a build without the CUDA toolkit.
#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

const char* to_string(GpuStatus s) {
  switch (s) {
    case GpuStatus::kOk: return "ok";
    case GpuStatus::kNotFound: return "not_found";
    case GpuStatus::kExists: return "exists";
    case GpuStatus::kUpdated: return "updated";
    case GpuStatus::kInvalid: return "invalid";
    case GpuStatus::kRetry: return "retry";
  }
  return "unknown";
}

Status GpuMap::create(const GpuConfig&, std::unique_ptr<GpuMap>*) {
  return Status::Unavailable("GPU LIT unavailable: " + gpu::device().reason);
}

}  // namespace duet::lit
