// A model switch whose replay the Canonical Store cannot take whole (its slab pool is bounded):
// the switch fails with kResourceExhausted, nothing is lost, entries whose replay was applied
// are no longer the cache's to replay, and later switches finish the job once space is freed.
// Values are out-of-line blocks, so a block handed to the store twice (and then freed while the
// cache still serves it) would show up as a wrong or damaged value.
#include <gtest/gtest.h>

#include <map>
#include <string>

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

}  // namespace
}  // namespace duet
