// Fingerprint matching for Hydralist's data nodes: a node keeps one hash byte per slot (64
// bytes), and a probe compares the searched key's byte against all of them at once, giving a
// 64-bit mask of candidate slots (bit i set when fingerprint i equals the byte). The
// implementation is chosen once, at run time, from what the CPU supports: AVX-512BW (one
// 64-byte compare), AVX2 (two 32-byte compares) or scalar. Each is callable directly, so tests
// compare all three.
#pragma once

#include <cstdint>

namespace duet::hydralist {

/// A fingerprint matcher: `fps` points at 64 bytes (64-byte aligned); returns the mask of
/// positions equal to `fp`. The bytes may be written concurrently by a lock holder: a reader
/// validates the node's version afterwards, so a torn read only causes a retry.
using MatchFn = std::uint64_t (*)(const std::uint8_t* fps, std::uint8_t fp);

enum class SimdLevel : std::uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

/// "scalar", "avx2", "avx512bw".
const char* simd_name(SimdLevel level);
/// The best level this CPU supports (scalar in ThreadSanitizer builds, whose reads of the
/// bytes must go through atomic loads to be seen as the benign races they are).
SimdLevel best_simd();
/// Whether the CPU supports `level`.
bool simd_supported(SimdLevel level);
/// The matcher for `level`; null when the CPU does not support it.
MatchFn match_fn(SimdLevel level);

/// The scalar matcher (always available).
std::uint64_t match_scalar(const std::uint8_t* fps, std::uint8_t fp);

}  // namespace duet::hydralist
