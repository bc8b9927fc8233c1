// `duet bench kv`'s driver: an ops-bound phase replays request streams that depend only on the
// seed, so two systems of different speeds get exactly the same requests, in the same order per
// client, and the same keys afterwards; a time-bound phase does not promise that.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/kv/driver.hpp"
#include "bench/kv/ycsb.hpp"

namespace duet::bench::kv {
namespace {

/// A store that records, per calling thread, every request it is given (op and key bytes) and
/// answers from a map; `delay` slows each batch down, as a slower system would be.
class RecordingSystem final : public KvSystem {
 public:
  explicit RecordingSystem(std::chrono::microseconds delay) : delay_(delay) {}
  duet::Status execute(std::span<duet::KvRequest> batch, std::span<duet::KvTrace>) override {
    if (delay_.count()) std::this_thread::sleep_for(delay_);
    std::lock_guard<std::mutex> lk(m_);
    auto& log = by_thread_[std::this_thread::get_id()];
    for (duet::KvRequest& r : batch) {
      log.push_back(std::to_string(static_cast<int>(r.op)) + ":" + std::string(r.key));
      auto it = data_.find(std::string(r.key));
      r.found = it != data_.end();
      r.status = duet::Status::Ok();
      if (r.op == duet::KvRequest::Op::kGet) {
        if (r.found) r.result = it->second;
      } else {
        if (r.found && r.want_previous) r.result = it->second;
        data_[std::string(r.key)] = std::string(r.value);
      }
    }
    return duet::Status::Ok();
  }
  bool per_element_latency() const override { return true; }
  /// Every client's sequence, sorted (clients run on different threads in each run).
  std::vector<std::vector<std::string>> sequences() const {
    std::vector<std::vector<std::string>> out;
    for (const auto& [id, log] : by_thread_) out.push_back(log);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::size_t keys() const { return data_.size(); }
  /// Forgets the recorded requests (the prefill's split over its threads depends on timing).
  void forget_requests() { by_thread_.clear(); }

 private:
  std::chrono::microseconds delay_;
  std::mutex m_;
  std::map<std::thread::id, std::vector<std::string>> by_thread_;
  std::map<std::string, std::string> data_;
};

PhaseSpec spec_for(const char* workload, Distribution d, std::uint64_t ops, unsigned threads) {
  PhaseSpec s;
  s.label = "test";
  s.workload = *ycsb_workload(workload);
  s.distribution = d;
  s.theta = 0.99;
  s.key_range = 5000;
  s.batch = 64;
  s.pipeline = 2;
  s.value_bytes = 16;
  s.threads = threads;
  s.seed = 42;
  s.ops = ops;
  s.stream_cap = 1000;  // smaller than a client's share: the stream is cycled
  s.show_progress = false;
  return s;
}

/// Runs one phase on a fast and a slow system and checks that both got the same requests. With
/// several client threads, whether a read finds a key another client writes at the same time
/// depends on timing, so the found counts are compared only for one thread.
void expect_identical_work(const char* workload, Distribution d, unsigned threads) {
  SCOPED_TRACE(std::string(workload) + " with " + std::to_string(threads) + " threads");
  RecordingSystem fast(std::chrono::microseconds(0)), slow(std::chrono::microseconds(300));
  KeyState fast_state, slow_state;
  ASSERT_TRUE(prefill(fast, &fast_state, 1000, 16, 2, 100, "prefill").ok());
  ASSERT_TRUE(prefill(slow, &slow_state, 1000, 16, 2, 100, "prefill").ok());
  fast.forget_requests();
  slow.forget_requests();
  const PhaseSpec spec = spec_for(workload, d, 6000, threads);
  const PhaseResult a = run_phase(fast, &fast_state, spec);
  const PhaseResult b = run_phase(slow, &slow_state, spec);
  EXPECT_TRUE(a.replayed && b.replayed);
  EXPECT_EQ(a.requests, 6000u);
  EXPECT_EQ(b.requests, 6000u);
  EXPECT_EQ(a.errors + b.errors + a.wrong_values + b.wrong_values, 0u);
  EXPECT_EQ(fast.sequences(), slow.sequences()) << workload << ": the two systems got different requests";
  EXPECT_EQ(fast.keys(), slow.keys());
  if (threads == 1) {
    EXPECT_EQ(a.gets_found, b.gets_found) << "the same reads of the same keys find the same keys";
  }
  EXPECT_EQ(fast_state.next_insert.load(), slow_state.next_insert.load());
  EXPECT_EQ(fast_state.acked.load(), slow_state.acked.load());
}

TEST(ReplayedPhase, SystemsOfDifferentSpeedsRunTheSameRequests) {
  for (unsigned threads : {1u, 3u}) {
    expect_identical_work("B", Distribution::kZipfian, threads);
    expect_identical_work("D", Distribution::kLatest, threads);   // inserts and reads of the latest keys
    expect_identical_work("F", Distribution::kUniform, threads);  // read-modify-writes
  }
}

TEST(ReplayedPhase, ATimeBoundPhaseIsNotReplayed) {
  RecordingSystem sys(std::chrono::microseconds(0));
  KeyState state;
  ASSERT_TRUE(prefill(sys, &state, 100, 16, 1, 100, "prefill").ok());
  PhaseSpec spec = spec_for("B", Distribution::kZipfian, 0, 2);
  spec.seconds = 0.05;
  const PhaseResult r = run_phase(sys, &state, spec);
  EXPECT_FALSE(r.replayed);
  EXPECT_GT(r.requests, 0u);
}

}  // namespace
}  // namespace duet::bench::kv
