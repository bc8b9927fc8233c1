// CODS B-link tree systems, K = 1..16, both regimes.
#include "sys_cods.hpp"

namespace duet::bench::cods {
namespace {
template <unsigned K, ds::Regime R>
struct MakeTree {
  static std::unique_ptr<System> make(const Shape&, std::string*) {
    using T = ds::CpuBLinkTree<K, R>;
    return std::make_unique<CodsSystem<T, CodsTreeWorker<T>>>(std::make_unique<T>());
  }
};
}  // namespace

void add_cods_tree_systems(std::vector<SystemInfo>* out) {
  add_cods<Structure::kTree, MakeTree, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>(out, "B-link tree");
}

}  // namespace duet::bench::cods
