// The GPU backend of a build without the CUDA toolkit: no GPU is ever available, so Engine runs
// every context on the CPU twin and these entry points are never reached with work.
#include "compute/internal.hpp"

namespace duet::compute {
struct Context::Lane {};
}  // namespace duet::compute

namespace duet::compute::detail::gpu {

namespace {
Status none() { return Status::Unavailable("compute: built without the CUDA toolkit"); }
}  // namespace

bool available(std::string* reason) {
  *reason = "built without the CUDA toolkit";
  return false;
}
Status lane_create(Context::Lane**) { return none(); }
void lane_destroy(Context::Lane* l) { delete l; }
Status model_upload(const Mlp&, void**) { return none(); }
void model_free(void*) {}
Status bandwidth(double*, double*) { return none(); }
Status filter(Context::Lane*, std::size_t, std::span<const BoundPred>, Selection*) { return none(); }
Status gather(Context::Lane*, const Column&, const Selection&, Column*) { return none(); }
Status derive(Context::Lane*, Expr::Op, const Column&, const Column*, std::int64_t, Column*) { return none(); }
Status aggregate(Context::Lane*, std::size_t, const Selection*, std::span<const Column* const>, std::span<const BoundAgg>,
                 AggOut*) {
  return none();
}
Status hash_join(Context::Lane*, const Column&, const Column&, JoinPairs*) { return none(); }
Status index_join(Context::Lane*, const Column&, const Column&, bool*, JoinPairs*) { return none(); }
Status sort(Context::Lane*, std::size_t, std::span<const BoundSortKey>, std::size_t, Selection*) { return none(); }
Status infer(Context::Lane*, const Mlp&, void*, std::span<const float>, std::size_t, std::vector<float>*) { return none(); }

struct MirrorCopy {};
Status mirror_create(std::size_t, MirrorCopy**) { return none(); }
void mirror_destroy(MirrorCopy* m) { delete m; }
Status mirror_put(MirrorCopy*, std::uint64_t, std::size_t, const std::uint64_t*, const std::uint64_t*,
                  const std::int64_t* const*) {
  return none();
}
Status mirror_set_ends(MirrorCopy*, const std::uint64_t*, const std::uint64_t*, std::size_t) { return none(); }
Status mirror_aggregate(MirrorCopy*, std::uint64_t, std::uint64_t, std::span<const MirrorPred>, int, std::size_t,
                        std::span<const MirrorAgg>, std::vector<std::int64_t>*, std::vector<std::int64_t>*, bool*) {
  return none();
}

}  // namespace duet::compute::detail::gpu
