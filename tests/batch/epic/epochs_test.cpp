// Epic's submission front end (src/batch/epic/epochs.hpp): txns submitted one at a time from
// one or many threads equal serial execution in (epoch, position) order, which is submission
// order for one submitter and (thread, counter) order within an epoch for several; epochs close
// by size, by wait and on flush; bad input is refused at once; a failed epoch fails its txns
// and applies nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <numeric>
#include <stdexcept>
#include <thread>

#include "checkers/epic_serial_checker.hpp"
#include "batch/epic/epochs.hpp"
#include "batch/epic/mix_gen.hpp"

namespace duet::batch::epic {
namespace {

using test::compare_state;
using test::load_mix;
using test::mix_tables;
using test::MixGen;
using test::MixTxn;
using test::test_scale;

constexpr auto kNever = std::chrono::hours(1);

/// Epochs of 100 txns that never close by wait, with `max_attempts` tries per txn.
EpochsConfig hundred_per_epoch(std::uint32_t max_attempts) {
  EpochsConfig cfg{100, kNever};
  cfg.max_attempts = max_attempts;
  return cfg;
}

/// Replays the txns that ran, in (eid, position) order and with their final attempt numbers, on
/// a serial store loaded like the engine's, and compares every outcome and output, then the
/// engine's tables. (A rerun's first attempt wrote nothing, so it is left out.) Returns the first
/// difference, or "".
std::string check_serial(const std::vector<MixTxn>& txns, const std::vector<TxnResult>& res, Database& db) {
  std::vector<std::size_t> ran;
  for (std::size_t i = 0; i < res.size(); ++i)
    if (res[i].status.ok()) ran.push_back(i);
  std::sort(ran.begin(), ran.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(res[a].epoch, res[a].position) < std::pair(res[b].epoch, res[b].position);
  });
  for (std::size_t k = 1; k < ran.size(); ++k)
    if (res[ran[k]].epoch == res[ran[k - 1]].epoch && res[ran[k]].position == res[ran[k - 1]].position)
      return "two txns share epoch " + std::to_string(res[ran[k]].epoch) + " position " + std::to_string(res[ran[k]].position);
  Batch run;
  for (std::size_t i : ran)
    if (!run.add(txns[i].proc, txns[i].reads, txns[i].writes, txns[i].args, i, res[i].attempts - 1))
      return "txn " + std::to_string(i) + " does not fit a batch";
  SerialStore s(mix_tables());
  Database unused(mix_tables());
  load_mix(unused, s);
  std::vector<std::uint32_t> outcome, out;
  run_serial<MixProcs>(s, run, &outcome, &out);
  for (std::size_t j = 0; j < ran.size(); ++j) {
    const TxnResult& r = res[ran[j]];
    if (outcome[j] != static_cast<std::uint32_t>(r.outcome))
      return "txn " + std::to_string(ran[j]) + ": outcome " + std::to_string(static_cast<int>(r.outcome)) + ", serial " + std::to_string(outcome[j]);
    for (std::uint32_t k = 0; k < kMaxOut; ++k)
      if (out[j * kMaxOut + k] != r.out[k])
        return "txn " + std::to_string(ran[j]) + ": output " + std::to_string(k) + " is " + std::to_string(r.out[k]) +
               ", serial " + std::to_string(out[j * kMaxOut + k]);
  }
  return compare_state(db, s);
}

std::vector<TxnResult> get_all(std::vector<std::future<TxnResult>>& fs) {
  std::vector<TxnResult> r;
  for (auto& f : fs) r.push_back(f.get());
  return r;
}

TEST(EpicEpochs, OneSubmitterEqualsSerialInSubmissionOrder) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore unused(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), unused));
  const int n = std::max(400, static_cast<int>(4000 * test_scale()));
  MixGen g(71);
  std::vector<MixTxn> txns;
  std::vector<std::future<TxnResult>> fs;
  EpochsStats st;
  {
    Epochs<MixProcs> fe(e, {50, kNever});
    for (int i = 0; i < n; ++i) {
      txns.push_back(g.draw());
      fs.push_back(fe.submit(txns.back().proc, txns.back().reads, txns.back().writes, txns.back().args));
    }
    fe.flush();
    st = fe.stats();
  }
  const std::vector<TxnResult> res = get_all(fs);
  std::size_t reruns = 0;
  std::pair<std::uint32_t, std::uint32_t> last{0, 0};
  for (const TxnResult& r : res) {
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    reruns += r.attempts > 1;
    if (r.attempts == 1) {  // first-attempt txns run in submission order
      ASSERT_LT(last, std::pair(r.epoch, r.position));
      last = {r.epoch, r.position};
    }
  }
  EXPECT_GT(reruns, 0u) << "the Mix draws reruns (5%)";
  EXPECT_EQ(st.txns, n + reruns) << "executed txns count each attempt";
  EXPECT_GE(st.closed_by_size, static_cast<std::uint64_t>(n / 50 - 1));
  EXPECT_EQ(st.closed_by_wait, 0u);
  ASSERT_EQ(check_serial(txns, res, e.db()), "");
  // The check can fail: a wrong output word, or two txns swapped in the serial order.
  std::vector<TxnResult> bad = res;
  bad[n / 2].out[1] ^= 1;
  EXPECT_NE(check_serial(txns, bad, e.db()), "");
  // Swapped: a committed read-modify-write and a later txn reading a key it wrote.
  auto conflict = [&](std::size_t i, std::size_t j) {
    if (txns[i].proc != MixProcs::kRmw || txns[i].args[1] != 0 || res[i].attempts != 1 || res[j].attempts != 1) return false;
    for (const Key& w : txns[i].writes)
      for (const Key& r : txns[j].reads)
        if (w.table == r.table && w.key == r.key) return true;
    return false;
  };
  std::size_t a = 0, b = 1;
  while (a + 1 < res.size() && !conflict(a, b)) b + 1 < res.size() ? ++b : (++a, b = a + 1);
  ASSERT_LT(a + 1, res.size()) << "no conflicting pair to swap";
  bad = res;
  std::swap(bad[a].position, bad[b].position);
  std::swap(bad[a].epoch, bad[b].epoch);
  EXPECT_NE(check_serial(txns, bad, e.db()), "");
}

