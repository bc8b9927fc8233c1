// The concurrent union-find of OranguTAN's conflict DAG (Alg. 13 / 15), written once for both
// processors (DUET_HD): CAS linking and CAS path halving over a parent array of transaction
// indices. The smaller index always becomes the root, so parent[x] <= x holds at every moment
// and each cluster's root is its earliest transaction; the final roots (the minimum index of
// each connected component) do not depend on the order in which unions ran.
#pragma once

#include <cstdint>

#include "cods/hd.hpp"

namespace duet::batch::orangutan {

DUET_HD DUET_INLINE std::uint32_t uf_load(const std::uint32_t* p) {
#if DUET_DEVICE_PASS
  return *reinterpret_cast<const volatile std::uint32_t*>(p);
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/// Compare-and-swap of one parent entry; true when *p held `expected` and now holds `desired`.
DUET_HD DUET_INLINE bool uf_cas(std::uint32_t* p, std::uint32_t expected, std::uint32_t desired) {
#if DUET_DEVICE_PASS
  return atomicCAS(reinterpret_cast<unsigned*>(p), expected, desired) == expected;
#else
  return __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

/// The root of x's set, halving the path on the way (each visited node is CAS-moved to its
/// grandparent; a lost CAS only means another thread shortened it first).
DUET_HD DUET_INLINE std::uint32_t uf_find(std::uint32_t* parent, std::uint32_t x) {
  for (;;) {
    const std::uint32_t p = uf_load(parent + x);
    if (p == x) return x;
    const std::uint32_t g = uf_load(parent + p);
    if (g == p) return p;
    uf_cas(parent + x, p, g);
    x = g;
  }
}

/// Joins the sets of a and b. `larger_root` plants a known bug for the tests' negative control
/// (the larger index becomes the root, so a root is no longer its cluster's first transaction).
DUET_HD DUET_INLINE void uf_union(std::uint32_t* parent, std::uint32_t a, std::uint32_t b, bool larger_root = false) {
  for (;;) {
    std::uint32_t ra = uf_find(parent, a), rb = uf_find(parent, b);
    if (ra == rb) return;
    if ((ra < rb) != larger_root) {  // link the losing root under the winning one
      const std::uint32_t t = ra;
      ra = rb;
      rb = t;
    }
    if (uf_cas(parent + ra, ra, rb)) return;
    a = ra;
    b = rb;
  }
}

}  // namespace duet::batch::orangutan
