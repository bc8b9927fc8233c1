#include "batch/orangutan/workload.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace duet::batch::orangutan {

ZipfDraw::ZipfDraw(std::uint32_t n, double theta) {
  if (theta <= 0) return;
  cdf_.resize(n);
  double sum = 0;
  for (std::uint32_t k = 0; k < n; ++k) cdf_[k] = (sum += 1.0 / std::pow(double(k + 1), theta));
  for (double& x : cdf_) x /= sum;
}

std::uint32_t ZipfDraw::operator()(std::mt19937_64& rng) const {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  const auto it = std::lower_bound(cdf_.begin(), cdf_.end(), u);
  return static_cast<std::uint32_t>(std::min<std::size_t>(it - cdf_.begin(), cdf_.size() - 1));
}

TransferGenerator::TransferGenerator(const WorkloadConfig& c) : c_(c), rng_(c.seed), zipf_(c.accounts, c.theta) {
  sender_perm_.resize(c.accounts);
  std::iota(sender_perm_.begin(), sender_perm_.end(), 0u);
  receiver_perm_ = sender_perm_;
  std::shuffle(sender_perm_.begin(), sender_perm_.end(), rng_);
  std::shuffle(receiver_perm_.begin(), receiver_perm_.end(), rng_);
}

std::vector<Tx> TransferGenerator::block(std::size_t n) {
  std::vector<Tx> out(n);
  std::uniform_int_distribution<std::uint32_t> uni(0, c_.accounts - 1);
  std::uniform_int_distribution<std::int64_t> amt(c_.amount_min, c_.amount_max);
  auto draw = [&](const std::vector<std::uint32_t>& perm) { return c_.theta > 0 ? perm[zipf_(rng_)] : uni(rng_); };
  for (Tx& t : out) {
    t.sender = draw(sender_perm_);
    do t.receiver = draw(receiver_perm_);
    while (!c_.allow_self && c_.accounts > 1 && t.receiver == t.sender);
    t.amt = amt(rng_);
  }
  return out;
}

}  // namespace duet::batch::orangutan