// Four threads submit at once, one of them flushing now and then; epochs close by size and by a
// short wait. Each thread's txns keep their order, and everything equals serial execution in
// (epoch, position) order.
TEST(EpicEpochs, ConcurrentSubmittersEqualSerialInThreadCounterOrder) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore unused(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), unused));
  constexpr int kThreads = 4;
  const int per = std::max(150, static_cast<int>(1500 * test_scale()));
  std::vector<std::vector<MixTxn>> txns(kThreads);
  std::vector<std::vector<std::future<TxnResult>>> fs(kThreads);
  {
    Epochs<MixProcs> fe(e, {64, std::chrono::microseconds(200)});
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; ++t)
      th.emplace_back([&, t] {
        MixGen g(100 + t);
        for (int i = 0; i < per; ++i) {
          txns[t].push_back(g.draw());
          const MixTxn& x = txns[t].back();
          fs[t].push_back(fe.submit(x.proc, x.reads, x.writes, x.args));
          if (t == 0 && i % 100 == 99) fe.flush();
        }
      });
    for (auto& x : th) x.join();
  }  // the destructor flushes
  std::vector<MixTxn> all;
  std::vector<TxnResult> res;
  for (int t = 0; t < kThreads; ++t) {
    std::pair<std::uint32_t, std::uint32_t> last{0, 0};
    for (int i = 0; i < per; ++i) {
      ASSERT_EQ(fs[t][i].wait_for(std::chrono::seconds(0)), std::future_status::ready);
      TxnResult r = fs[t][i].get();
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      if (r.attempts == 1) {
        ASSERT_LT(last, std::pair(r.epoch, r.position)) << "thread " << t << " txn " << i;
        last = {r.epoch, r.position};
      }
      all.push_back(txns[t][i]);
      res.push_back(r);
    }
  }
  ASSERT_EQ(check_serial(all, res, e.db()), "");
}

