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
}  // namespace gpu

}  // namespace duet::compute::detail
