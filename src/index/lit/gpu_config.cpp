// GpuConfig validation, compiled in every build so that a machine without a GPU (or without
// the CUDA toolkit) checks configurations exactly as the GPU build does.
#include "index/lit/gpu_lit.hpp"

namespace duet::lit {

Status check_config(const GpuConfig& c) {
  if (c.universe_min > c.universe_max) return Status::InvalidArgument("universe_min: above universe_max");
  if (c.predicted_min > c.predicted_max) return Status::InvalidArgument("predicted_min: above predicted_max");
  if (c.predicted_min < c.universe_min || c.predicted_max > c.universe_max)
    return Status::InvalidArgument("predicted_min/max: outside the universe");
  if (c.bucket_width == 0) return Status::InvalidArgument("bucket_width: must be positive");
  if (c.max_range_results == 0) return Status::InvalidArgument("max_range_results: must be positive");
  return Status::Ok();
}

}  // namespace duet::lit