// Epochs of 5,000 txns (over kParallelResolveMin, 4,096) hand futures their results on the
// engine's four threads and callbacks theirs on the epoch thread, in the epoch's order. Three
// threads submit with futures, each with a collector already waiting on its futures, and one with
// callbacks: every txn gets its result once, callbacks arrive from one thread in (epoch,
// position) order, and everything equals serial execution.
TEST(EpicEpochs, LargeEpochsHandEveryResultOverOnce) {
  Engine<MixProcs> e(mix_tables(), 4);
  SerialStore unused(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), unused));
  constexpr int kThreads = 4;  // the last one submits with callbacks
  const int per = std::max(3000, static_cast<int>(6000 * test_scale()));
  std::vector<std::vector<MixTxn>> txns(kThreads);
  std::vector<std::vector<std::future<TxnResult>>> fs(kThreads);
  std::vector<TxnResult> by_callback(per);
  std::vector<int> calls(per, 0);
  std::vector<std::thread::id> callback_threads;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> callback_order;
  std::vector<std::vector<TxnResult>> collected(kThreads - 1);
  std::vector<std::atomic<int>> published(kThreads);  // futures of thread t set so far
  {
    Epochs<MixProcs> fe(e, {5000, std::chrono::milliseconds(20)});
    std::vector<std::thread> th;
    for (int t = 0; t < kThreads; ++t) {
      txns[t].reserve(per);
      fs[t].resize(per);
    }
    for (int t = 0; t < kThreads; ++t)
      th.emplace_back([&, t] {
        MixGen g(300 + t);
        for (int i = 0; i < per; ++i) {
          txns[t].push_back(g.draw());
          const MixTxn& x = txns[t].back();
          if (t + 1 < kThreads) {
            fs[t][i] = fe.submit(x.proc, x.reads, x.writes, x.args);
            published[t].store(i + 1, std::memory_order_release);
          } else {
            fe.submit(x.proc, x.reads, x.writes, x.args, [&, i](TxnResult&& r) {
              ++calls[i];  // the epoch thread alone runs callbacks: no lock
              callback_threads.push_back(std::this_thread::get_id());
              callback_order.emplace_back(r.epoch, r.position);
              by_callback[i] = std::move(r);
            });
          }
        }
      });
    std::vector<std::thread> collectors;  // each waits on its submitter's futures as they come
    for (int t = 0; t + 1 < kThreads; ++t)
      collectors.emplace_back([&, t] {
        for (int i = 0; i < per; ++i) {
          while (published[t].load(std::memory_order_acquire) <= i) std::this_thread::yield();
          collected[t].push_back(fs[t][i].get());
        }
      });
    for (auto& x : th) x.join();
    fe.flush();
    for (auto& x : collectors) x.join();
    EXPECT_GE(fe.stats().closed_by_size, 1u) << "at least one epoch of 5,000";
  }
  std::vector<MixTxn> all;
  std::vector<TxnResult> res;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < per; ++i) {
      const TxnResult& r = t + 1 < kThreads ? collected[t][i] : by_callback[i];
      if (t + 1 == kThreads) {
        ASSERT_EQ(calls[i], 1) << "callback txn " << i;
      }
      ASSERT_TRUE(r.status.ok()) << r.status.message();
      all.push_back(txns[t][i]);
      res.push_back(r);
    }
  ASSERT_EQ(callback_threads.size(), static_cast<std::size_t>(per));
  for (const std::thread::id& id : callback_threads) ASSERT_EQ(id, callback_threads[0]) << "callbacks on one thread";
  for (std::size_t k = 1; k < callback_order.size(); ++k)
    ASSERT_LT(callback_order[k - 1], callback_order[k]) << "callbacks in the epoch's order";
  ASSERT_EQ(check_serial(all, res, e.db()), "");
}

