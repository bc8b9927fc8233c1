// CODS lazy list systems, K = 1..16, both regimes.
#include "sys_cods.hpp"

namespace duet::bench::cods {
namespace {
template <unsigned K, ds::Regime R>
struct MakeList {
  static std::unique_ptr<System> make(const Shape&, std::string*) {
    using L = ds::CpuLazyList<K, R>;
    return std::make_unique<CodsSystem<L, CodsSetWorker<L>>>(std::make_unique<L>());
  }
};
}  // namespace

void add_cods_list_systems(std::vector<SystemInfo>* out) {
  add_cods<Structure::kList, MakeList, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>(out, "lazy list");
}

}  // namespace duet::bench::cods
