// CODS hash set systems, K = 1..8 (the sweep is 2..8; K = 1 is the uncoalesced
// baseline), both regimes.
#include "sys_cods.hpp"

namespace duet::bench::cods {
namespace {
template <unsigned K, ds::Regime R>
struct MakeHash {
  static std::unique_ptr<System> make(const Shape& s, std::string* why) {
    using H = ds::CpuHashSet<K, R>;
    std::unique_ptr<H> h;
    const Status st = H::make(s.buckets, &h);
    if (!st.ok()) {
      *why = st.to_string();
      return nullptr;
    }
    return std::make_unique<CodsSystem<H, CodsSetWorker<H>>>(std::move(h));
  }
};
}  // namespace

void add_cods_hash_systems(std::vector<SystemInfo>* out) {
  add_cods<Structure::kHash, MakeHash, 1, 2, 3, 4, 5, 6, 7, 8>(out, "hash set");
}

}  // namespace duet::bench::cods