TEST(EpicEpochs, EpochsCloseBySizeByWaitAndOnFlush) {
  Engine<MixProcs> e(mix_tables(), 1);
  SerialStore unused(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), unused));
  auto rmw = [](Epochs<MixProcs>& fe, std::uint64_t key) {
    return fe.submit(MixProcs::kRmw, {{0, key}}, {{0, key}}, {1, 0});
  };
  {  // by size: 30 txns in epochs of 10, no flush, no wait
    Epochs<MixProcs> fe(e, {10, kNever});
    std::vector<std::future<TxnResult>> fs;
    for (std::uint64_t k = 0; k < 30; ++k) fs.push_back(rmw(fe, k));
    const std::vector<TxnResult> res = get_all(fs);
    for (std::size_t i = 0; i < res.size(); ++i) {
      ASSERT_TRUE(res[i].status.ok()) << res[i].status.message();
      EXPECT_EQ(res[i].position, i % 10);
      EXPECT_EQ(res[i].epoch, res[0].epoch + i / 10);
    }
    EXPECT_EQ(fe.stats().closed_by_size, 3u);
  }
  {  // by wait: 5 txns, an epoch of 1000, 2 ms
    Epochs<MixProcs> fe(e, {1000, std::chrono::milliseconds(2)});
    std::vector<std::future<TxnResult>> fs;
    for (std::uint64_t k = 0; k < 5; ++k) fs.push_back(rmw(fe, k));
    for (const TxnResult& r : get_all(fs)) ASSERT_TRUE(r.status.ok()) << r.status.message();
    const EpochsStats st = fe.stats();
    EXPECT_GE(st.closed_by_wait, 1u);
    EXPECT_EQ(st.closed_by_size + st.closed_by_flush, 0u);
  }
  {  // on flush: nothing closes before it
    Epochs<MixProcs> fe(e, {1000, kNever});
    std::vector<std::future<TxnResult>> fs;
    for (std::uint64_t k = 0; k < 3; ++k) fs.push_back(rmw(fe, k));
    for (auto& f : fs) EXPECT_EQ(f.wait_for(std::chrono::milliseconds(20)), std::future_status::timeout);
    fe.flush();
    for (auto& f : fs) ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_EQ(fe.stats().closed_by_flush, 1u);
    EXPECT_EQ(fe.stats().epochs, 1u);
  }
}

// Each queue gets its share of an epoch: equal shares, a queue holding less than its share
// leaving the rest to the others, the remainder to the first queues, and everything when it fits.
TEST(EpicEpochs, FairSharesSplitAnEpochAmongTheQueues) {
  using E = Epochs<MixProcs>;
  EXPECT_EQ(E::fair_shares({3, 2}, 8), (std::vector<std::size_t>{3, 2}));
  EXPECT_EQ(E::fair_shares({40, 1}, 8), (std::vector<std::size_t>{7, 1}));
  EXPECT_EQ(E::fair_shares({40, 40, 40}, 8), (std::vector<std::size_t>{3, 3, 2}));
  EXPECT_EQ(E::fair_shares({0, 40, 2, 40}, 9), (std::vector<std::size_t>{0, 4, 2, 3}));
  EXPECT_EQ(E::fair_shares({}, 8), (std::vector<std::size_t>{}));
}

