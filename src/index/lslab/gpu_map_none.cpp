// make_gpu_map in a build without the CUDA toolkit.
#include "gpu/device.hpp"
#include "index/lslab/map.hpp"

namespace duet::lslab {

Status make_gpu_map(const Config&, std::unique_ptr<Map>*, unsigned) {
  return Status::Unavailable("GPU map unavailable: " + gpu::device().reason);
}

}  // namespace duet::lslab
