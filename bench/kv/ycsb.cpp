#include "ycsb.hpp"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace duet::bench::kv {
namespace {

/// Up to this many terms, zeta sums are exact.
constexpr std::uint64_t kExactTerms = std::uint64_t(1) << 16;
/// Terms summed exactly before the Euler-Maclaurin tail takes over.
constexpr std::uint64_t kHeadTerms = 1024;

/// sum_{i=a..b} i^-theta, added smallest term first.
double exact_sum(std::uint64_t a, std::uint64_t b, double theta) {
  double s = 0;
  for (std::uint64_t i = b; i >= a && i > 0; --i) s += std::pow(static_cast<double>(i), -theta);
  return s;
}

/// sum_{i=a..b} i^-theta for 1 <= a < b by the Euler-Maclaurin formula with f(x) = x^-theta:
///   integral_a^b f + (f(a) + f(b)) / 2 + B2/2! (f'(b) - f'(a)) + B4/4! (f'''(b) - f'''(a))
///   + B6/6! (f^(5)(b) - f^(5)(a)),
/// B2 = 1/6, B4 = -1/30, B6 = 1/42. For a >= 1024 the next term is below 1e-25.
double euler_maclaurin(std::uint64_t a_, std::uint64_t b_, double theta) {
  const double a = static_cast<double>(a_), b = static_cast<double>(b_);
  const double one = 1.0 - theta;
  // The integral, written so that it stays accurate as theta approaches 1.
  const double integral = theta == 1.0 ? std::log(b / a) : std::pow(a, one) * std::expm1(one * std::log(b / a)) / one;
  auto f = [&](double x) { return std::pow(x, -theta); };
  // Derivatives: f^(k)(x) = c_k x^(-theta-k), c_1 = -t, c_3 = -t(t+1)(t+2), c_5 = c_3 (t+3)(t+4).
  const double c1 = -theta, c3 = -theta * (theta + 1) * (theta + 2), c5 = c3 * (theta + 3) * (theta + 4);
  auto d = [&](double c, double k, double x) { return c * std::pow(x, -theta - k); };
  return integral + 0.5 * (f(a) + f(b)) + (d(c1, 1, b) - d(c1, 1, a)) / 12.0 -
         (d(c3, 3, b) - d(c3, 3, a)) / 720.0 + (d(c5, 5, b) - d(c5, 5, a)) / 30240.0;
}

}  // namespace

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  Rng r(seed ^ (stream * 0xd1b54a32d192ed03ull) ^ 0x6a09e667f3bcc909ull);
  r.next();
  return r.next();
}

double zeta(std::uint64_t n, double theta) { return zeta_delta(0, n, theta); }

double zeta_delta(std::uint64_t from, std::uint64_t to, double theta) {
  if (to <= from) return 0;
  if (to - from <= kExactTerms) return exact_sum(from + 1, to, theta);
  const std::uint64_t a = from + 1;
  if (a >= kHeadTerms) return euler_maclaurin(a, to, theta);
  return exact_sum(a, kHeadTerms - 1, theta) + euler_maclaurin(kHeadTerms, to, theta);
}

ZipfianGenerator::ZipfianGenerator(std::uint64_t items, double theta)
    : items_(std::max<std::uint64_t>(items, 1)), theta_(theta) {
  assert(theta >= 0 && theta < 1);
  alpha_ = 1.0 / (1.0 - theta_);
  zeta2_ = zeta(2, theta_);
  zetan_ = zeta(items_, theta_);
  half_pow_theta_ = std::pow(0.5, theta_);
  update_eta();
}

void ZipfianGenerator::update_eta() {
  // With one or two items next() never reaches the formula that uses eta.
  eta_ = items_ <= 2 ? 0.0
                     : (1.0 - std::pow(2.0 / static_cast<double>(items_), 1.0 - theta_)) / (1.0 - zeta2_ / zetan_);
}

void ZipfianGenerator::grow(std::uint64_t items) {
  if (items <= items_) return;
  zetan_ += zeta_delta(items_, items, theta_);
  items_ = items;
  update_eta();
}

std::uint64_t ZipfianGenerator::next(Rng& rng) const {
  const double u = rng.next_double();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + half_pow_theta_) return std::min<std::uint64_t>(1, items_ - 1);
  const double r = static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1.0, alpha_);
  const auto rank = static_cast<std::uint64_t>(r);
  return std::min(rank, items_ - 1);
}

double ZipfianGenerator::probability(std::uint64_t rank) const {
  return std::pow(static_cast<double>(rank) + 1.0, -theta_) / zetan_;
}

std::uint64_t fnv1a64(std::uint64_t x) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; ++i, x >>= 8) {
    h ^= x & 0xff;
    h *= 0x100000001b3ull;
  }
  return h;
}

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::kUniform: return "uniform";
    case Distribution::kZipfian: return "zipfian";
    case Distribution::kScrambled: return "scrambled";
    case Distribution::kLatest: return "latest";
  }
  return "unknown";
}