// A thread that keeps more than an epoch queued does not keep another thread's txn out: with
// the epoch thread held while thread A queues 40 txns and thread B one, in epochs of 8, B's txn
// runs in the first epoch after, beside A's first seven (before, A's queue drained first).
TEST(EpicEpochs, ABusySubmitterDoesNotStarveTheOthers) {
  Engine<MixProcs> e(mix_tables(), 1);
  SerialStore unused(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), unused));
  Epochs<MixProcs> fe(e, {8, kNever});
  std::promise<void> held, release;
  std::shared_future<void> go = release.get_future().share();
  // The first epoch's callback holds the epoch thread until the queues are filled.
  fe.submit(MixProcs::kRmw, {{0, 1}}, {{0, 1}}, {1, 0}, [&held, go](TxnResult&&) {
    held.set_value();
    go.wait();
  });
  fe.flush([] {});
  held.get_future().wait();
  std::vector<std::future<TxnResult>> a;
  for (std::uint64_t k = 0; k < 40; ++k) a.push_back(fe.submit(MixProcs::kRmw, {{0, k}}, {{0, k}}, {1, 0}));
  std::future<TxnResult> b;
  std::thread([&] { b = fe.submit(MixProcs::kRmw, {{1, 3}}, {{1, 3}}, {1, 0}); }).join();
  release.set_value();
  fe.flush();
  const std::vector<TxnResult> ra = get_all(a);
  const TxnResult rb = b.get();
  ASSERT_TRUE(rb.status.ok()) << rb.status.message();
  EXPECT_EQ(rb.epoch, ra.front().epoch) << "B's txn shares the first epoch after the hold with A's first";
  EXPECT_LT(rb.epoch, ra.back().epoch);
  EXPECT_EQ(rb.position, 7u) << "A's share of 7, then B's one";
}

// A txn whose procedure asks to rerun on every attempt (Mix mode 4) gets an error after
// max_attempts tries; the txns around it run, and flush returns.
TEST(EpicEpochs, ATxnThatAlwaysRerunsGetsAnErrorAfterItsAttempts) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  Epochs<MixProcs> fe(e, hundred_per_epoch(5));
  auto stuck = fe.submit(MixProcs::kRmw, {{0, 1}}, {{0, 1}}, {1, 4});
  auto fine = fe.submit(MixProcs::kRmw, {{0, 2}}, {{0, 2}}, {1, 0});
  fe.flush();
  ASSERT_EQ(stuck.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  const TxnResult r = stuck.get();
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status.message().find("declared keys are wrong"), std::string::npos) << r.status.message();
  EXPECT_EQ(r.attempts, 5u);
  EXPECT_TRUE(fine.get().status.ok());
  EXPECT_EQ(e.pending_reruns(), 0u);
}

// A thread that submitted to a front end since destroyed (a batch database dropped by FLUSHDB)
// keeps no entry for it once it submits to another.
TEST(EpicEpochs, AThreadKeepsNoQueueOfADestroyedFrontEnd) {
  Engine<MixProcs> e(mix_tables(), 1);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  const std::vector<Key> k = {{0, 1}};
  for (int i = 0; i < 5; ++i) {
    Epochs<MixProcs> front(e, EpochsConfig{100, std::chrono::milliseconds(1)});
    EXPECT_TRUE(front.submit(MixProcs::kRmw, k, k, {1, 0}).get().status.ok());
    EXPECT_EQ(Epochs<MixProcs>::queues_of_this_thread_for_tests(), 1u) << "front end " << i;
  }
}

// A callback that throws loses its own result only: the epoch's other txns get theirs and later
// epochs run.
TEST(EpicEpochs, ACallbackThatThrowsDoesNotStopTheOthers) {
  Engine<MixProcs> e(mix_tables(), 1);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  Epochs<MixProcs> front(e, EpochsConfig{100, std::chrono::milliseconds(1)});
  const std::vector<Key> k = {{0, 1}};
  front.submit(MixProcs::kRmw, k, k, {1, 0}, [](TxnResult&&) { throw std::runtime_error("planted"); });
  auto later = front.submit(MixProcs::kRmw, k, k, {2, 0});
  front.flush();
  EXPECT_TRUE(later.get().status.ok());
  EXPECT_TRUE(front.submit(MixProcs::kRmw, k, k, {3, 0}).get().status.ok()) << "a later epoch ran";
}

