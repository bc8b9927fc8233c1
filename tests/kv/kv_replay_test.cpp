// A model switch whose replay the Canonical Store cannot take whole (its slab pool is bounded):
// the switch fails with kResourceExhausted, nothing is lost, entries whose replay was applied
// are no longer the cache's to replay, and later switches finish the job once space is freed.
// Values are out-of-line blocks, so a block handed to the store twice (and then freed while the
// cache still serves it) would show up as a wrong or damaged value.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kv/kv_test_util.hpp"

namespace duet {
namespace {

using namespace kvtest;

std::string block_value(int k, int version) {
  std::string v = "value-" + std::to_string(k) + "-" + std::to_string(version) + "-";
  v.resize(120, static_cast<char>('a' + (k + version) % 26));
  return v;
}

TEST(KvReplay, ASwitchThatCannotReplayEverythingLosesNothing) {
  StoreConfig cfg = test_config();
  cfg.router.mode = RouterMode::kAllHot;  // every write goes to the Hot Cache and its log
  cfg.expected_keys = 64;
  cfg.max_store_slabs = 1024;  // about 6,000 keys fit in the store
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(cfg, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("r", &kv).ok());

  constexpr int kKeys = 9000;
  std::map<int, std::string> model;
  for (int k = 0; k < kKeys; ++k) {
    const std::string v = block_value(k, 1);
    ASSERT_TRUE(kv->put("key-" + std::to_string(k), v).ok()) << k;
    model[k] = v;
  }
  // The replay of 9,000 PUTs overflows the bounded store.
  const Status first = kv->router().switch_model();
  EXPECT_EQ(first.code(), StatusCode::kResourceExhausted) << first.to_string();

  auto check_all = [&](const char* when) {
    for (int k = 0; k < kKeys; ++k) {
      std::string v;
      bool found = false;
      ASSERT_TRUE(kv->get("key-" + std::to_string(k), &v, &found).ok()) << when << " key " << k;
      const auto it = model.find(k);
      ASSERT_EQ(found, it != model.end()) << when << " key " << k;
      if (found) ASSERT_EQ(v, it->second) << when << " key " << k;
    }
  };
  check_all("after the failed switch");

  // Overwrite some keys (their entries were replayed or not), delete others, and switch until
  // the log drains: applied entries must not be replayed again.
  for (int k = 0; k < kKeys; k += 3) {
    const std::string v = block_value(k, 2);
    std::string prev;
    bool had = false;
    ASSERT_TRUE(kv->put("key-" + std::to_string(k), v, &prev, &had).ok());
    ASSERT_TRUE(had);
    ASSERT_EQ(prev, model[k]);
    model[k] = v;
  }
  for (int k = 1; k < kKeys; k += 2) {
    std::string prev;
    bool had = false;
    ASSERT_TRUE(kv->del("key-" + std::to_string(k), &prev, &had).ok());
    if (model.count(k)) {
      ASSERT_TRUE(had);
      ASSERT_EQ(prev, model[k]);
      model.erase(k);
    }
  }
  Status s;
  for (int attempt = 0; attempt < 8; ++attempt) {
    s = kv->router().switch_model();
    if (s.ok()) break;
    ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
  }
  EXPECT_TRUE(s.ok()) << "the log never drained: " << s.to_string();
  check_all("after the log drained");
}

// A switch replays a large update log while hot updates still run, so that the replay under
// the block, which every hot update and load waits for, stays short: with no writer running,
// the whole log is replayed early and nothing under the block.
TEST(KvReplay, ASwitchReplaysALargeLogBeforeItBlocksHotUpdates) {
  StoreConfig cfg = test_config();
  cfg.router.mode = RouterMode::kAllHot;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(cfg, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("early", &kv).ok());
  constexpr int kKeys = 20000;
  for (int k = 0; k < kKeys; ++k) ASSERT_TRUE(kv->put("key-" + std::to_string(k), block_value(k, 1)).ok());
  ASSERT_TRUE(kv->router().switch_model().ok());
  const KvStats st = kv->stats();
  EXPECT_EQ(st.replayed_early, static_cast<std::uint64_t>(kKeys));
  EXPECT_EQ(st.replayed_blocked, 0u);
  // Overwrite a few and switch again: a log under the early replay's threshold is replayed
  // under the block, as before.
  for (int k = 0; k < 100; ++k) ASSERT_TRUE(kv->put("key-" + std::to_string(k), block_value(k, 2)).ok());
  ASSERT_TRUE(kv->router().switch_model().ok());
  EXPECT_EQ(kv->stats().replayed_blocked, 100u);
  for (int k = 0; k < kKeys; ++k) {
    std::string v;
    bool found = false;
    ASSERT_TRUE(kv->get("key-" + std::to_string(k), &v, &found).ok());
    ASSERT_TRUE(found) << k;
    ASSERT_EQ(v, block_value(k, k < 100 ? 2 : 1)) << k;
  }
}

// Writers keep overwriting and deleting hot keys while switches replay the log early: a key
// written between the early replay's read of its entry and the store's write must keep the
// newer value, and a value the store could not take must not be lost or freed twice. Each
// writer owns its keys and remembers its last write; after the last switch every key reads
// back its writer's last value, in the Hot Cache and (after all-cold routing) in the store.
TEST(KvReplay, EarlyReplaysUnderConcurrentWritersLoseNoWrite) {
  // Learned routing with threshold 0 and every request sampled: after the first switch every
  // written key's bin is hot; a threshold of 1 later makes nothing hot, and the switch that
  // installs it evicts every entry, so reads then come from the Canonical Store.
  StoreConfig cfg = test_config();
  cfg.router.mode = RouterMode::kLearned;
  cfg.router.auto_switch = false;
  cfg.router.sample_every = 1;
  cfg.router.threshold = 0;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(open_store(cfg, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("early-concurrent", &kv).ok());
  const int writers = test_clients(2);
  const int keys_per_writer = std::max(6000, static_cast<int>(20000 * test_scale()));
  std::vector<std::map<int, int>> last(writers);  // key -> version (0: deleted)
  for (int w = 0; w < writers; ++w)
    for (int i = 0; i < keys_per_writer; ++i) {
      const int k = w * keys_per_writer + i;
      ASSERT_TRUE(kv->put("key-" + std::to_string(k), block_value(k, 1)).ok());
      last[w][k] = 1;
    }
  ASSERT_TRUE(kv->router().switch_model().ok());
  ASSERT_GT(kv->stats().hot_bins, 0u);
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int w = 0; w < writers; ++w)
    th.emplace_back([&, w] {
      std::uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(w + 1);
      for (int version = 2; !stop.load(std::memory_order_relaxed) || version < 3 * keys_per_writer; ++version) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const int k = w * keys_per_writer + static_cast<int>(x % static_cast<std::uint64_t>(keys_per_writer));
        const std::string key = "key-" + std::to_string(k);
        if (x % 16 == 0) {
          ASSERT_TRUE(kv->del(key).ok());
          last[w][k] = 0;
        } else {
          ASSERT_TRUE(kv->put(key, block_value(k, version)).ok());
          last[w][k] = version;
        }
      }
    });
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(kv->router().switch_model().ok());
  }
  stop.store(true);
  for (auto& t : th) t.join();
  ASSERT_TRUE(kv->router().switch_model().ok());
  EXPECT_GT(kv->stats().replayed_early, 0u);
  auto check = [&](const char* when) {
    for (int w = 0; w < writers; ++w)
      for (const auto& [k, version] : last[w]) {
        std::string v;
        bool found = false;
        ASSERT_TRUE(kv->get("key-" + std::to_string(k), &v, &found).ok());
        ASSERT_EQ(found, version != 0) << when << " key " << k;
        if (found) ASSERT_EQ(v, block_value(k, version)) << when << " key " << k;
      }
  };
  check("through the Hot Cache");
  ASSERT_TRUE(kv->router().set_threshold(1.0).ok());
  ASSERT_TRUE(kv->router().switch_model().ok());
  ASSERT_EQ(kv->stats().hot_entries, 0u);
  check("from the Canonical Store");
}

}  // namespace
}  // namespace duet
