// The recorded batch histories of batch_history.hpp on the CPU twin (cpu.hpp): the code the GPU
// driver's in-kernel histories are checked with (tests/cods/cods_gpu_twin_test.cu) runs here on
// every build, without a GPU. Contended batches over few keys are run by 3 threads, each request
// stamped around its call; the per-key checker must accept every history of the correct
// structures and refute one of a list with a planted bug (no re-validation after locking).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cods/batch_history.hpp"
#include "index/cods/cpu.hpp"

namespace duet::cods::ds {
namespace {

constexpr Regime E = Regime::kElementwise;
constexpr Regime F = Regime::kFullyAtomic;

std::vector<std::uint64_t> key_space(std::uint64_t range) {
  std::vector<std::uint64_t> keys = {0, ~std::uint64_t(0)};
  for (std::uint64_t k = 1; keys.size() < range; ++k) keys.push_back(k);
  return keys;
}

/// Runs `batches` contended batches of 8 requests per key on `front` with 3 threads and checks
/// the recorded history.
template <class Front>
checkers::CheckResult recorded(Front& front, const Hooks* hooks, std::uint64_t range, int batches, std::uint64_t seed,
                               bool tree) {
  std::vector<std::unique_ptr<CpuEnv>> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(front.session(hooks));
  std::mt19937_64 rng(seed);
  std::atomic<std::uint64_t> ticket{0};
  history::KeyHistory h;
  const std::vector<std::uint64_t> space = key_space(range);
  for (int b = 0; b < batches; ++b) {
    history::Recorded r = history::contended_batch(rng, space, 8 * range, b);
    const Status s = history::record_on_cpu(front, sessions, r, ticket);
    // Under a planted bug the test environment gives a stuck request up as kRetry (nothing
    // changed), which execute() reports as ResourceExhausted; those requests are left out.
    EXPECT_TRUE(s.ok() || (hooks && s.code() == StatusCode::kResourceExhausted)) << s.to_string();
    std::string why;
    EXPECT_TRUE(history::add_batch(r, tree, h, &why)) << why;
  }
  return checkers::check_per_key(h);
}

TEST(CodsBatchHistory, CpuTwinListIsLinearizable) {
  for (int round = 0; round < 2; ++round) {
    CpuLazyList<6, F> fa;
    const checkers::CheckResult a = recorded(fa, nullptr, 64, 5, 11 + round, false);
    EXPECT_TRUE(a.linearizable) << a.explanation;
    CpuLazyList<14, E> ew;
    const checkers::CheckResult b = recorded(ew, nullptr, 64, 5, 21 + round, false);
    EXPECT_TRUE(b.linearizable) << b.explanation;
  }
  // The negative control's configuration without its bug.
  Hooks hooks;
  hooks.yield_after_search = true;
  CpuLazyList<2, F> list;
  const checkers::CheckResult c = recorded(list, &hooks, 10, 3, 100, false);
  EXPECT_TRUE(c.linearizable) << c.explanation;
}

TEST(CodsBatchHistory, CpuTwinHashSetIsLinearizable) {
  using Set = CpuHashSet<14, F>;
  std::unique_ptr<Set> s;
  ASSERT_TRUE(Set::make(4, &s).ok());
  const checkers::CheckResult r = recorded(*s, nullptr, 256, 5, 31, false);
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

TEST(CodsBatchHistory, CpuTwinTreeIsLinearizable) {
  CpuBLinkTree<6, E> t;
  const checkers::CheckResult r = recorded(t, nullptr, 512, 5, 41, true);
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

// Negative control of the recording and checking code: a fully atomic list that skips the
// re-validation after locking (with a yield between search and lock) must be refuted.
TEST(CodsBatchHistory, CpuTwinPlantedNoRevalidationIsCaught) {
  Hooks hooks;
  hooks.yield_after_search = true;
  hooks.bug = Bug::kNoRevalidation;
  for (int round = 0; round < 100; ++round) {
    CpuLazyList<2, F> list;
    if (recorded(list, &hooks, 10, 3, 100 + round, false).refuted()) {
      std::printf("caught in round %d\n", round);
      return;
    }
  }
  FAIL() << "the planted bug was not caught in 100 rounds";
}

}  // namespace
}  // namespace duet::cods::ds
