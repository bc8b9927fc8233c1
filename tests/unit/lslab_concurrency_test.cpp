// Concurrency on the CPU twin, checked by recorded histories rather than timing: several
// client threads submit mixed batches at once (each batch itself runs on all workers); every
// request is recorded with its batch's invocation and response times from a shared counter,
// and the checker decides per key whether a linearization exists.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <unordered_map>

#include "checkers/linearizability.hpp"
#include "gpu/device.hpp"
#include "unit/lslab_helpers.hpp"

using namespace duet::lslab;
using namespace duet::lslab::testing;
using duet::checkers::RegisterOp;
using duet::checkers::RegisterOpKind;

namespace {

struct Recorded {
  std::uint64_t key;
  RegisterOp op;
};

/// Runs `clients` threads, each submitting `batches` batches of `batch_size` random requests
/// over `keyspace` keys, and returns the per-key history. PUT values are unique.
std::unordered_map<std::uint64_t, std::vector<RegisterOp>> run_clients(Map& m, int clients, int batches,
                                                                      int batch_size, std::uint64_t keyspace,
                                                                      int put_pct, int del_pct) {
  std::atomic<std::uint64_t> clock{0};
  std::vector<std::vector<Recorded>> logs(clients);
  std::vector<std::thread> ts;
  for (int c = 0; c < clients; ++c) {
    ts.emplace_back([&, c] {
      std::mt19937_64 rng(1000 + c);
      std::uint64_t value = (std::uint64_t(c) + 1) << 40;
      for (int i = 0; i < batches; ++i) {
        OwnedBatch b;
        for (int j = 0; j < batch_size; ++j) {
          const std::uint64_t key = rng() % keyspace;
          const int r = static_cast<int>(rng() % 100);
          b.add(r < put_pct ? Op::kPut : r < put_pct + del_pct ? Op::kDelete : Op::kGet, key, ++value);
        }
        const std::uint64_t inv = clock.fetch_add(1);
        const duet::Status s = b.run(m);
        const std::uint64_t resp = clock.fetch_add(1);
        ASSERT_TRUE(s.ok()) << s.to_string();
        for (std::size_t j = 0; j < b.size(); ++j) {
          RegisterOp op;
          op.invoke = inv;
          op.response = resp;
          op.kind = b.ops[j] == Op::kGet ? RegisterOpKind::kGet
                    : b.ops[j] == Op::kPut ? RegisterOpKind::kPut
                                           : RegisterOpKind::kDelete;
          op.arg = b.values[j];
          op.found = b.status[j] == OpStatus::kFound;
          op.out = b.out[j];
          EXPECT_TRUE(b.status[j] == OpStatus::kFound || b.status[j] == OpStatus::kNotFound);
          logs[c].push_back({b.keys[j], op});
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  std::unordered_map<std::uint64_t, std::vector<RegisterOp>> history;
  for (auto& log : logs)
    for (auto& r : log) history[r.key].push_back(r.op);
  return history;
}

}  // namespace

enum class Backend { kCpu, kGpu };

class LSlabConcurrency : public ::testing::TestWithParam<std::tuple<Backend, unsigned, ReadPolicy>> {};

TEST_P(LSlabConcurrency, MixedBatchesAreLinearizablePerKey) {
  Config c;
  c.expected_keys = 256;  // few buckets: heavy contention on bucket locks and slab recycling
  c.load_factor = 1.0;
  c.threads = 2;
  c.read_policy = std::get<2>(GetParam());
  std::unique_ptr<Map> m;
  if (std::get<0>(GetParam()) == Backend::kGpu) {
    if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason;
    const duet::Status s = make_gpu_map(c, &m, std::get<1>(GetParam()));
    ASSERT_TRUE(s.ok()) << s.to_string();
  } else {
    m = cpu_map(c, std::get<1>(GetParam()));
  }
  // 4 clients x 30 batches x 4096 requests = 491,520 requests over 20,000 keys; batches this
  // large are split across both workers, so requests of one batch also race each other.
  auto history = run_clients(*m, 4, 30, 4096, 20000, 40, 20);
  std::size_t total = 0;
  for (auto& [k, ops] : history) total += ops.size();
  EXPECT_EQ(total, 4u * 30 * 4096);
  const auto r = duet::checkers::check_per_key(history);
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

INSTANTIATE_TEST_SUITE_P(BackendWidthAndReads, LSlabConcurrency,
                         ::testing::Combine(::testing::Values(Backend::kCpu, Backend::kGpu), ::testing::Values(8u, 32u),
                                            ::testing::Values(ReadPolicy::kOptimistic, ReadPolicy::kShared)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == Backend::kCpu ? "cpu" : "gpu") + "_w" +
                                  std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) == ReadPolicy::kOptimistic ? "_optimistic" : "_shared");
                         });

TEST(LSlabConcurrency, HotKeysUnderHeavyWriteContention) {
  Config c;
  c.expected_keys = 64;
  c.threads = 2;
  auto m = cpu_map(c);
  // 8 keys only: every batch carries several requests on each key, racing other clients'.
  auto history = run_clients(*m, 3, 60, 64, 8, 45, 25);
  const auto r = duet::checkers::check_per_key(history);
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

class LSlabGpuHotKeys : public ::testing::TestWithParam<unsigned> {};

TEST_P(LSlabGpuHotKeys, HotKeysUnderHeavyWriteContention) {
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason;
  Config c;
  c.expected_keys = 64;
  std::unique_ptr<Map> m;
  const duet::Status s = make_gpu_map(c, &m, GetParam());
  ASSERT_TRUE(s.ok()) << s.to_string();
  // Batches of 64 requests on 8 keys: tiles of one launch race on every key's bucket lock.
  auto history = run_clients(*m, 3, 60, 64, 8, 45, 25);
  const auto r = duet::checkers::check_per_key(history);
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

TEST_P(LSlabGpuHotKeys, LargeBatchesOnFewBucketsComplete) {
  // Most requests of these batches find their bucket busy and take the blocking path, with
  // several tiles of one warp waiting on each other's locks: every request must still finish.
  if (!duet::gpu::device().present) GTEST_SKIP() << "no GPU: " << duet::gpu::device().reason;
  Config c;
  c.expected_keys = 16;
  std::unique_ptr<Map> m;
  ASSERT_TRUE(make_gpu_map(c, &m, GetParam()).ok());
  for (int round = 0; round < 4; ++round) {
    OwnedBatch b;
    for (std::uint64_t i = 0; i < (1u << 18); ++i) b.add(i % 3 == 2 ? Op::kDelete : Op::kPut, i % 64, i);
    const duet::Status s = b.run(*m);
    ASSERT_TRUE(s.ok()) << s.to_string();
    for (auto st : b.status) ASSERT_TRUE(st == OpStatus::kFound || st == OpStatus::kNotFound);
  }
}

INSTANTIATE_TEST_SUITE_P(Width, LSlabGpuHotKeys, ::testing::Values(8u, 16u, 32u),
                         [](const auto& info) { return "w" + std::to_string(info.param); });
