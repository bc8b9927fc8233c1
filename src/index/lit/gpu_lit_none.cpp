// GpuMap::create in a build without the CUDA toolkit.
#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

Status GpuMap::create(const GpuConfig&, std::unique_ptr<GpuMap>*) {
  return Status::Unavailable("GPU LIT unavailable: " + gpu::device().reason);
}

}  // namespace duet::lit
