// The operators' checked arguments and the two backends behind Context (cpu_ops.cpp; gpu_ops.cu
// or gpu_none.cpp). Context validates names, types and ranges, then hands a backend resolved
// arguments only, so the backends assume valid input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "compute/compute.hpp"

namespace duet::sched {
class ThreadPool;
}

namespace duet::compute::detail {

/// A predicate bound to its column; byte strings already padded to the column's width.
struct BoundPred {
  const Column* col = nullptr;
  Cmp cmp = Cmp::kEq;
  std::int64_t i = 0, i_hi = 0;
  double f = 0, f_hi = 0;
  std::string s, s_hi;
};

struct BoundAgg {
  Agg::Op op = Agg::kCount;
  const Column* col = nullptr;  ///< null for kCount
};

/// Aggregate output: per group, the key values and the aggregate values, ordered by key.
struct AggOut {
  std::vector<std::vector<std::int64_t>> keys, vals;  ///< [column][group]
};

struct BoundSortKey {
  const Column* col = nullptr;
  bool desc = false;
};

/// The CPU worker pool and its grain.
struct Cpu {
  sched::ThreadPool* pool = nullptr;
  std::size_t grain = 1 << 14;
};

// ----- CPU backend (cpu_ops.cpp)
namespace cpu {
void filter(const Cpu& c, std::size_t rows, std::span<const BoundPred> preds, Selection* out);
void gather(const Cpu& c, const Column& in, const Selection& sel, Column* out);
void derive(const Cpu& c, Expr::Op op, const Column& a, const Column* b, std::int64_t k, Column* out);
void aggregate(const Cpu& c, std::size_t rows, const Selection* sel, std::span<const Column* const> keys,
               std::span<const BoundAgg> aggs, AggOut* out);
void hash_join(const Cpu& c, const Column& l, const Column& r, JoinPairs* out);
/// Whether the column is sorted ascending.
bool sorted(const Cpu& c, const Column& k);
void index_join(const Cpu& c, const Column& l, const Column& r, JoinPairs* out);
void sort(const Cpu& c, std::size_t rows, std::span<const BoundSortKey> keys, std::size_t limit, Selection* out);
Status infer(const Cpu& c, const Mlp& m, std::span<const float> x, std::size_t rows, std::vector<float>* y);
}  // namespace cpu

// ----- GPU backend (gpu_ops.cu; gpu_none.cpp answers Unavailable)
namespace gpu {
/// Whether a GPU can run the operators (*reason says why not).
bool available(std::string* reason);
Status lane_create(Context::Lane** out);
void lane_destroy(Context::Lane* l);
/// Uploads a checked model's weights; *handle is freed by model_free.
Status model_upload(const Mlp& m, void** handle);
void model_free(void* handle);
Status bandwidth(double* h2d, double* d2d);

Status filter(Context::Lane* l, std::size_t rows, std::span<const BoundPred> preds, Selection* out);
Status gather(Context::Lane* l, const Column& in, const Selection& sel, Column* out);
Status derive(Context::Lane* l, Expr::Op op, const Column& a, const Column* b, std::int64_t k, Column* out);
Status aggregate(Context::Lane* l, std::size_t rows, const Selection* sel, std::span<const Column* const> keys,
                 std::span<const BoundAgg> aggs, AggOut* out);
Status hash_join(Context::Lane* l, const Column& lk, const Column& rk, JoinPairs* out);
/// *sorted says whether rk is ascending; the join runs only when it is.
Status index_join(Context::Lane* l, const Column& lk, const Column& rk, bool* sorted, JoinPairs* out);
Status sort(Context::Lane* l, std::size_t rows, std::span<const BoundSortKey> keys, std::size_t limit, Selection* out);
Status infer(Context::Lane* l, const Mlp& m, void* handle, std::span<const float> x, std::size_t rows,
             std::vector<float>* y);

// ----- The column mirror's device copy (mirror_gpu.cu; gpu_none.cpp answers Unavailable).
// Device arrays of the mirror's rows: begin, end and each column, contiguous by row number (grown,
// keeping their contents, as rows arrive), with the mirror's own stream. One caller at a time
// (the mirror serialises use).
struct MirrorCopy;
/// A predicate on mirror column `col` (kBetween: [lo, hi]); an aggregate over column `col` (-1:
/// kCount).
struct MirrorPred {
  int col = 0;
  Cmp cmp = Cmp::kEq;
  std::int64_t lo = 0, hi = 0;
};
struct MirrorAgg {
  Agg::Op op = Agg::kCount;
  int col = -1;
};
inline constexpr std::size_t kMirrorMaxTerms = 8;  ///< predicates, and aggregates, per query
Status mirror_create(std::size_t ncols, MirrorCopy** out);
void mirror_destroy(MirrorCopy* m);
/// Copies rows [first, first + n) in: begin[i], end[i] and cols[c][i] (host arrays); with begin
/// null the rows are marked unwritten (begin = ~0, invisible to every start).
Status mirror_put(MirrorCopy* m, std::uint64_t first, std::size_t n, const std::uint64_t* begin,
                  const std::uint64_t* end, const std::int64_t* const* cols);
/// end[rows[i]] = ts[i] for each i < n with ts[i] != 0 (host arrays).
Status mirror_set_ends(MirrorCopy* m, const std::uint64_t* rows, const std::uint64_t* ts, std::size_t n);
/// Over device rows [0, rows) visible at `start` (begin <= start < end) passing every predicate:
/// per group (column group_col's value, 0 .. groups-1; one group when group_col < 0) the row
/// count (*counts) and each aggregate (*acc, group-major; sums wrap; min/max of no rows 0).
/// *out_of_range when a passing row's group value is outside 0 .. groups-1.
Status mirror_aggregate(MirrorCopy* m, std::uint64_t rows, std::uint64_t start, std::span<const MirrorPred> preds,
                        int group_col, std::size_t groups, std::span<const MirrorAgg> aggs,
                        std::vector<std::int64_t>* counts, std::vector<std::int64_t>* acc, bool* out_of_range);

}  // namespace gpu

}  // namespace duet::compute::detail
