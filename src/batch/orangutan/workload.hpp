// Transfer workloads as the seed's evaluation draws them (§4.6): senders and receivers uniform,
// or from two Zipfian distributions of skew theta (the receiver's ranking independently
// permuted), amounts uniform in [amount_min, amount_max]. Used by the tests and `duet bench
// transfer`; deterministic for a seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "batch/orangutan/profiles.hpp"

namespace duet::batch::orangutan {

struct WorkloadConfig {
  std::uint32_t accounts = 10000;
  double theta = 0;  ///< 0: uniform; otherwise the Zipf skew (0 < theta < 1 tested)
  std::int64_t amount_min = 1, amount_max = 20;
  bool allow_self = false;  ///< sender == receiver allowed (else redrawn)
  std::uint64_t seed = 1;
};

/// Draws ranks 0..n-1 with P(k) proportional to 1/(k+1)^theta, by inverse CDF over a table.
class ZipfDraw {
 public:
  ZipfDraw(std::uint32_t n, double theta);
  std::uint32_t operator()(std::mt19937_64& rng) const;

 private:
  std::vector<double> cdf_;
};

/// Generates blocks; each call continues the same random stream.
class TransferGenerator {
 public:
  explicit TransferGenerator(const WorkloadConfig& c);
  std::vector<Tx> block(std::size_t n);

 private:
  WorkloadConfig c_;
  std::mt19937_64 rng_;
  ZipfDraw zipf_;
  std::vector<std::uint32_t> sender_perm_, receiver_perm_;
};

}  // namespace duet::batch::orangutan