// flush(done) does not wait: `done` runs once every earlier txn has its result.
TEST(EpicEpochs, AnAsyncFlushRunsItsCallbackAfterTheEarlierTxns) {
  Engine<MixProcs> e(mix_tables(), 1);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  Epochs<MixProcs> fe(e, {1000, kNever});
  auto f = fe.submit(MixProcs::kRmw, {{0, 3}}, {{0, 3}}, {1, 0});
  std::promise<bool> flushed;
  fe.flush([&] { flushed.set_value(true); });
  ASSERT_TRUE(flushed.get_future().get());
  EXPECT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  std::promise<bool> again;  // nothing pending: it still runs
  fe.flush([&] { again.set_value(true); });
  EXPECT_TRUE(again.get_future().get());
}

// Txns of 1-4 pieces (each piece a drawn Mix txn, reruns left out) through submit_pieces, half
// with futures and half with callbacks, in epochs of 7 entries, so pieces meet the epoch's size:
// each result is the fold of its pieces' results under serial execution of every piece as a txn
// of its own in submission order, and a txn's pieces all run in one epoch at consecutive
// positions (the next txn starts where they end, or at position 0 of a later epoch).
TEST(EpicEpochs, TxnsInPiecesEqualTheirPiecesRunSeriallyAndFolded) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  const int n = std::max(100, static_cast<int>(1000 * test_scale()));
  MixGen g(91);
  std::vector<std::vector<PieceSpec>> txns;
  Batch serial;  // every piece as a txn of its own, in submission order
  std::vector<std::future<TxnResult>> fs(n);
  std::vector<TxnResult> called(n);
  std::vector<int> calls(n, 0);
  EpochsStats st;
  {
    Epochs<MixProcs> fe(e, {7, kNever});
    for (int i = 0; i < n; ++i) {
      std::vector<PieceSpec> pieces(1 + g.rng() % 4);
      for (PieceSpec& p : pieces) {
        MixTxn x = g.draw();
        if (x.args[1] == 2) x.args[1] = 0;  // no reruns: the serial order is submission order
        p = {x.proc, x.reads, x.writes, x.args};
        ASSERT_TRUE(serial.add(p.proc, p.reads, p.writes, p.args));
      }
      txns.push_back(pieces);
      if (i % 2 == 0) {
        bool accepted = false;
        fs[i] = fe.submit_pieces(pieces, &accepted);
        ASSERT_TRUE(accepted);
      } else {
        ASSERT_TRUE(fe.submit_pieces(pieces, [&called, &calls, i](TxnResult&& r) {
          called[i] = std::move(r);
          ++calls[i];
        }));
      }
    }
    fe.flush();
    st = fe.stats();
  }
  std::vector<std::uint32_t> outcome, out;
  run_serial<MixProcs>(s, serial, &outcome, &out);
  std::size_t j = 0;  // the txn's first piece in `serial`
  std::pair<std::uint32_t, std::uint32_t> next{0, 0};  // where the next txn may start
  int illegal_or_aborted_later = 0;
  for (int i = 0; i < n; ++i) {
    if (i % 2) {
      ASSERT_EQ(calls[i], 1) << "txn " << i;
    }
    const TxnResult r = i % 2 ? called[i] : fs[i].get();
    ASSERT_TRUE(r.status.ok()) << "txn " << i << ": " << r.status.message();
    std::uint32_t want_outcome = 0, want_out[kMaxOut] = {0, 0, 0, 0};
    for (std::size_t p = 0; p < txns[i].size(); ++p)
      for (std::uint32_t k = 0; k < kMaxOut; ++k) want_out[k] += out[(j + p) * kMaxOut + k];
    for (std::size_t p = 0; p < txns[i].size(); ++p) {
      if (outcome[j + p] == 0) continue;
      if (want_outcome != 0) {
        ++illegal_or_aborted_later;
        continue;
      }
      want_outcome = outcome[j + p];  // the first piece that did not commit gives its outputs
      for (std::uint32_t k = 0; k < kMaxOut; ++k) want_out[k] = out[(j + p) * kMaxOut + k];
    }
    ASSERT_EQ(static_cast<std::uint32_t>(r.outcome), want_outcome) << "txn " << i;
    for (std::uint32_t k = 0; k < kMaxOut; ++k) ASSERT_EQ(r.out[k], want_out[k]) << "txn " << i << " word " << k;
    EXPECT_EQ(r.attempts, 1u);
    if (r.epoch == next.first) {
      ASSERT_EQ(r.position, next.second) << "txn " << i << " does not start where the one before ended";
    } else {
      ASSERT_GT(r.epoch, next.first) << "txn " << i;
      ASSERT_EQ(r.position, 0u) << "txn " << i << ": a piece of the txn before ran in its epoch";
    }
    next = {r.epoch, r.position + static_cast<std::uint32_t>(txns[i].size())};
    j += txns[i].size();
  }
  EXPECT_GT(illegal_or_aborted_later, 0) << "some txn has two pieces that did not commit (the fold keeps the first)";
  EXPECT_EQ(st.txns, serial.size()) << "the engine ran every piece once";
  EXPECT_EQ(st.refused, 0u);
  ASSERT_EQ(compare_state(e.db(), s), "");
}

