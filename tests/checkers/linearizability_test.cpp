// The checker must accept linearizable histories and reject the others; otherwise tests that
// rely on it prove nothing.
#include "checkers/linearizability.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace duet::checkers;
using K = RegisterOpKind;

static RegisterOp op(std::uint64_t inv, std::uint64_t resp, K kind, std::uint64_t arg, bool found, std::uint64_t out) {
  return {inv, resp, kind, arg, found, out};
}

TEST(Linearizability, SequentialHistory) {
  std::vector<RegisterOp> h = {op(0, 1, K::kGet, 0, false, 0), op(2, 3, K::kPut, 5, false, 0),
                               op(4, 5, K::kGet, 0, true, 5), op(6, 7, K::kPut, 6, true, 5),
                               op(8, 9, K::kDelete, 0, true, 6), op(10, 11, K::kGet, 0, false, 0)};
  EXPECT_TRUE(check_register(h).linearizable);
}

TEST(Linearizability, ConcurrentOpsMayReorder) {
  // A get overlapping a put may see either state; both outcomes are fine.
  EXPECT_TRUE(check_register({op(0, 10, K::kPut, 1, false, 0), op(1, 2, K::kGet, 0, true, 1)}).linearizable);
  EXPECT_TRUE(check_register({op(0, 10, K::kPut, 1, false, 0), op(1, 2, K::kGet, 0, false, 0)}).linearizable);
  // One batch (same interval) whose puts chained in an order other than the index order.
  EXPECT_TRUE(check_register({op(0, 1, K::kPut, 1, true, 2), op(0, 1, K::kPut, 2, false, 0),
                              op(0, 1, K::kGet, 0, true, 1)})
                  .linearizable);
}

TEST(Linearizability, RejectsStaleReadAfterWriteCompleted) {
  auto r = check_register({op(0, 1, K::kPut, 1, false, 0), op(2, 3, K::kGet, 0, false, 0)});
  EXPECT_TRUE(r.refuted());
  EXPECT_NE(r.explanation.find("no linearization"), std::string::npos);
}

TEST(Linearizability, RejectsLostUpdate) {
  // Two concurrent puts both claim to have replaced "absent": one update was lost.
  EXPECT_TRUE(check_register({op(0, 5, K::kPut, 1, false, 0), op(0, 5, K::kPut, 2, false, 0)}).refuted());
}

TEST(Linearizability, RejectsValueNeverWritten) {
  EXPECT_TRUE(check_register({op(0, 5, K::kPut, 1, false, 0), op(0, 5, K::kGet, 0, true, 7)}).refuted());
}

TEST(Linearizability, RespectsInitialValue) {
  EXPECT_TRUE(check_register({op(0, 1, K::kGet, 0, true, 9)}, 9).linearizable);
  EXPECT_TRUE(check_register({op(0, 1, K::kGet, 0, true, 9)}).refuted());
}

TEST(Linearizability, DecidesLargeHeavilyOverlappingHistories) {
  // Run 1500 operations sequentially on a model register, then widen each operation's interval
  // around its real position so hundreds overlap; the history stays linearizable by construction.
  std::mt19937_64 rng(3);
  std::vector<RegisterOp> h;
  bool present = false;
  std::uint64_t value = 0;
  for (std::uint64_t t = 0; t < 1500; ++t) {
    RegisterOp o;
    const auto r = rng() % 10;
    o.kind = r < 5 ? K::kGet : r < 8 ? K::kPut : K::kDelete;
    o.arg = t + 1;
    o.found = present;
    o.out = present ? value : 0;
    if (o.kind == K::kPut) present = true, value = o.arg;
    if (o.kind == K::kDelete) present = false, value = 0;
    const std::uint64_t at = 1000 + 10 * t;
    o.invoke = at - rng() % 1000;
    o.response = at + rng() % 1000;
    h.push_back(o);
  }
  EXPECT_TRUE(check_register(h).linearizable);
  // Corrupting one read's outcome must be caught.
  for (auto& o : h)
    if (o.kind == K::kGet && o.found) {
      o.out += 1000000;
      break;
    }
  EXPECT_TRUE(check_register(h, std::nullopt, 1'000'000).refuted());
}

TEST(Linearizability, ReportsAnExhaustedBudgetAsUndecidedNotAsRefuted) {
  // A linearizable history of overlapping writes with a budget too small to finish the search:
  // the checker must say it gave up, not that the history is wrong.
  std::vector<RegisterOp> h;
  for (std::uint64_t i = 0; i < 40; ++i) h.push_back(op(0, 100, K::kPut, i + 1, i > 0, i));
  const CheckResult r = check_register(h, std::nullopt, 5);
  EXPECT_FALSE(r.linearizable);
  EXPECT_TRUE(r.undecided);
  EXPECT_FALSE(r.refuted());
  EXPECT_NE(r.explanation.find("budget exhausted"), std::string::npos);
  EXPECT_TRUE(check_register(h).linearizable);  // with the default budget it is decided
}