std::optional<Distribution> parse_distribution(std::string_view s) {
  if (s == "uniform") return Distribution::kUniform;
  if (s == "zipfian" || s == "zipf") return Distribution::kZipfian;
  if (s == "scrambled" || s == "scrambled-zipfian") return Distribution::kScrambled;
  if (s == "latest") return Distribution::kLatest;
  return std::nullopt;
}

namespace {

/// The generator a KeyChooser starts with: the hint when it fits, else a fresh one.
ZipfianGenerator initial_zipf(Distribution d, std::uint64_t key_range, double theta, std::uint64_t inserted,
                              const ZipfianGenerator* hint) {
  switch (d) {
    case Distribution::kUniform: return ZipfianGenerator(1, 0.0);
    case Distribution::kZipfian:
    case Distribution::kScrambled:
      if (hint && hint->items() == key_range && hint->theta() == theta) return *hint;
      return ZipfianGenerator(key_range, theta);
    case Distribution::kLatest:
      if (hint && hint->items() <= std::max<std::uint64_t>(inserted, 1) && hint->theta() == theta) {
        ZipfianGenerator z = *hint;
        z.grow(inserted);
        return z;
      }
      return ZipfianGenerator(std::max<std::uint64_t>(inserted, 1), theta);
  }
  return ZipfianGenerator(1, 0.0);
}

}  // namespace

KeyChooser::KeyChooser(Distribution d, std::uint64_t key_range, double theta, std::uint64_t inserted,
                       const ZipfianGenerator* zipf_hint)
    : d_(d), range_(std::max<std::uint64_t>(key_range, 1)),
      zipf_(initial_zipf(d, range_, theta, inserted, zipf_hint)) {}

std::uint64_t KeyChooser::zipf_rank(Rng& rng) {
  if (trace_size_ == 0) return zipf_.next(rng);
  if (trace_.empty()) {
    trace_.resize(trace_size_);
    for (auto& r : trace_) r = zipf_.next(rng);
  }
  return trace_[trace_pos_++ & (trace_size_ - 1)];
}

std::uint64_t KeyChooser::next(Rng& rng, std::uint64_t inserted) {
  switch (d_) {
    case Distribution::kUniform: return rng.below(range_);
    case Distribution::kZipfian: return rank_to_key(zipf_rank(rng));
    case Distribution::kScrambled: return fnv1a64(rank_to_key(zipf_rank(rng))) % range_;
    case Distribution::kLatest: {
      const std::uint64_t n = std::max<std::uint64_t>(inserted, 1);
      zipf_.grow(n);
      const std::uint64_t r = std::min(zipf_.next(rng), n - 1);
      return n - 1 - r;
    }
  }
  return 0;
}

std::optional<Workload> ycsb_workload(std::string_view letter) {
  if (letter.size() != 1) return std::nullopt;
  Workload w;
  switch (std::toupper(static_cast<unsigned char>(letter[0]))) {
    case 'A': w.name = "ycsb-a", w.read = 0.5, w.update = 0.5; break;
    case 'B': w.name = "ycsb-b", w.read = 0.95, w.update = 0.05; break;
    case 'C': w.name = "ycsb-c", w.read = 1.0; break;
    case 'D':
      w.name = "ycsb-d", w.read = 0.95, w.insert = 0.05;
      w.default_distribution = Distribution::kLatest;
      break;
    case 'F': w.name = "ycsb-f", w.read = 0.5, w.rmw = 0.5; break;
    default: return std::nullopt;
  }
  return w;
}

Workload read_update_mix(double read_percent) {
  Workload w;
  const double r = std::clamp(read_percent, 0.0, 100.0);
  char name[32];
  std::snprintf(name, sizeof name, "rw%g", r);
  w.name = name;
  w.read = r / 100.0;
  w.update = 1.0 - w.read;
  return w;
}

std::uint64_t decode_key(std::string_view key) {
  std::uint64_t k = 0;
  for (char c : key.substr(0, 8)) k = (k << 8) | static_cast<unsigned char>(c);
  return k;
}

namespace {

/// Four printable bytes (0x30..0x6f) holding the low 24 bits of x.
void put24(std::uint64_t x, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>('0' + ((x >> (18 - 6 * i)) & 63));
}

std::uint64_t get24(const char* in) {
  std::uint64_t x = 0;
  for (int i = 0; i < 4; ++i) x = (x << 6) | static_cast<std::uint64_t>((static_cast<unsigned char>(in[i]) - '0') & 63);
  return x;
}

std::uint64_t key_tag(std::uint64_t k) { return (k * 0x9e3779b97f4a7c15ull) >> 40; }

}  // namespace

void encode_value(std::uint64_t k, std::uint64_t version, char* out, std::size_t bytes) {
  put24(key_tag(k), out);
  put24(version, out + 4);
  for (std::size_t i = 8; i < bytes; ++i) out[i] = static_cast<char>('a' + i % 26);
}

bool value_matches_key(std::string_view v, std::uint64_t k) {
  if (v.size() < 8) return false;
  char tag[4];
  put24(key_tag(k), tag);
  return v.compare(0, 4, std::string_view(tag, 4)) == 0;
}

std::uint64_t value_version(std::string_view v) { return v.size() < 8 ? 0 : get24(v.data() + 4); }

}  // namespace duet::bench::kv
