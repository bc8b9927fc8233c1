// The CODS GPU drivers' entry points in a build without the CUDA toolkit (CMake compiles this in
// place of gpu_batch.cu and gpu_versioned.cu, as L-Slab's gpu_map_none.cpp stands in for
// gpu_map.cu). They check their input as the CUDA drivers do (InvalidArgument, same messages) and
// then report that there is no GPU (Unavailable), as the CUDA drivers do on a machine without one.
#include <memory>

#include "gpu/device.hpp"
#include "index/cods/gpu_batch.hpp"
#include "index/cods/gpu_versioned.hpp"

namespace duet::cods::ds {

Status make_gpu_structure(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_gpu_config(c); !s.ok()) return s;
  return Status::Unavailable("no GPU: " + gpu::device().reason);
}

Status make_gpu_versioned_tree(const GpuVersionedConfig& c, std::unique_ptr<GpuVersionedTree>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_gpu_versioned_config(c); !s.ok()) return s;
  return Status::Unavailable("no GPU: " + gpu::device().reason);
}

}  // namespace duet::cods::ds
