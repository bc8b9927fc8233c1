#include "workload.hpp"

#include <algorithm>
#include <numeric>
#include <random>

namespace duet::bench::cods {

std::vector<std::uint64_t> prefill_keys(std::uint64_t range, std::uint64_t count, std::uint64_t seed) {
  std::vector<std::uint64_t> all(range);
  std::iota(all.begin(), all.end(), std::uint64_t{0});
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull + 17);
  // Partial Fisher-Yates: the first `count` entries become a uniform random sample in random order.
  count = std::min(count, range);
  for (std::uint64_t i = 0; i < count; ++i) {
    const std::uint64_t j = i + rng() % (range - i);
    std::swap(all[i], all[j]);
  }
  all.resize(count);
  return all;
}

std::vector<std::vector<std::uint64_t>> make_streams(std::uint64_t range, double contains_pct, unsigned threads,
                                                     std::uint64_t len, std::uint64_t seed) {
  std::vector<std::vector<std::uint64_t>> out(threads);
  const std::uint64_t cut = static_cast<std::uint64_t>(contains_pct / 100.0 * 1000000.0);
  for (unsigned t = 0; t < threads; ++t) {
    std::mt19937_64 rng((seed + 1) * 0x2545f4914f6cdd1dull + t * 0x9e3779b97f4a7c15ull);
    std::vector<std::uint64_t>& s = out[t];
    s.resize(len);
    for (std::uint64_t i = 0; i < len; ++i) {
      const std::uint64_t key = rng() % range;
      const std::uint64_t p = rng() % 1000000;
      Kind k = Kind::kContains;
      if (p >= cut) k = ((rng() & 1) != 0) ? Kind::kInsert : Kind::kRemove;
      s[i] = (static_cast<std::uint64_t>(k) << 62) | key;
    }
  }
  return out;
}

}  // namespace duet::bench::cods
