// The inference batcher under concurrent callers: every caller gets its own rows' outputs (equal,
// within the MLP tolerance, to its own inference), a launch merges the callers that queued while
// the previous launch ran (forced through the launch hook, no timing), and the counters add up.
// Also the stream pool's leasing and the batcher's bad input. Runs on the engine's default
// device (the CPU twin without a GPU).
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "compute/compute.hpp"
#include "reference.hpp"

namespace duet::compute {
namespace {

using namespace testing;

class ComputeBatcher : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineConfig c;
    c.cpu_threads = 2;
    ASSERT_TRUE(Engine::open(c, &engine_).ok());
    model_ = gen_mlp({5, 64, 2}, 21);
    ASSERT_TRUE(engine_->load_model(model_, &id_).ok());
  }
  std::shared_ptr<Engine> engine_;
  Mlp model_;
  ModelId id_ = 0;
};

std::vector<float> inputs(std::uint64_t seed, std::size_t rows) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(rows * 5);
  for (float& v : x) v = u(rng);
  return x;
}

TEST_F(ComputeBatcher, ConcurrentCallersGetTheirOwnRows) {
  std::unique_ptr<Batcher> b;
  ASSERT_TRUE(Batcher::make(engine_, id_, Device::kAuto, 256, &b).ok());
  const unsigned threads = 6;
  const std::size_t calls = scaled(300);
  std::atomic<std::size_t> wrong{0}, failed{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (std::size_t i = 0; i < calls; ++i) {
        const std::size_t rows = 1 + (t + i) % 4;
        const std::vector<float> x = inputs(t * 100000 + i, rows);
        std::vector<float> y;
        if (!b->infer(x, rows, &y).ok()) {
          ++failed;
          continue;
        }
        const std::vector<float> ref = ref_mlp(model_, x, rows);
        if (y.size() != ref.size()) {
          ++wrong;
          continue;
        }
        for (std::size_t k = 0; k < y.size(); ++k)
          if (std::fabs(y[k] - ref[k]) > kMlpTolerance * (1 + std::fabs(ref[k]))) {
            ++wrong;
            break;
          }
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(failed.load(), 0u);
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(b->requests(), threads * calls);
  EXPECT_LE(b->launches(), b->requests());
  EXPECT_GE(b->launches(), 1u);
}

// One launch in flight: the first launch's leader holds in its hook until three more callers
// have queued; they must then go out together in the second launch, each with its own rows.
TEST_F(ComputeBatcher, CallersQueuedDuringALaunchShareTheNext) {
  std::unique_ptr<Batcher> b;
  ASSERT_TRUE(Batcher::make(engine_, id_, Device::kAuto, 1024, &b, 1).ok());
  std::mutex m;
  std::condition_variable cv;
  bool first = true;
  std::vector<std::size_t> sizes;
  Batcher* raw = b.get();
  b->set_launch_hook([&](std::size_t n) {
    bool lead_first;
    {
      std::lock_guard<std::mutex> lk(m);
      sizes.push_back(n);
      lead_first = first;
      first = false;
    }
    cv.notify_all();
    // No timing: the first launch waits until the other three callers are in the queue.
    if (lead_first)
      while (raw->queued() < 3) std::this_thread::yield();
  });
  std::vector<std::vector<float>> xs, ys(4);
  for (std::size_t i = 0; i < 4; ++i) xs.push_back(inputs(77 + i, i + 1));
  std::thread leader([&] { ASSERT_TRUE(b->infer(xs[0], 1, &ys[0]).ok()); });
  {
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return !sizes.empty(); });
  }
  std::vector<std::thread> rest;
  for (std::size_t i = 1; i < 4; ++i) rest.emplace_back([&, i] { ASSERT_TRUE(b->infer(xs[i], i + 1, &ys[i]).ok()); });
  leader.join();
  for (auto& t : rest) t.join();
  ASSERT_EQ(sizes.size(), 2u);
  EXPECT_EQ(sizes[0], 1u);
  EXPECT_EQ(sizes[1], 3u);
  EXPECT_EQ(b->launches(), 2u);
  EXPECT_EQ(b->requests(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    const auto ref = ref_mlp(model_, xs[i], i + 1);
    ASSERT_EQ(ys[i].size(), ref.size());
    for (std::size_t k = 0; k < ref.size(); ++k) EXPECT_NEAR(ys[i][k], ref[k], kMlpTolerance * (1 + std::fabs(ref[k])));
  }
}

// The same schedule with max_rows 1: no two callers may share a launch, so four launches of one.
TEST_F(ComputeBatcher, MaxRowsBoundsALaunch) {
  std::unique_ptr<Batcher> b;
  ASSERT_TRUE(Batcher::make(engine_, id_, Device::kAuto, 1, &b, 1).ok());
  std::mutex m;
  std::vector<std::size_t> sizes;
  Batcher* raw = b.get();
  std::atomic<bool> first{true};
  b->set_launch_hook([&](std::size_t n) {
    {
      std::lock_guard<std::mutex> lk(m);
      sizes.push_back(n);
    }
    if (first.exchange(false))
      while (raw->queued() < 3) std::this_thread::yield();
  });
  std::vector<std::thread> ts;
  for (std::size_t i = 0; i < 4; ++i)
    ts.emplace_back([&, i] {
      std::vector<float> y;
      ASSERT_TRUE(b->infer(inputs(i, 1), 1, &y).ok());
      ASSERT_EQ(y.size(), 2u);
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(sizes, (std::vector<std::size_t>{1, 1, 1, 1}));
}

TEST_F(ComputeBatcher, BadInput) {
  std::unique_ptr<Batcher> b;
  EXPECT_EQ(Batcher::make(engine_, 99, Device::kAuto, 8, &b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Batcher::make(engine_, id_, Device::kAuto, 0, &b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Batcher::make(nullptr, id_, Device::kAuto, 8, &b).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Batcher::make(engine_, id_, Device::kAuto, 8, &b, 0).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(Batcher::make(engine_, id_, Device::kCpu, 8, &b).ok());
  std::vector<float> y, x(4);
  EXPECT_EQ(b->infer(x, 1, &y).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b->infer(x, 0, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(b->infer({}, 0, &y).ok());
  EXPECT_TRUE(y.empty());
}

// Contexts lease streams only for GPU work; more GPU contexts than streams wait for one, and
// every stream comes back when its context ends.
TEST_F(ComputeBatcher, StreamPoolLeasesOnePerContext) {
  EngineConfig c;
  c.max_streams = 2;
  c.cpu_threads = 1;
  std::shared_ptr<Engine> e;
  ASSERT_TRUE(Engine::open(c, &e).ok());
  if (!e->gpu_available()) {
    std::unique_ptr<Context> ctx;
    ASSERT_TRUE(e->context(Device::kAuto, &ctx).ok());
    Selection s;
    ASSERT_TRUE(ctx->filter(gen_table(Shape::kUniform, 100, 1), {}, &s).ok());
    EXPECT_EQ(e->streams_created(), 0u);  // the CPU twin needs none
    return;
  }
  ModelId id;
  ASSERT_TRUE(e->load_model(model_, &id).ok());
  std::atomic<std::size_t> wrong{0};
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < 5; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        std::unique_ptr<Context> ctx;
        if (!e->context(Device::kGpu, &ctx).ok()) {
          ++wrong;
          continue;
        }
        std::vector<float> y;
        const auto x = inputs(t * 1000 + i, 3);
        if (!ctx->infer(id, x, 3, &y).ok() || y.size() != 6) ++wrong;
        if (e->streams_leased() > 2) ++wrong;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_LE(e->streams_created(), 2u);
  EXPECT_EQ(e->streams_leased(), 0u);
}

}  // namespace
}  // namespace duet::compute
