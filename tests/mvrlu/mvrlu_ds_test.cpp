// The structures on MV-RLU: against std::set sequentially, and linearizable under 4 threads
// over small key ranges (recorded histories, the set checker). A negative control runs the
// same history check on a deliberately broken set and requires a refutation.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "checkers/set_linearizability.hpp"
#include "mvrlu/ds/bst.hpp"
#include "mvrlu/ds/list.hpp"
#include "mvrlu/mvrlu_test_util.hpp"

namespace duet::mvrlu {
namespace {

using testing::make_domain;
using testing::make_thread;

enum class Kind { kList, kHash, kBst };

/// One interface over the three structures for the tests.
class AnySet {
 public:
  static std::unique_ptr<AnySet> make(Kind k, Domain& d, Thread& t) {
    auto s = std::make_unique<AnySet>();
    Status st;
    switch (k) {
      case Kind::kList: st = ds::List::create(d, t, &s->list_); break;
      case Kind::kHash: st = ds::HashTable::create(d, t, 4, &s->hash_); break;  // long chains
      case Kind::kBst: st = ds::Bst::create(d, t, &s->bst_); break;
    }
    EXPECT_TRUE(st.ok()) << st.to_string();
    return s;
  }
  Status insert(Thread& t, std::uint64_t k, bool* r) {
    return list_ ? list_->insert(t, k, r) : hash_ ? hash_->insert(t, k, r) : bst_->insert(t, k, r);
  }
  Status remove(Thread& t, std::uint64_t k, bool* r) {
    return list_ ? list_->remove(t, k, r) : hash_ ? hash_->remove(t, k, r) : bst_->remove(t, k, r);
  }
  Status contains(Thread& t, std::uint64_t k, bool* r) {
    return list_ ? list_->contains(t, k, r) : hash_ ? hash_->contains(t, k, r) : bst_->contains(t, k, r);
  }
  /// Keys in order where the structure keeps order (list, BST); empty for the hash table.
  Status keys(Thread& t, std::vector<std::uint64_t>* out) {
    out->clear();
    if (list_) return list_->keys(t, out);
    if (bst_) return bst_->keys(t, out);
    return Status::Ok();
  }

 private:
  std::unique_ptr<ds::List> list_;
  std::unique_ptr<ds::HashTable> hash_;
  std::unique_ptr<ds::Bst> bst_;
};

class MvrluSet : public ::testing::TestWithParam<Kind> {};

TEST_P(MvrluSet, MatchesStdSetSequentially) {
  Config c;
  c.max_threads = 4;
  c.log_bytes = 64 * 1024;  // small: collection runs often
  auto d = make_domain(c);
  auto t = make_thread(*d);
  auto s = AnySet::make(GetParam(), *d, *t);
  std::set<std::uint64_t> model;
  std::mt19937_64 rng(42);
  const auto ops = testing::scaled(20000, 2000);
  for (std::uint64_t i = 0; i < ops; ++i) {
    const std::uint64_t k = rng() % 300;
    bool r = false;
    switch (rng() % 3) {
      case 0:
        ASSERT_TRUE(s->insert(*t, k, &r).ok());
        ASSERT_EQ(r, model.insert(k).second) << "insert " << k;
        break;
      case 1:
        ASSERT_TRUE(s->remove(*t, k, &r).ok());
        ASSERT_EQ(r, model.erase(k) == 1) << "remove " << k;
        break;
      default:
        ASSERT_TRUE(s->contains(*t, k, &r).ok());
        ASSERT_EQ(r, model.count(k) == 1) << "contains " << k;
    }
  }
  std::vector<std::uint64_t> keys;
  ASSERT_TRUE(s->keys(*t, &keys).ok());
  if (GetParam() != Kind::kHash) EXPECT_EQ(keys, std::vector<std::uint64_t>(model.begin(), model.end()));
  s.reset();
  t.reset();
}

// 4 threads, 10^5 operations in all at scale 1 (half updates: inserts and removes), keys from a
// range of 16 so that operations on one key overlap constantly. Every operation is recorded
// with invoke/response times from one global counter and the history is checked per key.
// `c` chooses the mode (MV-RLU's defaults, or a baseline of Config); `per` is per thread.
void check_linearizable(Kind kind, Config c, std::uint64_t per) {
  c.max_threads = 8;
  c.log_bytes = 128 * 1024;
  auto d = make_domain(c);
  auto setup = make_thread(*d);
  auto s = AnySet::make(kind, *d, *setup);
  constexpr std::uint64_t kKeys = 16;
  std::vector<std::uint64_t> initial;
  for (std::uint64_t k = 0; k < kKeys; k += 2) {
    bool r = false;
    ASSERT_TRUE(s->insert(*setup, k, &r).ok());
    initial.push_back(k);
  }
  const int threads = 4;
  std::vector<std::vector<std::pair<std::uint64_t, checkers::RegisterOp>>> logs(threads);
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&, i] {
      auto t = make_thread(*d);
      std::mt19937_64 rng(1000 + i);
      logs[i].reserve(per);
      for (std::uint64_t n = 0; n < per; ++n) {
        const std::uint64_t k = rng() % kKeys;
        const unsigned op = rng() % 4;
        bool r = false;
        const std::uint64_t inv = testing::tick();
        Status st = op == 0 ? s->insert(*t, k, &r) : op == 1 ? s->remove(*t, k, &r) : s->contains(*t, k, &r);
        const std::uint64_t resp = testing::tick();
        ASSERT_TRUE(st.ok()) << st.to_string();
        const auto kind = op == 0   ? checkers::SetOpKind::kInsert
                          : op == 1 ? checkers::SetOpKind::kRemove
                                    : checkers::SetOpKind::kContains;
        logs[i].push_back({k, checkers::set_op(kind, inv, resp, r)});
      }
    });
  for (auto& t : ts) t.join();
  std::unordered_map<std::uint64_t, std::vector<checkers::RegisterOp>> history;
  for (auto& l : logs)
    for (auto& [k, op] : l) history[k].push_back(op);
  const auto res = checkers::check_set(history, initial);
  EXPECT_TRUE(res.linearizable) << res.explanation.substr(0, 4000);
  const Stats st = d->stats();
  EXPECT_GT(st.commits, 0u);
  // The structure agrees with itself afterwards, and sorted structures stay sorted.
  std::vector<std::uint64_t> keys;
  ASSERT_TRUE(s->keys(*setup, &keys).ok());
  for (std::size_t i = 1; i < keys.size(); ++i) EXPECT_LT(keys[i - 1], keys[i]);
  for (std::uint64_t k : keys) {
    bool r = false;
    ASSERT_TRUE(s->contains(*setup, k, &r).ok());
    EXPECT_TRUE(r) << k;
  }
  s.reset();
  setup.reset();
}

