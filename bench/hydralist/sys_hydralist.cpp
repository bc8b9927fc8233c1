// Hydralist and its factor-analysis variants (docs/hydralist.md):
//   hydralist     the default: asynchronous search layer, best SIMD, backoff, one replica per
//                 NUMA node
//   hl-sync       the splitting thread updates the search layer itself (no combiner)
//   hl-scalar     scalar fingerprint matching
//   hl-avx2       AVX2 fingerprint matching
//   hl-nobackoff  no randomized backoff
//   hl-2rep       two search-layer replicas forced (one NUMA node: threads alternate)
//   hl-sorted     sorted slots with binary search (no fingerprints), otherwise the default
// Cumulative steps of the factor analysis (thesis Fig. 4.15, which starts from ART; Duet has no
// concurrent ART, so its first step is the data layer with sorted slots), each adding one
// switch to the one before:
//   f1-sorted     sorted slots, synchronous search layer, one replica, no backoff
//   f2-fp         + unsorted fingerprinted slots, scalar matching
//   f3-simd       + SIMD matching (the best the CPU has: AVX-512BW, else AVX2)
//   f4-async      + asynchronous search layer (combiner and updater)
//   f5-2rep       + two search-layer replicas (forced: these machines have one NUMA node)
//   f6-backoff    + backoff (= the default with two replicas)
#include <stdexcept>

#include "index/hydralist/hydralist.hpp"
#include "systems.hpp"

namespace duet::bench::hydralist {
namespace hl = duet::hydralist;
namespace {

hl::Config config_for(const std::string& variant, unsigned threads) {
  hl::Config c;
  c.max_sessions = threads + 4;
  if (variant == "hl-sync") c.async_search_layer = false;
  else if (variant == "hl-scalar") c.simd = 0;
  else if (variant == "hl-avx2") c.simd = 1;
  else if (variant == "hl-nobackoff") c.backoff = false;
  else if (variant == "hl-2rep") c.replicas = 2;
  else if (variant == "hl-sorted") c.sorted_slots = true;
  else if (variant.size() > 3 && variant[0] == 'f' && variant[2] == '-' && variant[1] >= '1' && variant[1] <= '6') {
    const int step = variant[1] - '0';
    static const char* const names[] = {"f1-sorted", "f2-fp", "f3-simd", "f4-async", "f5-2rep", "f6-backoff"};
    if (variant != names[step - 1]) throw std::invalid_argument("unknown hydralist variant " + variant);
    c.sorted_slots = step < 2;
    c.simd = step < 3 ? 0 : -1;
    c.async_search_layer = step >= 4;
    c.replicas = step >= 5 ? 2 : 1;
    c.backoff = step >= 6;
  }
  else if (variant != "hydralist") throw std::invalid_argument("unknown hydralist variant " + variant);
  return c;
}

template <class KT, class Keys>
class HlWorker final : public LoopWorker<HlWorker<KT, Keys>, Keys> {
 public:
  using Key = typename Keys::Key;
  explicit HlWorker(hl::Index<KT>* idx) {
    const Status s = idx->attach(&s_);
    if (!s.ok()) throw std::runtime_error(s.to_string());
  }
  bool get(Key k, std::uint64_t* v) { return s_->get(k, v) == hl::Result::kOk; }
  bool update(Key k, std::uint64_t v) { return s_->update(k, v) == hl::Result::kOk; }
  bool insert(Key k, std::uint64_t v) { return s_->insert(k, v) == hl::Result::kOk; }
  /// Reads the pairs in place (scan_view), as the peers' scans do.
  std::size_t scan(Key k, unsigned n) {
    std::size_t got = 0;
    (void)s_->scan_view(k, n, [&](Key, std::uint64_t v) {
      sink_ += v;
      ++got;
    });
    return got;
  }
  std::uint64_t sink_ = 0;

 private:
  std::unique_ptr<hl::Session<KT>> s_;
};

template <class KT, class Keys>
class HlSystem final : public System<Keys> {
 public:
  HlSystem(const std::string& variant, unsigned threads) {
    const Status s = hl::Index<KT>::create(config_for(variant, threads), &idx_);
    if (!s.ok()) throw std::runtime_error(s.to_string());
  }
  std::unique_ptr<Worker<Keys>> attach() override { return std::make_unique<HlWorker<KT, Keys>>(idx_.get()); }
  Json stats() const override {
    const hl::Stats st = idx_->stats();
    Json j = Json::object();
    j.set("nodes", st.nodes);
    j.set("keys", st.keys);
    j.set("splits", st.splits);
    j.set("merged_logs", st.merged_logs);
    j.set("retries", st.retries);
    j.set("backoffs", st.backoffs);
    j.set("walk_steps", st.walk_steps);
    j.set("replicas", st.replicas);
    j.set("simd", st.simd);
    j.set("search_layer_bytes", static_cast<std::uint64_t>(st.search_layer_bytes));
    j.set("data_layer_bytes", static_cast<std::uint64_t>(st.data_layer_bytes));
    return j;
  }

 private:
  std::unique_ptr<hl::Index<KT>> idx_;
};

}  // namespace

std::unique_ptr<System<IntKeys>> make_hydralist_int(const std::string& variant, unsigned threads) {
  return std::make_unique<HlSystem<hl::U64Keys, IntKeys>>(variant, threads);
}
std::unique_ptr<System<StrKeys>> make_hydralist_str(const std::string& variant, unsigned threads) {
  return std::make_unique<HlSystem<hl::BytesKeys, StrKeys>>(variant, threads);
}

}  // namespace duet::bench::hydralist
