// The GPU DAG in a build without CUDA: there is no device, so the CPU builders run instead.
#include "batch/orangutan/gpu_dag.hpp"

namespace duet::batch::orangutan {

Status make_gpu_dag(std::size_t, std::unique_ptr<GpuDag>*) {
  return Status::Unavailable("the GPU conflict DAG needs a build with CUDA");
}

}  // namespace duet::batch::orangutan
