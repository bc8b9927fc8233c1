#include "workload.hpp"

#include <algorithm>
#include <numeric>
#include <thread>

#include "../kv/ycsb.hpp"

namespace duet::bench::mvrlu {

const char* dist_name(Dist d) {
  switch (d) {
    case Dist::kUniform: return "uniform";
    case Dist::kPareto: return "pareto80-20";
    case Dist::kZipf: return "zipf";
  }
  return "?";
}

namespace {

std::uint64_t gcd(std::uint64_t a, std::uint64_t b) {
  while (b != 0) a %= b, std::swap(a, b);
  return a;
}

/// rank -> key: r * mult mod range, a permutation when gcd(mult, range) = 1.
struct Scatter {
  explicit Scatter(std::uint64_t range) : range(range) {
    mult = 0x9e3779b97f4a7c15ull % range;
    if (mult == 0) mult = 1;
    while (gcd(mult, range) != 1) ++mult;
  }
  std::uint64_t operator()(std::uint64_t r) const {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(r) * mult) % range);
  }
  std::uint64_t range, mult;
};

}  // namespace

std::vector<std::uint64_t> prefill_keys(const WorkloadSpec& w) {
  const std::uint64_t range = 2 * w.items;
  std::vector<std::uint64_t> all(range);
  std::iota(all.begin(), all.end(), 0);
  kv::Rng rng(kv::derive_seed(w.seed, 0xfeed));
  for (std::uint64_t i = range - 1; i > 0; --i) std::swap(all[i], all[rng.below(i + 1)]);
  all.resize(w.items);
  return all;
}

std::vector<std::vector<std::uint64_t>> make_streams(const WorkloadSpec& w, unsigned threads, std::uint64_t ops) {
  const std::uint64_t range = 2 * w.items;
  const Scatter scatter(range);
  const std::uint64_t hot = std::max<std::uint64_t>(1, range / 5);
  kv::ZipfianGenerator zipf(range, w.dist == Dist::kZipf ? w.theta : 0.0);
  std::vector<std::vector<std::uint64_t>> out(threads);
  // One generating thread per stream (Zipf draws cost a pow() each).
  std::vector<std::thread> gen;
  for (unsigned t = 0; t < threads; ++t) gen.emplace_back([&, t] {
    kv::Rng rng(kv::derive_seed(w.seed, t + 1));
    auto& s = out[t];
    s.resize(ops);
    for (std::uint64_t i = 0; i < ops; ++i) {
      std::uint64_t rank = 0;
      switch (w.dist) {
        case Dist::kUniform: rank = rng.below(range); break;
        // 80% of the operations go to the hottest 20% of the keys, uniformly within each part.
        case Dist::kPareto: rank = rng.next_double() < 0.8 ? rng.below(hot) : hot + rng.below(range - hot); break;
        case Dist::kZipf: rank = zipf.next(rng); break;
      }
      const double u = rng.next_double() * 100.0;
      const Op op = u >= w.update_percent ? Op::kContains : u < w.update_percent / 2 ? Op::kInsert : Op::kRemove;
      s[i] = (static_cast<std::uint64_t>(op) << 62) | scatter(rank);
    }
  });
  for (auto& g : gen) g.join();
  return out;
}

}  // namespace duet::bench::mvrlu
