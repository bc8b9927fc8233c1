// duet_bench_cods without CUDA: the versioned tree's GPU figures are Unavailable.
#include "gpu_versioned.hpp"

namespace duet::bench::cods {

Status gpu_versioned_figures(const VersionedBenchOptions&, const std::function<void(Json, const std::string&, bool)>&) {
  return Status::Unavailable("built without CUDA");
}

}  // namespace duet::bench::cods
