#include <cmath>
#include <string>

#include "index/lslab/core.hpp"
#include "index/lslab/map.hpp"

namespace duet::lslab {

const char* op_status_name(OpStatus s) {
  switch (s) {
    case OpStatus::kFound: return "found";
    case OpStatus::kNotFound: return "not_found";
    case OpStatus::kRetry: return "retry";
    case OpStatus::kInvalid: return "invalid";
  }
  return "unknown";
}

Status validate_config(const Config& c) {
  if (c.expected_keys == 0) return Status::InvalidArgument("expected_keys must be at least 1");
  if (!(c.load_factor >= 0.05 && c.load_factor <= 1.0))
    return Status::InvalidArgument("load_factor must be in [0.05, 1.0], got " + std::to_string(c.load_factor));
  if (c.max_pool_slabs != 0 && c.max_pool_slabs < c.initial_pool_slabs)
    return Status::InvalidArgument("max_pool_slabs is below initial_pool_slabs");
  if (c.expected_keys > (1ull << 40)) return Status::InvalidArgument("expected_keys above 2^40");
  return Status::Ok();
}

std::uint64_t bucket_count(const Config& c, unsigned slab_width) {
  const double per_slab = static_cast<double>(slab_width - 2) * c.load_factor;
  const double b = std::ceil(static_cast<double>(c.expected_keys) / per_slab);
  return b < 1 ? 1 : static_cast<std::uint64_t>(b);
}

}  // namespace duet::lslab
