// GpuMap::create in a build without the CUDA toolkit.
#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

Status GpuMap::create(const GpuConfig& c, std::unique_ptr<GpuMap>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_config(c); !s.ok()) return s;  // bad input is named as on a GPU build
  return Status::Unavailable("GPU LIT unavailable: " + gpu::device().reason);
}

}  // namespace duet::lit
