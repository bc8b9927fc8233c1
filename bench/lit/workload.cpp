#include "workload.hpp"

#include <cassert>
#include <cstring>

namespace duet::bench::lit {
namespace {

/// splitmix64's output function: a bijection that spreads every input bit.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

const char* workload_name(WorkloadKind w) {
  switch (w) {
    case WorkloadKind::kGet: return "get";
    case WorkloadKind::kInsertRemove: return "insert-remove";
    case WorkloadKind::kMixed: return "80-10-10";
    case WorkloadKind::kZipfMixed: return "zipf-80-10-10";
  }
  return "?";
}

std::optional<WorkloadKind> parse_workload(const std::string& name) {
  for (WorkloadKind w : {WorkloadKind::kGet, WorkloadKind::kInsertRemove, WorkloadKind::kMixed,
                         WorkloadKind::kZipfMixed})
    if (name == workload_name(w)) return w;
  return std::nullopt;
}

const char* workload_description(WorkloadKind w) {
  switch (w) {
    case WorkloadKind::kGet: return "uniform keys, 100% GET";
    case WorkloadKind::kInsertRemove: return "uniform keys, 50% INSERT, 50% REMOVE";
    case WorkloadKind::kMixed:
      return "uniform keys, 80% GET, 5% INSERT, 5% REMOVE, 10% RANGE of range_length keys from a uniform start";
    case WorkloadKind::kZipfMixed:
      return "Zipfian keys (key = rank + 1, key 1 hottest), 80% GET, 5% INSERT, 5% REMOVE, 10% RANGE of "
             "range_length keys from a Zipfian start";
  }
  return "?";
}

Permutation::Permutation(std::uint64_t n, std::uint64_t seed) : n_(n) {
  assert(n >= 1);
  unsigned bits = 2;
  while (bits < 64 && (std::uint64_t{1} << bits) < n) bits += 2;
  half_bits_ = bits / 2;
  half_mask_ = (std::uint64_t{1} << half_bits_) - 1;
  for (int i = 0; i < 4; ++i) round_keys_[i] = mix(seed + 0x9e3779b97f4a7c15ull * std::uint64_t(i + 1));
}

std::uint64_t Permutation::encrypt(std::uint64_t x) const {
  std::uint64_t l = x >> half_bits_, r = x & half_mask_;
  for (std::uint64_t k : round_keys_) {
    const std::uint64_t f = mix(r ^ k) & half_mask_;
    const std::uint64_t nl = r;
    r = l ^ f;
    l = nl;
  }
  return (l << half_bits_) | r;
}

std::uint64_t Permutation::operator()(std::uint64_t x) const {
  assert(x < n_);
  // Cycle walking: the network permutes [0, 4^half_bits) and that domain is less than 4n, so
  // a few steps on average lead back below n.
  std::uint64_t y = encrypt(x);
  while (y >= n_) y = encrypt(y);
  return y;
}

std::uint64_t stream_seed(std::uint64_t base, WorkloadKind w, std::uint64_t key_range, double theta, unsigned run,
                          unsigned thread) {
  std::uint64_t theta_bits = 0;
  static_assert(sizeof theta_bits == sizeof theta);
  std::memcpy(&theta_bits, &theta, sizeof theta);
  std::uint64_t s = mix(base ^ 0x6c69742d62656e63ull);
  s = mix(s ^ (std::uint64_t(w) + 1));
  s = mix(s ^ key_range);
  s = mix(s ^ theta_bits);
  s = mix(s ^ (std::uint64_t(run) << 32 | thread));
  return s;
}

void zipf_trace(std::uint64_t key_range, double theta, std::uint64_t seed, std::size_t n,
                std::vector<std::uint64_t>* out) {
  out->resize(n);
  kv::Rng rng(seed ^ 0x7a697066ull);  // not the operation stream's sequence
  const kv::ZipfianGenerator z(key_range, theta);
  for (std::size_t i = 0; i < n; ++i) (*out)[i] = z.next(rng) + 1;
}

}  // namespace duet::bench::lit
