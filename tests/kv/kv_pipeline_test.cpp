// Pipelined batches (KvSpace::submit / finish): each client thread keeps several batches in
// flight, and the recorded histories (invocation at submit, response when finish returns)
// must still be linearizable per key, across forced model switches. Also: the handle
// contract (finish of a null or foreign handle, an abandoned handle finishes itself).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <deque>
#include <random>
#include <thread>
#include <unordered_map>

#include "checkers/linearizability.hpp"
#include "kv/kv_test_util.hpp"

namespace duet {
namespace {

using namespace kvtest;
using checkers::RegisterOp;
using checkers::RegisterOpKind;

std::string value_for(std::uint64_t id, std::size_t len) {
  std::string v(std::max<std::size_t>(len, 8), 'p');
  std::memcpy(v.data(), &id, 8);
  return v;
}

std::uint64_t id_of(const std::string& v) {
  std::uint64_t id = 0;
  if (v.size() >= 8) std::memcpy(&id, v.data(), 8);
  return id;
}

struct Batch {
  std::vector<KvRequest> reqs;
  std::vector<std::string> keys, values;
  std::vector<std::uint64_t> ids;
  std::vector<int> key_index;
  std::uint64_t invoke = 0;
  std::unique_ptr<KvInFlight> in_flight;
};

class KvPipeline : public ::testing::TestWithParam<RouterMode> {};

TEST_P(KvPipeline, PipelinedBatchesAreLinearizablePerKey) {
  StoreConfig cfg = test_config();
  cfg.router.mode = GetParam();
  cfg.router.threshold = 0.02;
  cfg.router.bins = 256;
  cfg.router.sample_every = 1;
  cfg.router.auto_switch = false;
  cfg.orchestrators = 2;  // groups really are in flight, also on the CPU twin
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(cfg, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("p", &kv).ok());

  constexpr int kDepth = 4, kBatch = 8, kKeys = 48;
  const int kThreads = test_clients(4);
  const int batches_per_thread = static_cast<int>(1000 * test_scale());  // 4 x 1000 x 8 = 32,000 requests
  std::atomic<std::uint64_t> clock{0}, next_id{1};
  std::vector<std::vector<std::pair<int, RegisterOp>>> history(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1234 + t);
      std::deque<Batch> flight;
      auto complete = [&](Batch& b) {
        const Status s = kv->finish(std::move(b.in_flight));
        const std::uint64_t response = clock.fetch_add(1);
        if (!s.ok()) ++errors;
        for (std::size_t j = 0; j < b.reqs.size(); ++j) {
          const KvRequest& r = b.reqs[j];
          RegisterOp op;
          op.invoke = b.invoke;
          op.response = response;
          op.kind = r.op == KvRequest::Op::kGet ? RegisterOpKind::kGet
                    : r.op == KvRequest::Op::kPut ? RegisterOpKind::kPut
                                                  : RegisterOpKind::kDelete;
          op.arg = b.ids[j];
          op.found = r.found;
          op.out = r.found ? id_of(r.result) : 0;
          history[t].push_back({b.key_index[j], op});
        }
      };
      for (int i = 0; i < batches_per_thread; ++i) {
        if (flight.size() == kDepth) {
          complete(flight.front());
          flight.pop_front();
        }
        if (t == 0 && i % 50 == 49) {
          if (!kv->router().set_threshold(i % 100 == 99 ? 1.0 : 0.02).ok()) ++errors;
          if (!kv->router().switch_model().ok()) ++errors;
        }
        Batch& b = flight.emplace_back();
        b.reqs.resize(kBatch);
        b.keys.resize(kBatch);
        b.values.resize(kBatch);
        b.ids.assign(kBatch, 0);
        b.key_index.resize(kBatch);
        const int phase = i / 200;
        for (int j = 0; j < kBatch; ++j) {
          const int k = rng() % 4 ? static_cast<int>((rng() % 6 + phase * 6) % kKeys) : static_cast<int>(rng() % kKeys);
          b.key_index[j] = k;
          b.keys[j] = k % 3 ? "pk" + std::to_string(k) : "pipelined-long-key-" + std::to_string(k);
          const int op = static_cast<int>(rng() % 3);
          b.reqs[j].op = op == 0 ? KvRequest::Op::kGet : op == 1 ? KvRequest::Op::kPut : KvRequest::Op::kDelete;
          if (op == 1) {
            b.ids[j] = next_id.fetch_add(1);
            b.values[j] = value_for(b.ids[j], rng() % 5 == 0 ? 300 : 8);
          }
        }
        for (int j = 0; j < kBatch; ++j) {
          b.reqs[j].key = b.keys[j];
          b.reqs[j].value = b.values[j];
        }
        b.invoke = clock.fetch_add(1);
        b.in_flight = kv->submit(b.reqs);
      }
      while (!flight.empty()) {
        complete(flight.front());
        flight.pop_front();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  std::unordered_map<int, std::vector<RegisterOp>> per_key;
  std::size_t total = 0;
  for (const auto& h : history)
    for (const auto& [k, op] : h) {
      per_key[k].push_back(op);
      ++total;
    }
  EXPECT_GE(total, static_cast<std::size_t>(kThreads) * batches_per_thread * kBatch);
  for (auto& [k, ops] : per_key) {
    const checkers::CheckResult res = checkers::check_register(ops);
    ASSERT_TRUE(res.linearizable) << "key " << k << ":\n" << res.explanation.substr(0, 4000);
  }
}

INSTANTIATE_TEST_SUITE_P(Router, KvPipeline,
                         ::testing::Values(RouterMode::kLearned, RouterMode::kAllHot, RouterMode::kAllCold),
                         [](const auto& info) { return std::string(router_mode_name(info.param)) == "all-hot" ? "all_hot"
                                                       : std::string(router_mode_name(info.param)) == "all-cold"
                                                           ? "all_cold"
                                                           : "learned"; });

TEST(KvPipelineHandles, FinishRejectsNullAndForeignHandlesAndAbandonedHandlesFinish) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(test_config(), &store));
  std::shared_ptr<KvSpace> a, b;
  ASSERT_TRUE(store->create_kv("a", &a).ok());
  ASSERT_TRUE(store->create_kv("b", &b).ok());
  EXPECT_EQ(a->finish(nullptr).code(), StatusCode::kInvalidArgument);
  std::vector<KvRequest> reqs(1);
  reqs[0].op = KvRequest::Op::kPut;
  reqs[0].key = "k";
  reqs[0].value = "v1";
  auto h = a->submit(reqs);
  EXPECT_EQ(b->finish(std::move(h)).code(), StatusCode::kInvalidArgument);  // handle destroyed: finishes itself
  std::string v;
  bool found = false;
  ASSERT_TRUE(a->get("k", &v, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(v, "v1");
  { auto abandoned = a->submit(reqs); }  // never finished by the caller
  ASSERT_TRUE(a->get("k", &v, &found).ok());
  EXPECT_EQ(v, "v1");
}

// The completion waker (set_completion_waker): with orchestrator threads, the submitting
// thread's waker runs once per group after the group is done, so a loop that sleeps until
// woken and then tests ready() finishes every batch without ever blocking in finish(). Each
// batch is tested only after a wake; a missing wake would leave this loop sleeping until the
// test's deadline.
TEST(KvPipelineHandles, CompletionWakerRunsOnceBatchesAreReady) {
  StoreConfig cfg = test_config();
  cfg.router.mode = RouterMode::kAllCold;  // every request goes to the Canonical Store
  cfg.router.auto_switch = false;
  cfg.orchestrators = 2;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(cfg, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("w", &kv).ok());
  struct Wakes {
    std::mutex m;
    std::condition_variable cv;
    std::uint64_t n = 0;
    std::thread::id thread;
    bool from_submitter = false;
  } wakes;
  wakes.thread = std::this_thread::get_id();
  set_completion_waker(
      [](void* arg) {
        auto* w = static_cast<Wakes*>(arg);
        std::lock_guard<std::mutex> lk(w->m);
        if (std::this_thread::get_id() == w->thread) w->from_submitter = true;
        ++w->n;
        w->cv.notify_all();
      },
      &wakes);
  constexpr int kBatches = 200, kDepth = 4;
  std::deque<std::unique_ptr<KvInFlight>> flight;
  std::deque<std::vector<KvRequest>> reqs;
  std::vector<std::string> keys(kBatches), values(kBatches);
  int finished = 0;
  std::uint64_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < kBatches || !flight.empty();) {
    while (i < kBatches && static_cast<int>(flight.size()) < kDepth) {
      keys[i] = "waker-key-" + std::to_string(i);
      values[i] = "value-of-" + keys[i];
      auto& r = reqs.emplace_back(1);
      r[0].op = KvRequest::Op::kPut;
      r[0].key = keys[i];
      r[0].value = values[i];
      flight.push_back(kv->submit(r));
      ++i;
    }
    if (!kv->ready(*flight.front())) {  // sleep until a wake, then look again
      std::unique_lock<std::mutex> lk(wakes.m);
      ASSERT_TRUE(wakes.cv.wait_until(lk, deadline, [&] { return wakes.n > seen; }))
          << "no wake for a batch that is not ready, after " << finished << " batches";
      seen = wakes.n;
      continue;
    }
    ASSERT_TRUE(kv->finish(std::move(flight.front())).ok());
    flight.pop_front();
    reqs.pop_front();
    ++finished;
    // Each batch here is one group, whose waker call ends before its finish() returns.
    std::lock_guard<std::mutex> lk(wakes.m);
    ASSERT_GE(wakes.n, static_cast<std::uint64_t>(finished)) << "finish() returned before its batch's waker ran";
  }
  set_completion_waker(nullptr, nullptr);
  EXPECT_EQ(finished, kBatches);
  EXPECT_GE(wakes.n, 1u);
  EXPECT_FALSE(wakes.from_submitter) << "the waker runs on the engine's threads";
  std::string v;
  bool found = false;
  ASSERT_TRUE(kv->get("waker-key-7", &v, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(v, "value-of-waker-key-7");
}

}  // namespace
}  // namespace duet
