// What the two LITs share beyond their contracts: the rule for the configuration fields both
// have, so that the lock-free LIT (lit.cpp) and the batched LIT (batch.hpp) accept and refuse
// the same values with the same messages, and the batched LIT's argument check, the same for
// both of its backends. The outcome names are next to them, in common.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "duet/status.hpp"

namespace duet::lit {
struct PointBatch;
struct PointResults;
struct RangeBatch;
struct RangeResults;
}  // namespace duet::lit

namespace duet::lit::detail {

/// Checks the fields both configurations have, in this order: universe_min <= universe_max,
/// predicted_min <= predicted_max (a one-key prediction is one bucket), the prediction inside
/// the universe, max_range_results >= 1. InvalidArgument naming the first bad field, or Ok.
Status check_common_fields(std::uint64_t universe_min, std::uint64_t universe_max, std::uint64_t predicted_min,
                           std::uint64_t predicted_max, std::uint64_t max_range_results);

/// check_common_fields on a configuration that has those fields (lit::Config, BatchConfig).
template <class Config>
Status check_common_fields(const Config& c) {
  return check_common_fields(c.universe_min, c.universe_max, c.predicted_min, c.predicted_max,
                             static_cast<std::uint64_t>(c.max_range_results));
}

/// The argument check every batched LIT's execute starts with: InvalidArgument when a point
/// batch of n > 0 lacks ops, keys, status or out, a range batch of n > 0 lacks starts or ends,
/// or a range batch comes without a place for its results; otherwise Ok.
Status check_batch_args(const PointBatch& points, const PointResults& results, const RangeBatch* ranges,
                        bool have_range_out);

/// Sizes host range results for nr queries and total entries, as both backends' execute()
/// return them: offsets n + 1 zeros, status kOk, more and resume 0, keys and values `total`
/// entries; snapshot set. The caller fills them from the run.
void size_range_results(RangeResults* rr, std::size_t nr, std::uint64_t total, std::uint64_t snapshot);

}  // namespace duet::lit::detail
