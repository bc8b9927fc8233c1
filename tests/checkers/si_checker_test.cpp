// The snapshot-isolation checker (si_checker.hpp) on small hand-made histories: SI ones pass, and
// each kind of violation (a stale read, a read of a commit made after the start, a lost update, a
// phantom, a missed own write, a limit overrun) is caught.
#include "checkers/si_checker.hpp"

#include <gtest/gtest.h>

namespace duet::checkers {
namespace {

using K = SiEvent::Kind;

SiEvent get(std::string k, std::optional<std::string> v) {
  SiEvent e;
  e.kind = K::kGet;
  e.key = std::move(k);
  e.found = v.has_value();
  e.value = v.value_or("");
  return e;
}
SiEvent put(std::string k, std::string v) {
  SiEvent e;
  e.kind = K::kPut;
  e.key = std::move(k);
  e.value = std::move(v);
  return e;
}
SiEvent del(std::string k) {
  SiEvent e;
  e.kind = K::kDel;
  e.key = std::move(k);
  return e;
}
SiEvent range(std::string lo, std::string hi, std::size_t limit, std::vector<std::pair<std::string, std::string>> out) {
  SiEvent e;
  e.kind = K::kRange;
  e.key = std::move(lo);
  e.hi = std::move(hi);
  e.limit = limit;
  e.pairs = std::move(out);
  return e;
}
SiAttempt attempt(std::uint64_t start, std::uint64_t commit, std::vector<SiEvent> ev) {
  return SiAttempt{start, commit != 0, commit, std::move(ev)};
}

const std::map<std::string, std::string> kInitial = {{"a", "1"}, {"c", "3"}};

// T1 bumps a at 20 and deletes c; T2 starts after it and sees both, with its own write of b in
// its range; T3 began before T1 committed and sees the old state (and aborts); T4 writes a
// again, having begun after T1's commit.
std::vector<SiAttempt> good() {
  return {
      attempt(10, 20, {get("a", "1"), put("a", "2"), del("c")}),
      attempt(25, 30, {get("a", "2"), put("b", "x"), range("a", "z", 0, {{"a", "2"}, {"b", "x"}}), get("c", std::nullopt)}),
      attempt(15, 0, {get("a", "1"), range("a", "z", 0, {{"a", "1"}, {"c", "3"}}), put("a", "9")}),
      attempt(21, 40, {get("a", "2"), put("a", "4"), range("a", "z", 1, {{"a", "4"}})}),
  };
}

TEST(SiChecker, AcceptsSnapshotIsolatedHistories) {
  const SiResult r = check_snapshot_isolation(kInitial, good());
  EXPECT_TRUE(r.ok) << (r.errors.empty() ? "" : r.errors[0]);
}

TEST(SiChecker, CatchesEachKindOfViolation) {
  auto caught = [](std::vector<SiAttempt> h, const char* what) {
    const SiResult r = check_snapshot_isolation(kInitial, h);
    EXPECT_FALSE(r.ok) << what;
    return r;
  };
  auto h = good();
  h[1].events[0] = get("a", "1");  // stale: T1's commit at 20 precedes T2's start at 25
  caught(h, "stale read");
  h = good();
  h[2].events[0] = get("a", "2");  // T3 began at 15, before T1's commit: it must not see it
  caught(h, "read from the future");
  h = good();
  h[3].start = 19;  // T4 wrote a and began before T1 (which wrote a) committed
  const SiResult lost = caught(h, "lost update");
  EXPECT_NE(lost.errors[0].find("first committer wins"), std::string::npos) << lost.errors[0];
  h = good();
  h[1].events[2] = range("a", "z", 0, {{"a", "2"}});  // misses its own b
  caught(h, "missed own write");
  h = good();
  h[2].events[1] = range("a", "z", 0, {{"a", "1"}});  // misses c, present at 15
  caught(h, "phantom");
  h = good();
  h[3].events[2] = range("a", "z", 1, {{"a", "4"}, {"b", "x"}});  // past the limit
  caught(h, "limit overrun");
  h = good();
  h[3].commit = 20;  // the same timestamp as T1's
  caught(h, "duplicate commit timestamp");
}

}  // namespace
}  // namespace duet::checkers
