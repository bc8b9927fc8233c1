#include <cmath>
#include <memory>
#include <vector>
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

namespace {

/// The default lane: host vectors and Map::execute.
class HostLane final : public Lane {
 public:
  explicit HostLane(Map* map) : map_(map) {}
  Status reserve(std::size_t n, Op** ops, std::uint64_t** keys, std::uint64_t** values) override {
    if (ops_.size() < n) {
      ops_.resize(n);
      keys_.resize(n);
      values_.resize(n);
      status_.resize(n);
      out_.resize(n);
    }
    *ops = ops_.data();
    *keys = keys_.data();
    *values = values_.data();
    return Status::Ok();
  }
  Status run(std::size_t n, const OpStatus** status, const std::uint64_t** out) override {
    if (n > ops_.size()) return Status::InvalidArgument("lane run of more requests than reserved");
    Batch b{ops_.data(), keys_.data(), values_.data(), n};
    BatchResult r{status_.data(), out_.data()};
    *status = status_.data();
    *out = out_.data();
    return map_->execute(b, r);
  }

 private:
  Map* map_;
  std::vector<Op> ops_;
  std::vector<std::uint64_t> keys_, values_, out_;
  std::vector<OpStatus> status_;
};

}  // namespace

Status Map::open_lane(std::unique_ptr<Lane>* out) {
  *out = std::make_unique<HostLane>(this);
  return Status::Ok();
}

std::uint64_t bucket_count(const Config& c, unsigned slab_width) {
  const double per_slab = static_cast<double>(slab_width - 2) * c.load_factor;
  const double b = std::ceil(static_cast<double>(c.expected_keys) / per_slab);
  return b < 1 ? 1 : static_cast<std::uint64_t>(b);
}

}  // namespace duet::lslab
