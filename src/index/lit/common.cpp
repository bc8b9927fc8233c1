// What both LITs share at run time: the configuration rule for their common fields, the
// batched LIT's configuration check and layout, and the names of outcomes. Compiled in every
// build, so a machine without a GPU (or without the CUDA toolkit) checks configurations exactly
// as the GPU build does.
#include "index/lit/common.hpp"

#include <string>

#include "index/lit/batch.hpp"
#include "index/lit/lit.hpp"

namespace duet::lit {

namespace {
// Outcome names shared by to_string(Result) and to_string(BatchStatus).
constexpr const char* kOk = "ok";
constexpr const char* kNotFound = "not_found";
constexpr const char* kExists = "exists";
// The batched LIT's node indices are 32 bits, with one value for "none".
constexpr std::uint64_t kMaxNodes = 0xFFFFFFFFull - 1;
constexpr std::uint64_t kMaxBuckets = std::uint64_t{1} << 31;
}  // namespace

namespace detail {

Status check_common_fields(std::uint64_t universe_min, std::uint64_t universe_max, std::uint64_t predicted_min,
                           std::uint64_t predicted_max, std::uint64_t max_range_results) {
  if (universe_min > universe_max) return Status::InvalidArgument("lit: universe_min is above universe_max");
  if (predicted_min > predicted_max) return Status::InvalidArgument("lit: predicted_min is above predicted_max");
  if (predicted_min < universe_min || predicted_max > universe_max)
    return Status::InvalidArgument("lit: predicted_min/max lie outside the universe");
  if (max_range_results < 1) return Status::InvalidArgument("lit: max_range_results must be at least 1");
  return Status::Ok();
}

Status check_batch_args(const PointBatch& p, const PointResults& r, const RangeBatch* ranges, bool have_range_out) {
  if (p.n && (!p.ops || !p.keys || !r.status || !r.out))
    return Status::InvalidArgument("point batch: ops, keys, status and out are required");
  if (ranges && ranges->n && (!ranges->starts || !ranges->ends))
    return Status::InvalidArgument("range batch: starts and ends are required");
  if (ranges && !have_range_out) return Status::InvalidArgument("range batch without a range result");
  return Status::Ok();
}

void size_range_results(RangeResults* rr, std::size_t nr, std::uint64_t total, std::uint64_t snapshot) {
  rr->snapshot = snapshot;
  rr->offsets.assign(nr + 1, 0);
  rr->status.assign(nr, BatchStatus::kOk);
  rr->more.assign(nr, 0);
  rr->resume.assign(nr, 0);
  rr->keys.resize(total);
  rr->values.resize(total);
}

}  // namespace detail

Status check_config(const BatchConfig& c) {
  if (Status s = detail::check_common_fields(c); !s.ok()) return s;
  if (c.bucket_width == 0) return Status::InvalidArgument("lit: bucket_width must be at least 1");
  if ((c.predicted_max - c.predicted_min) / c.bucket_width >= kMaxBuckets)
    return Status::InvalidArgument("lit: bucket_width makes more than 2^31 root buckets");
  if (c.node_capacity > kMaxNodes) return Status::InvalidArgument("lit: node_capacity is above 2^32 - 2 nodes");
  return Status::Ok();
}

RootLayout root_layout(const BatchConfig& c) {
  RootLayout l;
  l.buckets = (c.predicted_max - c.predicted_min) / c.bucket_width + 1;  // the span + 1 may wrap; this cannot
  l.node_capacity = c.node_capacity ? c.node_capacity : l.buckets + l.buckets / 2 + (std::uint64_t{1} << 20);
  return l;
}

const char* to_string(BatchStatus s) {
  switch (s) {
    case BatchStatus::kOk: return kOk;
    case BatchStatus::kNotFound: return kNotFound;
    case BatchStatus::kExists: return kExists;
    case BatchStatus::kUpdated: return "updated";
    case BatchStatus::kInvalid: return "invalid";
    case BatchStatus::kRetry: return "retry";
  }
  return "unknown";
}

const char* to_string(Result r) {
  switch (r) {
    case Result::kOk: return kOk;
    case Result::kNotFound: return kNotFound;
    case Result::kExists: return kExists;
    case Result::kOutOfUniverse: return "out_of_universe";
  }
  return "unknown";
}

}  // namespace duet::lit