// A piece that asks to rerun holds its txn's result until it has run (attempts: the most of any
// piece); one that never runs right fails the txn with the rerun error after max_attempts, and
// the pieces that committed stay applied.
TEST(EpicEpochs, APieceThatRerunsHoldsItsTxnsResult) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  Epochs<MixProcs> fe(e, hundred_per_epoch(4));
  const std::vector<Key> k1 = {{0, 1}}, k2 = {{0, 2}}, k5 = {{0, 5}}, k6 = {{0, 6}};
  auto once = fe.submit_pieces({{MixProcs::kRmw, k1, k1, {10, 0}}, {MixProcs::kRmw, k2, k2, {20, 2}}});
  auto never = fe.submit_pieces({{MixProcs::kRmw, k5, k5, {30, 0}}, {MixProcs::kRmw, k6, k6, {40, 4}}});
  fe.flush();
  ASSERT_EQ(once.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  const TxnResult a = once.get();
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  EXPECT_EQ(a.outcome, EpicOutcome::kCommitted);
  EXPECT_EQ(a.attempts, 2u);
  const TxnResult b = never.get();
  EXPECT_EQ(b.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status.message().find("declared keys are wrong"), std::string::npos) << b.status.message();
  EXPECT_EQ(b.attempts, 4u);
  // Serially: both pieces of `once`, and the first of `never`, each a txn.
  Batch run;
  ASSERT_TRUE(run.add(MixProcs::kRmw, k1, k1, {10, 0}));
  ASSERT_TRUE(run.add(MixProcs::kRmw, k5, k5, {30, 0}));
  ASSERT_TRUE(run.add(MixProcs::kRmw, k2, k2, {20, 0}));
  std::vector<std::uint32_t> outcome, out;
  run_serial<MixProcs>(s, run, &outcome, &out);
  ASSERT_EQ(compare_state(e.db(), s), "");
}

