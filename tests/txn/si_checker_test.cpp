// The SI checker on hand-made histories: each anomaly it must reject, and write skew, which
// snapshot isolation allows.
#include <gtest/gtest.h>

#include "txn/si_checker.hpp"

namespace duet::sicheck {
namespace {

struct Builder {
  std::vector<TxnRec> h;
  TxnRec& t(std::uint64_t id, std::uint64_t invoke, std::uint64_t complete, bool committed = true) {
    h.push_back(TxnRec{id, invoke, complete, committed, {}});
    return h.back();
  }
};

Op R(std::uint64_t k, List l) { return Op{Op::kRead, k, std::move(l), 0}; }
Op A(std::uint64_t k, Elem e, List written) { return Op{Op::kAppend, k, std::move(written), e}; }

TEST(SiChecker, SerialHistoryPasses) {
  Builder b;
  b.t(1, 1, 2).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 3, 4).ops = {R(0, {1}), A(0, 2, {1, 2}), R(1, {})};
  b.t(3, 5, 6).ops = {R(0, {1, 2}), R(1, {})};
  const Result r = check(b.h, {{0, {1, 2}}});
  EXPECT_TRUE(r.ok) << r.anomaly << ": " << r.detail;
}

TEST(SiChecker, WriteSkewIsAllowed) {
  Builder b;  // both read x and y at the same snapshot, each writes one: two adjacent rw edges
  b.t(1, 1, 4).ops = {R(0, {}), R(1, {}), A(0, 1, {1})};
  b.t(2, 2, 3).ops = {R(0, {}), R(1, {}), A(1, 2, {2})};
  const Result r = check(b.h, {{0, {1}}, {1, {2}}});
  EXPECT_TRUE(r.ok) << r.anomaly << ": " << r.detail;
}

TEST(SiChecker, RejectsG0) {
  Builder b;  // blind appends ordered T1 < T2 on x and T2 < T1 on y
  b.t(1, 1, 4).ops = {A(0, 1, {1}), A(1, 11, {12, 11})};
  b.t(2, 2, 3).ops = {A(0, 2, {1, 2}), A(1, 12, {12})};
  const Result r = check(b.h, {{0, {1, 2}}, {1, {12, 11}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G0") << r.detail;
}

TEST(SiChecker, RejectsG1a) {
  Builder b;
  b.t(1, 1, 2, false).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 3, 4).ops = {R(0, {1})};
  const Result r = check(b.h, {});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G1a") << r.detail;
}

TEST(SiChecker, RejectsG1b) {
  Builder b;
  b.t(1, 1, 4).ops = {R(0, {}), A(0, 1, {1}), A(0, 2, {1, 2})};
  b.t(2, 2, 3).ops = {R(0, {1})};
  const Result r = check(b.h, {{0, {1, 2}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G1b") << r.detail;
}

TEST(SiChecker, RejectsG1c) {
  Builder b;  // each reads the other's write: a wr cycle
  b.t(1, 1, 4).ops = {A(0, 1, {1}), R(1, {2})};
  b.t(2, 2, 3).ops = {A(1, 2, {2}), R(0, {1})};
  const Result r = check(b.h, {{0, {1}}, {1, {2}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G1c") << r.detail;
}

TEST(SiChecker, RejectsLostUpdate) {
  Builder b;
  b.t(1, 1, 4).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 2, 3).ops = {R(0, {}), A(0, 2, {2})};
  const Result r = check(b.h, {{0, {2}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "lost update") << r.detail;
}

TEST(SiChecker, RejectsFracturedRead) {
  Builder b;  // T2 sees T1's write to x but not to y
  b.t(1, 1, 3).ops = {A(0, 1, {1}), A(1, 2, {2})};
  b.t(2, 2, 4).ops = {R(0, {1}), R(1, {})};
  const Result r = check(b.h, {{0, {1}}, {1, {2}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G-single") << r.detail;
}

TEST(SiChecker, RejectsNonRepeatableRead) {
  Builder b;
  b.t(1, 2, 3).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 1, 4).ops = {R(0, {}), R(0, {1})};
  const Result r = check(b.h, {{0, {1}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "internal") << r.detail;
}

TEST(SiChecker, RejectsLostOwnWrite) {
  Builder b;
  b.t(1, 1, 2).ops = {R(0, {}), A(0, 1, {1}), R(0, {})};
  const Result r = check(b.h, {{0, {1}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "internal") << r.detail;
}

TEST(SiChecker, RejectsStaleReadAfterCommitReturned) {
  Builder b;  // T2 begins after T1's commit returned but misses it
  b.t(1, 1, 2).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 3, 4).ops = {R(0, {})};
  const Result r = check(b.h, {{0, {1}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "real-time") << r.detail;
}

TEST(SiChecker, StaleReadOfConcurrentCommitIsAllowed) {
  Builder b;  // the same reads, but T2 began before T1's commit returned
  b.t(1, 1, 3).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 2, 4).ops = {R(0, {})};
  const Result r = check(b.h, {{0, {1}}});
  EXPECT_TRUE(r.ok) << r.anomaly << ": " << r.detail;
}

TEST(SiChecker, RejectsIncompatibleOrder) {
  Builder b;
  b.t(1, 1, 2).ops = {R(0, {}), A(0, 1, {1})};
  b.t(2, 3, 4).ops = {R(0, {1}), A(0, 2, {1, 2})};
  b.t(3, 5, 6).ops = {R(0, {2})};
  const Result r = check(b.h, {{0, {1, 2}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "incompatible order") << r.detail;
}

TEST(SiChecker, RejectsAbortedElementInFinalState) {
  Builder b;
  b.t(1, 1, 2, false).ops = {A(0, 1, {1})};
  const Result r = check(b.h, {{0, {1}}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.anomaly, "G1a") << r.detail;
}

}  // namespace
}  // namespace duet::sicheck
