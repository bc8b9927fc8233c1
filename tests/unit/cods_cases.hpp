// CODS test cases written once for both processors: each returns the number of failed checks
// seen by the calling group, so the CPU test calls it with a CpuThread and the GPU test calls
// it from a kernel with tiles of 8, 16 and 32 lanes.
#pragma once

#include <cstdint>

#include "cods/cods.hpp"

namespace duet::cods::cases {

/// get/set round trip, find, ballot, broadcast, count, min and max on a 32-element c-object
/// whose element i holds 3 * i + 1 (+ salt).
template <class Group>
DUET_HD int fragment_ops_case(const Group& g, CObject<32>& obj, std::uint64_t salt) {
  int bad = 0;
  Fragment<32, Group> f;
  f.get(g, obj);
  for (unsigned i = 0; i < 32; ++i) {
    const std::uint64_t want = 3 * i + 1 + salt;
    bad += f.broadcast(g, i) != want;
    bad += f.find(g, want) != static_cast<int>(i);
  }
  bad += f.find(g, 2 + salt) != -1;                            // 2 is never 3i+1
  bad += f.find(g, 3 * 5 + 1 + salt, ~ElementMask(0) << 6) != -1;  // excluded by the mask
  const ElementMask even = f.ballot(g, [](std::uint64_t, unsigned i) { return i % 2 == 0; });
  bad += even != 0x55555555ull;
  const ElementMask big = f.ballot(g, [salt](std::uint64_t x, unsigned) { return x > 3 * 29 + 1 + salt; });
  bad += big != (0x3ull << 30);
  bad += f.count(g, 7 + salt) != 1;
  bad += f.min(g) != 1 + salt;
  bad += f.max(g) != 3 * 31 + 1 + salt;
  bad += f.min(g, 0xF0ull) != 3 * 4 + 1 + salt;
  bad += f.max(g, 0xF0ull) != 3 * 7 + 1 + salt;
  // Modify in near memory, write back, read again.
DUET_UNROLL
  for (unsigned j = 0; j < f.kPerLane; ++j) f.e[j] += 1000;
  f.set(g, obj);
  g.sync();
  Fragment<32, Group> h;
  h.get(g, obj);
  for (unsigned i = 0; i < 32; ++i) bad += h.broadcast(g, i) != 3 * i + 1 + salt + 1000;
  return bad;
}

/// Single-element atomics: load, store, successful and failed CAS (leader only).
template <class Group>
DUET_HD int element_atomics_case(const Group& g, CObject<8>& obj) {
  int bad = 0;
  if (g.is_leader()) {
    obj.store(3, 42);
    bad += obj.load(3) != 42;
    std::uint64_t expected = 41;
    bad += obj.cas(3, expected, 50);  // must fail
    bad += expected != 42;            // and report what it found
    bad += !obj.cas(3, expected, 50);
    bad += obj.load(3) != 50;
    bad += obj.exchange(3, 60) != 50;
    bad += obj.load(3) != 60;
    bad += obj.exchange_exclusive(3, 70) != 60;
    bad += obj.load(3) != 70;
  }
  g.sync();
  return bad;
}

/// Fully atomic regime: writer groups set every element to the same value; reader groups
/// count copies whose elements disagree (a torn read). Returns torn reads seen.
template <class Group>
DUET_HD int fully_atomic_case(const Group& g, AtomicCObject<32>& obj, bool writer, std::uint64_t id, int iters) {
  int torn = 0;
  Fragment<32, Group> f;
  for (int it = 0; it < iters; ++it) {
    if (writer) {
      f.fill(id * 1000003ull + static_cast<std::uint64_t>(it));
      atomic_set(g, obj, f);
    } else {
      atomic_get(g, obj, f);
      const std::uint64_t first = f.broadcast(g, 0);
      torn += f.count(g, first) != 32;
    }
  }
  return torn;
}

}  // namespace duet::cods::cases
