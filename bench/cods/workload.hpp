// Pre-generated work for duet_bench_cods: the keys a structure is prefilled with and the
// operation streams every system replays (the same streams for Duet's structures and the
// peers, generated before any clock starts). Keys are uniform over [0, range); half the range
// is prefilled; a mix gives the percentage of contains/GET, inserts and removes split the rest.
#pragma once

#include <cstdint>
#include <vector>

namespace duet::bench::cods {

/// An operation of a stream: the kind in the top two bits, the key below (keys < 2^62).
enum class Kind : std::uint64_t { kContains = 0, kInsert = 1, kRemove = 2 };
inline Kind kind_of(std::uint64_t e) { return static_cast<Kind>(e >> 62); }
inline std::uint64_t key_of(std::uint64_t e) { return e & ((std::uint64_t{1} << 62) - 1); }

/// `count` distinct keys of [0, range) in a random order (deterministic in seed); count <= range.
std::vector<std::uint64_t> prefill_keys(std::uint64_t range, std::uint64_t count, std::uint64_t seed);

/// `threads` streams of `len` operations: contains with probability contains_pct / 100, else
/// insert or remove with equal probability; keys uniform over [0, range). Stream i is drawn
/// from a seed derived from `seed` and i.
std::vector<std::vector<std::uint64_t>> make_streams(std::uint64_t range, double contains_pct, unsigned threads,
                                                     std::uint64_t len, std::uint64_t seed);

}  // namespace duet::bench::cods
