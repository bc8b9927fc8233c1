// The per-element functions both processors share (DUET_HD): hashing, the order-preserving
// transforms of sort keys, and predicate evaluation. Written once so that the CPU twin and the
// GPU kernels make the same decisions bit for bit.
#pragma once

#include <cstdint>
#include <cstring>

#include "cods/hd.hpp"
#include "compute/compute.hpp"

namespace duet::compute::detail {

/// MurmurHash3's 64-bit finaliser.
DUET_HD DUET_INLINE std::uint64_t hash64(std::uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}
/// Hash of a key tuple, one column at a time.
DUET_HD DUET_INLINE std::uint64_t hash_step(std::uint64_t h, std::int64_t k) {
  return hash64(h ^ (static_cast<std::uint64_t>(k) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

/// Unsigned keys whose ascending order is the column's order (descending when `desc`).
DUET_HD DUET_INLINE std::uint64_t order_i64(std::int64_t v, bool desc) {
  const std::uint64_t u = static_cast<std::uint64_t>(v) ^ (1ULL << 63);
  return desc ? ~u : u;
}
DUET_HD DUET_INLINE std::uint64_t order_bits64(std::uint64_t b, bool desc) {
  const std::uint64_t u = (b >> 63) ? ~b : (b | (1ULL << 63));
  return desc ? ~u : u;
}
DUET_HD DUET_INLINE std::uint64_t order_f64(double v, bool desc) {
  std::uint64_t b;
  memcpy(&b, &v, 8);
  return order_bits64(b, desc);
}
DUET_HD DUET_INLINE std::uint64_t order_f32(float v, bool desc) {
  std::uint32_t b;
  memcpy(&b, &v, 4);
  const std::uint32_t u = (b >> 31) ? ~b : (b | (1U << 31));
  const std::uint64_t w = static_cast<std::uint64_t>(u);
  return desc ? ~w : w;
}

/// Integer predicate. kBetween is lo <= v <= hi.
DUET_HD DUET_INLINE bool pred_i64(std::int64_t v, Cmp c, std::int64_t lo, std::int64_t hi) {
  switch (c) {
    case Cmp::kLt: return v < lo;
    case Cmp::kLe: return v <= lo;
    case Cmp::kEq: return v == lo;
    case Cmp::kNe: return v != lo;
    case Cmp::kGe: return v >= lo;
    case Cmp::kGt: return v > lo;
    case Cmp::kBetween: return lo <= v && v <= hi;
  }
  return false;
}
/// Float predicate with IEEE semantics (every comparison with NaN is false; kNe is !(v == lo)).
DUET_HD DUET_INLINE bool pred_f64(double v, Cmp c, double lo, double hi) {
  switch (c) {
    case Cmp::kLt: return v < lo;
    case Cmp::kLe: return v <= lo;
    case Cmp::kEq: return v == lo;
    case Cmp::kNe: return !(v == lo);
    case Cmp::kGe: return v >= lo;
    case Cmp::kGt: return v > lo;
    case Cmp::kBetween: return lo <= v && v <= hi;
  }
  return false;
}
/// memcmp's sign over w bytes.
DUET_HD DUET_INLINE int cmp_bytes(const char* a, const char* b, std::uint32_t w) {
  for (std::uint32_t i = 0; i < w; ++i) {
    const unsigned char x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}
DUET_HD DUET_INLINE bool pred_bytes(const char* v, Cmp c, const char* lo, const char* hi, std::uint32_t w) {
  const int a = cmp_bytes(v, lo, w);
  switch (c) {
    case Cmp::kLt: return a < 0;
    case Cmp::kLe: return a <= 0;
    case Cmp::kEq: return a == 0;
    case Cmp::kNe: return a != 0;
    case Cmp::kGe: return a >= 0;
    case Cmp::kGt: return a > 0;
    case Cmp::kBetween: return a >= 0 && cmp_bytes(v, hi, w) <= 0;
  }
  return false;
}

/// Integer expression with wrap-around (unsigned arithmetic, so no undefined overflow).
DUET_HD DUET_INLINE std::int64_t apply_expr(Expr::Op op, std::int64_t a, std::int64_t b) {
  const std::uint64_t x = static_cast<std::uint64_t>(a), y = static_cast<std::uint64_t>(b);
  switch (op) {
    case Expr::kAdd: return static_cast<std::int64_t>(x + y);
    case Expr::kSub: return static_cast<std::int64_t>(x - y);
    case Expr::kMul: return static_cast<std::int64_t>(x * y);
  }
  return 0;
}

/// The smallest power of two >= max(2n, 16): hash tables stay at most half full.
inline std::uint64_t table_capacity(std::uint64_t n) {
  std::uint64_t c = 16;
  while (c < 2 * n) c <<= 1;
  return c;
}

}  // namespace duet::compute::detail
