#include "index/hydralist/fingerprint.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace duet::hydralist {

std::uint64_t match_scalar(const std::uint8_t* fps, std::uint8_t fp) {
  std::uint64_t m = 0;
  for (unsigned i = 0; i < 64; ++i)
    if (__atomic_load_n(fps + i, __ATOMIC_RELAXED) == fp) m |= std::uint64_t{1} << i;
  return m;
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) static std::uint64_t match_avx2(const std::uint8_t* fps, std::uint8_t fp) {
  const __m256i needle = _mm256_set1_epi8(static_cast<char>(fp));
  const __m256i lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(fps));
  const __m256i hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(fps + 32));
  const auto mlo = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, needle)));
  const auto mhi = static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, needle)));
  return (std::uint64_t{mhi} << 32) | mlo;
}

__attribute__((target("avx512bw,avx512f"))) static std::uint64_t match_avx512(const std::uint8_t* fps,
                                                                              std::uint8_t fp) {
  const __m512i v = _mm512_load_si512(reinterpret_cast<const void*>(fps));
  return _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(static_cast<char>(fp)));
}
#endif

const char* simd_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512bw";
  }
  return "?";
}

bool simd_supported(SimdLevel level) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (level) {
    case SimdLevel::kScalar: return true;
    case SimdLevel::kAvx2: return __builtin_cpu_supports("avx2");
    case SimdLevel::kAvx512: return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f");
  }
  return false;
#else
  return level == SimdLevel::kScalar;
#endif
}

SimdLevel best_simd() {
#if defined(__SANITIZE_THREAD__)
  return SimdLevel::kScalar;
#else
  if (simd_supported(SimdLevel::kAvx512)) return SimdLevel::kAvx512;
  if (simd_supported(SimdLevel::kAvx2)) return SimdLevel::kAvx2;
  return SimdLevel::kScalar;
#endif
}

MatchFn match_fn(SimdLevel level) {
  if (!simd_supported(level)) return nullptr;
  switch (level) {
    case SimdLevel::kScalar: return &match_scalar;
#if defined(__x86_64__)
    case SimdLevel::kAvx2: return &match_avx2;
    case SimdLevel::kAvx512: return &match_avx512;
#else
    default: return nullptr;
#endif
  }
  return nullptr;
}

}  // namespace duet::hydralist
