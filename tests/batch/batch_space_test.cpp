// The `batch` keyspace's API (duet/batch.hpp) through a Store: accounts, blocks and single
// transfers in submission order, reads as of the last committed block, and bad input refused
// naming the transfer with nothing changed.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "duet/batch.hpp"
#include "duet/store.hpp"

namespace duet {
namespace {

std::shared_ptr<BatchSpace> open_space(std::unique_ptr<Store>* store) {
  StoreConfig c;
  c.device = DeviceChoice::kCpu;
  EXPECT_TRUE(Store::open(c, store).ok());
  std::shared_ptr<BatchSpace> b;
  Status s = (*store)->create_batch("coins", &b);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return b;
}

TEST(BatchSpace, BlocksRunInSubmissionOrderAndReadsSeeCommittedState) {
  std::unique_ptr<Store> store;
  auto b = open_space(&store);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->kind(), KeyspaceKind::kBatch);
  std::vector<AccountInit> init = {{10, 100, 1}, {20, 0, 1}, {30, 0, 1}};
  ASSERT_TRUE(b->create_accounts(init).ok());
  EXPECT_EQ(b->size(), 3u);
  // Block 2 spends what block 1 gives account 20: it commits only if it runs after block 1.
  auto f1 = b->submit_block(TransferProfile::kSmallCoin, {{10, 20, 60}});
  auto f2 = b->submit_block(TransferProfile::kSmallCoin, {{20, 30, 50}, {20, 30, 50}});
  const BlockResult r1 = f1.get(), r2 = f2.get();
  ASSERT_TRUE(r1.status.ok() && r2.status.ok());
  EXPECT_LT(r1.block, r2.block);
  EXPECT_EQ(r2.outcomes, (std::vector<TransferOutcome>{TransferOutcome::kCommitted, TransferOutcome::kAborted}));
  std::int64_t bal = 0;
  ASSERT_TRUE(b->balance(30, &bal).ok());
  EXPECT_EQ(bal, 50);
  // SmallCoin+: gas paid, amount not covered.
  const BlockResult r3 = b->submit_block(TransferProfile::kSmallCoinPlus, {{20, 10, 5}, {20, 10, 1000}}).get();
  ASSERT_TRUE(r3.status.ok());
  EXPECT_EQ(r3.outcomes, (std::vector<TransferOutcome>{TransferOutcome::kCommitted, TransferOutcome::kGasOnly}));
  AccountState st;
  ASSERT_TRUE(b->account(20, &st).ok());
  EXPECT_EQ(st.balance, 10 - 1 - 5 - 1);
  EXPECT_EQ(st.seq_num, 2);
  EXPECT_EQ(st.sent_events, 1);
  EXPECT_EQ(b->balance(99, &bal).code(), StatusCode::kNotFound);
  const BatchStats s = b->stats();
  EXPECT_EQ(s.blocks, 3u);
  EXPECT_EQ(s.transfers, 5u);
}

TEST(BatchSpace, BadInputIsRefusedNamingTheTransferAndChangesNothing) {
  std::unique_ptr<Store> store;
  auto b = open_space(&store);
  ASSERT_TRUE(b->create_accounts(std::vector<AccountInit>{{1, 50, 0}, {2, 50, 0}}).ok());
  auto refused = [&](std::vector<Transfer> t, const std::string& what) {
    const BlockResult r = b->submit_block(TransferProfile::kSmallCoin, std::move(t)).get();
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << what;
    EXPECT_NE(r.status.message().find(what), std::string::npos) << r.status.message();
    std::int64_t x = 0, y = 0;
    EXPECT_TRUE(b->balance(1, &x).ok() && b->balance(2, &y).ok());
    EXPECT_EQ(x, 50);
    EXPECT_EQ(y, 50);
  };
  refused({{1, 2, 5}, {1, 3, 5}}, "transaction 1: unknown receiver account 3");
  refused({{1, 2, 5}, {1, 2, 5}, {4, 2, 1}}, "transaction 2: unknown sender account 4");
  refused({{1, 2, 5}, {1, 2, 0}}, "transaction 1: amount 0");
  refused({{1, 2, -1}}, "transaction 0: amount -1");
  refused(std::vector<Transfer>((1u << 17) + 1, Transfer{1, 2, 1}), "exceeds the limit");
  EXPECT_EQ(b->create_accounts(std::vector<AccountInit>{{5, 1, 0}, {1, 1, 0}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b->create_accounts(std::vector<AccountInit>{{6, -1, 0}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(b->size(), 2u);
  const BlockResult ok = b->submit_block(TransferProfile::kSmallCoin, {{1, 2, 50}}).get();
  EXPECT_TRUE(ok.status.ok());
}

/// Single transfers from 8 threads gather into blocks; money is conserved, no balance goes
/// negative, and every transfer gets an outcome.
TEST(BatchSpace, SingleTransfersFromManyThreads) {
  std::unique_ptr<Store> store;
  auto b = open_space(&store);
  const std::uint64_t n = 64;
  std::vector<AccountInit> init;
  for (std::uint64_t k = 0; k < n; ++k) init.push_back({k, 20, 1});
  ASSERT_TRUE(b->create_accounts(init).ok());
  std::vector<std::thread> threads;
  std::atomic<int> done{0}, committed{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::vector<std::future<TransferResult>> fs;
      for (int i = 0; i < 150; ++i)
        fs.push_back(b->submit_transfer(i % 2 ? TransferProfile::kSmallCoin : TransferProfile::kSmallCoinPlus,
                                        {std::uint64_t(t * 7 + i) % n, std::uint64_t(t * 3 + i * 5 + 1) % n, 1 + i % 9}));
      for (auto& f : fs) {
        const TransferResult r = f.get();
        EXPECT_TRUE(r.status.ok()) << r.status.to_string();
        done += 1;
        committed += r.outcome == TransferOutcome::kCommitted;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(done.load(), 8 * 150);
  std::int64_t total = 0, gas = 0;
  for (std::uint64_t k = 0; k < n; ++k) {
    AccountState st;
    ASSERT_TRUE(b->account(k, &st).ok());
    EXPECT_GE(st.balance, 0);
    total += st.balance;
    gas += st.seq_num;  // SmallCoin+ paid gas 1 once per seq_num step
  }
  EXPECT_EQ(total + gas, std::int64_t(n) * 20);
  EXPECT_GT(committed.load(), 0);
}

TEST(BatchSpace, StoreTypedAccessors) {
  std::unique_ptr<Store> store;
  auto b = open_space(&store);
  std::shared_ptr<BatchSpace> again;
  EXPECT_TRUE(store->batch("coins", &again).ok());
  EXPECT_EQ(again, b);
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("plain", &kv).ok());
  EXPECT_EQ(store->batch("plain", &again).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->batch("none", &again).code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace duet
