// Sanity of `duet bench kv`'s request generators: zeta against exact sums and a published
// constant, Zipf frequencies against theory, scrambled and latest variants, determinism,
// workload mixes, key and value encodings, and the latency histogram's quantiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "latency.hpp"
#include "ycsb.hpp"

namespace duet::bench::kv {
namespace {

double slow_zeta(std::uint64_t n, double theta) {
  double s = 0;
  for (std::uint64_t i = n; i >= 1; --i) s += std::pow(static_cast<double>(i), -theta);
  return s;
}

TEST(Zeta, MatchesExactSums) {
  for (double theta : {0.0, 0.5, 0.9, 0.99, 0.999}) {
    for (std::uint64_t n : {std::uint64_t(1), std::uint64_t(2), std::uint64_t(65536), std::uint64_t(65537),
                            std::uint64_t(1'000'000)}) {
      const double exact = slow_zeta(n, theta);
      EXPECT_NEAR(zeta(n, theta) / exact, 1.0, 1e-12) << "n=" << n << " theta=" << theta;
    }
  }
}

TEST(Zeta, DeltaAddsUp) {
  for (double theta : {0.5, 0.99}) {
    const double whole = zeta(1'000'000'000, theta);
    EXPECT_NEAR((zeta(10'000'000, theta) + zeta_delta(10'000'000, 1'000'000'000, theta)) / whole, 1.0, 1e-13);
    EXPECT_NEAR((zeta(500, theta) + zeta_delta(500, 1'000'000'000, theta)) / whole, 1.0, 1e-13);
    EXPECT_NEAR(zeta(1000, theta) + zeta_delta(1000, 1003, theta), zeta(1003, theta), 1e-12);
    EXPECT_EQ(zeta_delta(7, 7, theta), 0.0);
  }
}

TEST(Zeta, MatchesYcsbConstantForTenBillionItems) {
  // YCSB's ScrambledZipfianGenerator hard-codes zeta(10^10, 0.99) = 26.46902820178302.
  EXPECT_NEAR(zeta(10'000'000'000ull, 0.99), 26.46902820178302, 1e-9);
}

/// Counts how often each of the first `top` ranks is drawn in `samples` draws.
std::vector<double> top_frequencies(const ZipfianGenerator& z, std::uint64_t samples, std::size_t top,
                                    std::uint64_t seed) {
  Rng rng(seed);
  std::vector<double> f(top, 0);
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::uint64_t r = z.next(rng);
    EXPECT_LT(r, z.items());
    if (r < top) f[r] += 1;
  }
  for (double& x : f) x /= static_cast<double>(samples);
  return f;
}

TEST(Zipfian, TopRanksFollowTheoryAtThetaNearOne) {
  const ZipfianGenerator z(1'000'000'000, 0.99);
  const auto f = top_frequencies(z, 2'000'000, 2, 1);
  // P(0) = 1 / zeta(n) ~ 0.047: about 94k hits, standard deviation ~300.
  EXPECT_NEAR(f[0] / z.probability(0), 1.0, 0.02);
  EXPECT_NEAR(f[1] / z.probability(1), 1.0, 0.03);
}

TEST(Zipfian, TopRanksFollowTheoryAtModerateSkew) {
  const ZipfianGenerator z(10'000, 0.5);
  const auto f = top_frequencies(z, 2'000'000, 2, 2);
  EXPECT_NEAR(f[0] / z.probability(0), 1.0, 0.05);
  EXPECT_NEAR(f[1] / z.probability(1), 1.0, 0.06);
}

TEST(Zipfian, HeadMassIsCloseToTheory) {
  // Beyond rank 1 Gray's method is an approximation; the mass of the first 1000 ranks must
  // still be close to the Zipf law's.
  const ZipfianGenerator z(1'000'000, 0.99);
  Rng rng(3);
  const std::uint64_t samples = 1'000'000;
  std::uint64_t head = 0;
  for (std::uint64_t i = 0; i < samples; ++i) head += z.next(rng) < 1000;
  double theory = 0;
  for (std::uint64_t r = 0; r < 1000; ++r) theory += z.probability(r);
  EXPECT_NEAR(static_cast<double>(head) / static_cast<double>(samples) / theory, 1.0, 0.03);
}

TEST(Zipfian, TinyRangesAndUniformTheta) {
  Rng rng(4);
  for (std::uint64_t n : {1, 2, 3}) {
    const ZipfianGenerator z(n, 0.99);
    for (int i = 0; i < 1000; ++i) EXPECT_LT(z.next(rng), n);
  }
  // theta = 0 is uniform: the mean rank is about n / 2.
  const ZipfianGenerator u(1000, 0.0);
  double sum = 0;
  for (int i = 0; i < 200'000; ++i) sum += static_cast<double>(u.next(rng));
  EXPECT_NEAR(sum / 200'000 / 499.5, 1.0, 0.01);
}

TEST(Zipfian, GrowKeepsZetaExact) {
  ZipfianGenerator z(1000, 0.99);
  z.grow(5'000'000);
  EXPECT_NEAR(z.zetan() / zeta(5'000'000, 0.99), 1.0, 1e-13);
  z.grow(10);  // never shrinks
  EXPECT_EQ(z.items(), 5'000'000u);
}

TEST(Generators, AreDeterministic) {
  const ZipfianGenerator base(1'000'000, 0.9);
  for (Distribution d :
       {Distribution::kUniform, Distribution::kZipfian, Distribution::kScrambled, Distribution::kLatest}) {
    KeyChooser a(d, 1'000'000, 0.9, 5000, &base), b(d, 1'000'000, 0.9, 5000, nullptr);
    Rng ra(99), rb(99);
    for (int i = 0; i < 1000; ++i) ASSERT_EQ(a.next(ra, 5000), b.next(rb, 5000)) << distribution_name(d);
  }
  EXPECT_NE(derive_seed(1, 0), derive_seed(1, 1));
  EXPECT_NE(derive_seed(1, 0), derive_seed(2, 0));
  EXPECT_EQ(derive_seed(7, 3), derive_seed(7, 3));
}

/// The most frequent key of `samples` draws and its frequency.
std::pair<std::uint64_t, double> mode_of(KeyChooser& c, std::uint64_t inserted, int samples) {
  Rng rng(5);
  std::map<std::uint64_t, int> count;
  for (int i = 0; i < samples; ++i) ++count[c.next(rng, inserted)];
  auto it = std::max_element(count.begin(), count.end(), [](auto& x, auto& y) { return x.second < y.second; });
  return {it->first, static_cast<double>(it->second) / samples};
}

TEST(Scrambled, SpreadsTheHottestKeyButKeepsItsFrequency) {
  const std::uint64_t n = 1'000'000;
  KeyChooser c(Distribution::kScrambled, n, 0.99, 0);
  const auto [key, freq] = mode_of(c, 0, 500'000);
  EXPECT_EQ(key, fnv1a64(0) % n);
  EXPECT_NE(key, 0u);
  EXPECT_NEAR(freq * zeta(n, 0.99), 1.0, 0.03);
  Rng rng(6);
  for (int i = 0; i < 10000; ++i) EXPECT_LT(c.next(rng, 0), n);
}

TEST(Latest, FavoursTheNewestKey) {
  KeyChooser c(Distribution::kLatest, 1'000'000'000, 0.99, 1000);
  auto [key, freq] = mode_of(c, 1000, 200'000);
  EXPECT_EQ(key, 999u);
  EXPECT_NEAR(freq * zeta(1000, 0.99), 1.0, 0.05);
  // After inserts the newest key is the hottest, and no key past the inserted ones is drawn.
  auto [key2, freq2] = mode_of(c, 3000, 200'000);
  EXPECT_EQ(key2, 2999u);
  Rng rng(7);
  for (int i = 0; i < 10000; ++i) EXPECT_LT(c.next(rng, 3000), 3000u);
}

TEST(Uniform, CoversTheRangeEvenly) {
  KeyChooser c(Distribution::kUniform, 1000, 0.99, 0);
  Rng rng(8);
  std::vector<int> count(10, 0);
  for (int i = 0; i < 100'000; ++i) {
    const std::uint64_t k = c.next(rng, 0);
    ASSERT_LT(k, 1000u);
    ++count[k / 100];
  }
  for (int x : count) EXPECT_NEAR(x, 10'000, 500);
}

TEST(PopularityShift, MovesTheHottestRanks) {
  KeyChooser c(Distribution::kZipfian, 1'000'000, 0.99, 0);
  c.set_shift(500, 1000);
  EXPECT_EQ(mode_of(c, 0, 100'000).first, 500u);
  c.set_shift(0, 0);
  EXPECT_EQ(mode_of(c, 0, 100'000).first, 0u);
}

TEST(Workloads, MixesMatchTheirDefinitions) {
  struct Case {
    const char* letter;
    double read, update, insert, rmw;
  };
  for (const Case& k : {Case{"A", 0.5, 0.5, 0, 0}, Case{"b", 0.95, 0.05, 0, 0}, Case{"C", 1, 0, 0, 0},
                        Case{"D", 0.95, 0, 0.05, 0}, Case{"F", 0.5, 0, 0, 0.5}}) {
    const auto w = ycsb_workload(k.letter);
    ASSERT_TRUE(w.has_value()) << k.letter;
    Rng rng(9);
    double n[4] = {0, 0, 0, 0};
    const int samples = 400'000;
    for (int i = 0; i < samples; ++i) n[static_cast<int>(w->pick(rng))] += 1.0 / samples;
    EXPECT_NEAR(n[0], k.read, 0.005) << k.letter;
    EXPECT_NEAR(n[1], k.update, 0.005) << k.letter;
    EXPECT_NEAR(n[2], k.insert, 0.005) << k.letter;
    EXPECT_NEAR(n[3], k.rmw, 0.005) << k.letter;
  }
  EXPECT_EQ(ycsb_workload("D")->default_distribution, Distribution::kLatest);
  EXPECT_FALSE(ycsb_workload("E").has_value());
  EXPECT_FALSE(ycsb_workload("AB").has_value());
  const Workload rw = read_update_mix(80);
  EXPECT_EQ(rw.name, "rw80");
  EXPECT_DOUBLE_EQ(rw.read, 0.8);
  EXPECT_DOUBLE_EQ(rw.update + rw.read, 1.0);
}

TEST(Encoding, KeysAndValues) {
  char key[8];
  for (std::uint64_t k : {0ull, 1ull, 123456789ull, (1ull << 56) - 1}) {
    encode_key(k, key);
    EXPECT_EQ(static_cast<unsigned char>(key[0]) < 0xf0, true);
    EXPECT_EQ(decode_key(std::string_view(key, 8)), k);
  }
  std::string v(8, '\0');
  encode_value(42, 77, v.data(), v.size());
  for (char c : v) EXPECT_TRUE(c >= 0x30 && c <= 0x7e);
  EXPECT_TRUE(value_matches_key(v, 42));
  EXPECT_FALSE(value_matches_key(v, 43));
  EXPECT_FALSE(value_matches_key("short", 42));
  EXPECT_EQ(value_version(v), 77u);
  std::string big(300, '\0');
  encode_value(42, 5, big.data(), big.size());
  EXPECT_TRUE(value_matches_key(big, 42));
  EXPECT_EQ(big.substr(0, 4), v.substr(0, 4));
}

TEST(LatencyHistogram, QuantilesWithinBucketPrecision) {
  LatencyHistogram h;
  for (std::uint64_t i = 1; i <= 100'000; ++i) h.add(i * 10);  // 10 ns .. 1 ms, uniform
  EXPECT_EQ(h.count(), 100'000u);
  EXPECT_NEAR(h.quantile_ns(0.5) / 500'000.0, 1.0, 0.02);
  EXPECT_NEAR(h.quantile_ns(0.99) / 990'000.0, 1.0, 0.02);
  EXPECT_NEAR(h.quantile_ns(0.999) / 999'000.0, 1.0, 0.02);
  EXPECT_NEAR(h.mean_ns(), 500'005.0, 1e-6);
  EXPECT_EQ(h.max_ns(), 1'000'000u);
  LatencyHistogram small;
  small.add(5);
  small.add(7);
  EXPECT_EQ(small.quantile_ns(0.5), 5.0);
  EXPECT_EQ(small.quantile_ns(1.0), 7.0);
  h.merge(small);
  EXPECT_EQ(h.count(), 100'002u);
  EXPECT_EQ(LatencyHistogram().quantile_ns(0.5), 0.0);
}

}  // namespace
}  // namespace duet::bench::kv