TEST_P(MvrluSet, LinearizableUnderConcurrency) { check_linearizable(GetParam(), Config{}, testing::scaled(25000, 500)); }

// The benchmarks' RLU baseline (Config::rlu_sync: one copy per object, the writer waits for a
// grace period and writes back before unlocking), on the global counter (RLU) and on ORDO
// (RLU-ORDO), with the one-collector and no-trigger switches of the factor analysis on the
// ORDO run: still linearizable. A quarter of the main test's operations each.
TEST_P(MvrluSet, RluBaselineLinearizable) {
  Config rlu;
  rlu.rlu_sync = true;
  rlu.clock = ClockMode::kCounter;
  check_linearizable(GetParam(), rlu, testing::scaled(6000, 300));
  Config rlu_ordo;
  rlu_ordo.rlu_sync = true;
  rlu_ordo.clock = ClockMode::kOrdo;
  rlu_ordo.self_log_gc = false;
  rlu_ordo.capacity_trigger = false;
  rlu_ordo.deref_trigger = false;
  check_linearizable(GetParam(), rlu_ordo, testing::scaled(6000, 300));
  // Multi-version with the detector as the only collector (the factor analysis's third step).
  Config one_gc;
  one_gc.self_log_gc = false;
  one_gc.capacity_trigger = false;
  one_gc.deref_trigger = false;
  check_linearizable(GetParam(), one_gc, testing::scaled(6000, 300));
}

// rlu_sync keeps one copy: the commit has written its copy back before read_unlock returns (no
// collector runs in kManual), so the next section reads the master itself.
TEST(MvrluRluBaseline, CommitWritesBackBeforeReturning) {
  Config c;
  c.rlu_sync = true;
  c.gc = GcMode::kManual;
  auto d = make_domain(c);
  auto t = make_thread(*d);
  ds::ListNode* n = nullptr;
  ASSERT_TRUE(t->alloc(&n, ds::ListNode{1, nullptr}).ok());
  for (std::uint64_t v = 2; v < 5; ++v) {
    ASSERT_TRUE(t->run([&] {
                   ds::ListNode* w = n;
                   Status s = t->try_lock(w);
                   if (!s.ok()) return s;
                   w->key = v;
                   return Status::Ok();
                 }).ok());
    EXPECT_EQ(d->stats().writebacks, v - 1);
    ASSERT_TRUE(t->read_lock().ok());
    EXPECT_EQ(t->deref(n), n);  // the master: no chained copy
    EXPECT_EQ(t->deref(n)->key, v);
    ASSERT_TRUE(t->read_unlock().ok());
  }
  ASSERT_TRUE(d->drain().ok());
  EXPECT_EQ(d->stats().log_bytes_used, 0u);
  t.reset();
  d->destroy_quiescent(n);
}

INSTANTIATE_TEST_SUITE_P(Structures, MvrluSet, ::testing::Values(Kind::kList, Kind::kHash, Kind::kBst),
                         [](const auto& info) {
                           return info.param == Kind::kList ? "List" : info.param == Kind::kHash ? "Hash" : "Bst";
                         });

// The set checker must be able to fail: a history where a contains misses a key that an
// insert completed before it started is refuted, and the reduction keeps remove's results.
TEST(SetChecker, RefutesAStaleRead) {
  std::unordered_map<std::uint64_t, std::vector<checkers::RegisterOp>> h;
  h[5].push_back(checkers::set_op(checkers::SetOpKind::kInsert, 1, 2, true));
  h[5].push_back(checkers::set_op(checkers::SetOpKind::kContains, 3, 4, false));
  EXPECT_TRUE(checkers::check_set(h).refuted());
  h[5][1] = checkers::set_op(checkers::SetOpKind::kContains, 3, 4, true);
  EXPECT_TRUE(checkers::check_set(h).linearizable);
  h[5].push_back(checkers::set_op(checkers::SetOpKind::kRemove, 5, 6, false));  // it was there
  EXPECT_TRUE(checkers::check_set(h).refuted());
  EXPECT_TRUE(checkers::check_set({{7, {checkers::set_op(checkers::SetOpKind::kRemove, 1, 2, true)}}}, {7}).linearizable);
}

}  // namespace
}  // namespace duet::mvrlu