// A txn in pieces is refused whole, nothing queued: no pieces, more than kMaxPieces, or one bad
// piece (the message names it).
TEST(EpicEpochs, PiecesAreRefusedWholeOnBadInput) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  Epochs<MixProcs> fe(e, {1000, kNever});
  const std::vector<Key> k = {{0, 3}};
  const PieceSpec fine{MixProcs::kRmw, k, k, {1, 0}};
  std::vector<std::future<TxnResult>> bad;
  bad.push_back(fe.submit_pieces({}));
  bad.push_back(fe.submit_pieces(std::vector<PieceSpec>(kMaxPieces + 1, fine)));
  bad.push_back(fe.submit_pieces({fine, {99, k, k, {1, 0}}}));                // unknown procedure
  bad.push_back(fe.submit_pieces({fine, fine, {MixProcs::kRmw, {}, {{0, 64}}, {1, 0}}}));  // key out of range
  std::vector<std::string> why;
  for (auto& f : bad) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    const TxnResult r = f.get();
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
    why.push_back(r.status.message());
  }
  EXPECT_NE(why[2].find("piece 1"), std::string::npos) << why[2];
  EXPECT_NE(why[3].find("piece 2"), std::string::npos) << why[3];
  EXPECT_EQ(fe.stats().refused, 4u);
  fe.flush();
  EXPECT_EQ(fe.stats().epochs, 0u) << "nothing was queued";
  ASSERT_EQ(compare_state(e.db(), s), "");
  // The largest txn in pieces runs.
  auto ok = fe.submit_pieces(std::vector<PieceSpec>(kMaxPieces, fine));
  fe.flush();
  EXPECT_TRUE(ok.get().status.ok());
}

TEST(EpicEpochs, BadInputIsRefusedAtOnceAndNothingApplied) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));
  Epochs<MixProcs> fe(e, {1000, kNever});
  std::vector<Key> many;
  for (std::uint64_t k = 0; k <= kMaxWrites; ++k) many.push_back({1, k});
  std::vector<std::future<TxnResult>> bad;
  bad.push_back(fe.submit(99, {}, {{0, 1}}, {1, 0}));                     // unknown procedure
  bad.push_back(fe.submit(MixProcs::kRmw, {}, {{7, 1}}, {1, 0}));         // unknown table
  bad.push_back(fe.submit(MixProcs::kRmw, {}, {{0, 64}}, {1, 0}));        // direct key out of range
  bad.push_back(fe.submit(MixProcs::kRmw, {}, many, {1, 0}));             // too many writes
  bad.push_back(fe.submit(MixProcs::kRmw, {}, {{0, 3}, {0, 3}}, {1, 0}));  // a write key twice
  for (auto& f : bad) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_EQ(f.get().status.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(fe.stats().refused, 5u);
  fe.flush();
  EXPECT_EQ(fe.stats().epochs, 0u);
  ASSERT_EQ(compare_state(e.db(), s), "");
  auto ok = fe.submit(MixProcs::kRmw, {{0, 3}}, {{0, 3}}, {1, 0});
  fe.flush();
  EXPECT_TRUE(ok.get().status.ok());
}

// An epoch that inserts more keys than the indexed table has ids fails whole: every txn of it
// gets the error and nothing is applied; the next epoch runs.
TEST(EpicEpochs, AFailedEpochFailsItsTxnsAndAppliesNothing) {
  Engine<MixProcs> e(mix_tables(), 2);
  SerialStore s(mix_tables());
  ASSERT_TRUE(load_mix(e.db(), s));  // 150 of the indexed table's 400 ids in use
  Epochs<MixProcs> fe(e, {1000, kNever});
  std::vector<std::future<TxnResult>> fs;
  for (std::uint64_t k = 0; k < 300; ++k) fs.push_back(fe.submit(MixProcs::kRmw, {}, {{2, 1000 + k}}, {1, 0}));
  fe.flush();
  for (const TxnResult& r : get_all(fs)) {
    EXPECT_EQ(r.status.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(r.status.message().find("failed, nothing of it applied"), std::string::npos) << r.status.message();
  }
  EXPECT_EQ(fe.stats().failed_epochs, 1u);
  ASSERT_EQ(compare_state(e.db(), s), "");
  auto ok = fe.submit(MixProcs::kRmw, {{2, 2}}, {{2, 2}}, {5, 0});
  fe.flush();
  const TxnResult r = ok.get();
  EXPECT_TRUE(r.status.ok());
  EXPECT_EQ(r.outcome, EpicOutcome::kCommitted);
}

}  // namespace
}  // namespace duet::batch::epic
