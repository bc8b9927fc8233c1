// The GPU map's factories in a build without the CUDA toolkit: the configuration is checked as
// on a GPU build, then the map is Unavailable.
#include "gpu/device.hpp"
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

Status GpuMap::create(const GpuConfig& c, std::unique_ptr<GpuMap>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_config(c); !s.ok()) return s;  // bad input is named as on a GPU build
  return Status::Unavailable("GPU LIT unavailable: " + gpu::device().reason);
}

Status make_gpu_batch_map(const BatchConfig& c, std::unique_ptr<BatchMap>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  std::unique_ptr<GpuMap> m;
  return GpuMap::create(c, &m);
}

}  // namespace duet::lit
