// The `kv` keyspace's API against a reference model (std::map), one operation or one batch at
// a time, under every router mode: the learned router (with a threshold so low that most keys a
// test touches turn hot after a switch, once with switches only when asked and once with
// automatic ones too), all requests hot, all requests cold. Routing may change only speed, so
// every case must give the same answers in every mode.
//
// Keys and values cover the shapes an encoding can get wrong: empty, 1 to 9 bytes, 8-byte keys
// and values whose first byte is 0xF0 or above, bytes of zero, long and 1 MiB strings. Limits,
// the memory budget, keyspace names, the device choice and the statistics are checked too.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kv/kv_test_util.hpp"

using namespace std::string_literals;
using duet::DeviceChoice;
using duet::KvPath;
using duet::KvRequest;
using duet::KvSpace;
using duet::KvStats;
using duet::KvTrace;
using duet::RouterMode;
using duet::Status;
using duet::StatusCode;
using duet::Store;
using duet::StoreConfig;
using duet::kvtest::difference;
using duet::kvtest::printable;

namespace {

std::string random_bytes(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

/// Keys an encoding of variable-length keys into fixed words can confuse with each other.
std::vector<std::string> key_shapes() {
  std::vector<std::string> k;
  k.push_back("");
  for (int n = 1; n <= 7; ++n) k.push_back("abcdefg"s.substr(0, n));
  k.push_back("abcdefgh");
  k.push_back("abcdefghi");
  std::string long_key(1000, 'x');
  for (std::size_t i = 0; i < long_key.size(); ++i) long_key[i] = static_cast<char>('a' + i % 23);
  k.push_back(long_key);
  std::string long_key_b = long_key;
  long_key_b.back() = '#';  // differs only in its last byte
  k.push_back(long_key_b);
  // 8 bytes, first byte at and above 0xF0.
  for (int b : {0xEF, 0xF0, 0xF1, 0xF5, 0xF7, 0xF8, 0xFE, 0xFF}) {
    std::string s = "\x01" "2345678"s;
    s[0] = static_cast<char>(b);
    k.push_back(s);
  }
  k.push_back(std::string(8, '\xff'));
  k.push_back(std::string(7, '\xff') + "\xfe"s);
  k.push_back("\xf0"s + std::string(7, '\0'));
  k.push_back(std::string(8, '\xf5'));
  k.push_back("\xf5"s + "12345678"s);       // 9 bytes starting 0xF5
  k.push_back("\xf5"s + "123456"s);         // 7 bytes starting 0xF5
  // Bytes of zero, alone and inside keys.
  for (int n : {1, 2, 7, 8, 9, 16}) k.push_back(std::string(n, '\0'));
  k.push_back("a\0b"s);
  k.push_back("\0a"s);
  k.push_back("a\0"s);
  // "abc" (above), then the same key padded with zeros to 4, 8 and 9 bytes.
  k.push_back("abc\0"s);
  k.push_back("abc\0\0\0\0\0"s);
  k.push_back("abc\0\0\0\0\0\0"s);
  k.push_back("abcdefg\0"s);
  k.push_back("abcdefgh\0"s);
  k.push_back("abcdefghj");
  // Keys that look like small integers in either byte order.
  k.push_back("\x01\0\0\0\0\0\0\0"s);
  k.push_back("\0\0\0\0\0\0\0\x01"s);
  k.push_back("\x01"s);
  return k;
}

/// Values an inline encoding (up to 8 bytes) or a value-block encoding can get wrong.
std::vector<std::string> value_shapes() {
  std::vector<std::string> v;
  for (int n = 0; n <= 7; ++n) v.push_back("ABCDEFG"s.substr(0, n));
  for (int n = 1; n <= 9; ++n) v.push_back(std::string(n, '\0'));
  for (int b : {0x00, 0x41, 0xF5, 0xF0, 0xFF}) {
    std::string s = "\x01" "bcdefgh"s;
    s[0] = static_cast<char>(b);
    v.push_back(s);
  }
  v.push_back(std::string(8, '\xff'));
  v.push_back(std::string(8, '\xf5'));
  v.push_back("\xf5"s + std::string(7, '\0'));
  v.push_back("\xf5"s + "abcdef"s);  // 7 bytes starting 0xF5
  v.push_back("123456789");
  v.push_back("\xf5"s + "23456789"s);
  v.push_back(std::string(100, 'v'));
  std::mt19937_64 rng(11);
  v.push_back(random_bytes(rng, 4096));
  v.push_back(random_bytes(rng, 1u << 20));  // 1 MiB
  v.push_back(random_bytes(rng, (1u << 20) + 1));
  return v;
}

KvRequest request(KvRequest::Op op, std::string_view key, std::string_view value = {}) {
  KvRequest r;
  r.op = op;
  r.key = key;
  r.value = value;
  return r;
}

/// Whether some serial order of `batch` (all on one key, starting from `initial`) explains every
/// request's recorded outcome and ends with `final_state`.
bool explained_by_some_order(const std::vector<KvRequest>& batch, const std::optional<std::string>& initial,
                             const std::optional<std::string>& final_state) {
  std::vector<std::size_t> order(batch.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  do {
    std::optional<std::string> state = initial;
    bool ok = true;
    for (std::size_t i : order) {
      const KvRequest& r = batch[i];
      if (r.found != state.has_value() || (state && r.result != *state)) {
        ok = false;
        break;
      }
      if (r.op == KvRequest::Op::kPut) state = std::string(r.value);
      if (r.op == KvRequest::Op::kDelete) state.reset();
    }
    if (ok && state == final_state) return true;
  } while (std::next_permutation(order.begin(), order.end()));
  return false;
}

struct ModeCase {
  const char* name;
  RouterMode mode;
  bool auto_switch;
};

void PrintTo(const ModeCase& m, std::ostream* os) { *os << m.name; }

class KvApi : public ::testing::TestWithParam<ModeCase> {
 protected:
  bool learned() const { return GetParam().mode == RouterMode::kLearned; }

  /// The suite's configuration: the learned router samples every request, is ready after a few
  /// dozen, and calls any sampled bin hot (threshold 0), so a switch makes most touched keys hot.
  StoreConfig config() const {
    StoreConfig c = duet::kvtest::test_config();
    c.router.mode = GetParam().mode;
    c.router.bins = 1024;
    c.router.threshold = 0.0;
    c.router.sample_every = 1;
    c.router.train_requests = 64;
    c.router.auto_switch = GetParam().auto_switch;
    c.router.min_switch_interval_ms = 1;
    return c;
  }

  void reopen(const StoreConfig& c) {
    kv_ = nullptr;
    store_.reset();
    model_.clear();
    touched_.clear();
    ASSERT_TRUE(duet::kvtest::open_store(c, &store_));
    const Status s = store_->create_kv("test", &kv_);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_NE(kv_, nullptr);
  }

  void SetUp() override { reopen(config()); }

  /// Installs the shadow model (the switch protocol runs in every mode).
  void settle() {
    const Status s = kv_->router().switch_model();
    ASSERT_TRUE(s.ok()) << "switch_model: " << s.to_string();
  }

  void put(std::string_view k, std::string_view v) {
    std::string prev = "(untouched)";
    bool had = false;
    const Status s = kv_->put(k, v, &prev, &had);
    ASSERT_TRUE(s.ok()) << "put " << printable(k) << " = " << printable(v) << ": " << s.to_string();
    const auto it = model_.find(std::string(k));
    if (it == model_.end()) {
      EXPECT_FALSE(had) << "put " << printable(k) << " on an absent key reported previous " << printable(prev);
    } else {
      EXPECT_TRUE(had) << "put " << printable(k) << " did not report previous " << printable(it->second);
      if (had) {
        EXPECT_EQ(difference(it->second, prev), "") << "previous value of put " << printable(k);
      }
    }
    model_[std::string(k)] = std::string(v);
    touched_.insert(std::string(k));
  }

  void del(std::string_view k) {
    std::string prev = "(untouched)";
    bool had = false;
    const Status s = kv_->del(k, &prev, &had);
    ASSERT_TRUE(s.ok()) << "del " << printable(k) << ": " << s.to_string();
    const auto it = model_.find(std::string(k));
    if (it == model_.end()) {
      EXPECT_FALSE(had) << "del " << printable(k) << " of an absent key reported previous " << printable(prev);
    } else {
      EXPECT_TRUE(had) << "del " << printable(k) << " did not report previous " << printable(it->second);
      if (had) {
        EXPECT_EQ(difference(it->second, prev), "") << "previous value of del " << printable(k);
      }
      model_.erase(it);
    }
    touched_.insert(std::string(k));
  }

  void get(std::string_view k) {
    std::string got = "(untouched)";
    bool found = false;
    const Status s = kv_->get(k, &got, &found);
    ASSERT_TRUE(s.ok()) << "get " << printable(k) << ": " << s.to_string();
    const auto it = model_.find(std::string(k));
    if (it == model_.end()) {
      EXPECT_FALSE(found) << "get " << printable(k) << " of an absent key found " << printable(got);
    } else {
      EXPECT_TRUE(found) << "get " << printable(k) << " did not find " << printable(it->second);
      if (found) {
        EXPECT_EQ(difference(it->second, got), "") << "get " << printable(k);
      }
    }
    touched_.insert(std::string(k));
  }

  /// Every key ever touched reads as the model says; stops at the first few mismatches.
  void verify_all(const char* where) {
    SCOPED_TRACE(where);
    for (const auto& k : touched_) {
      get(k);
      if (HasFailure()) return;
    }
  }

  std::unique_ptr<Store> store_;
  std::shared_ptr<KvSpace> kv_;
  std::map<std::string, std::string> model_;
  std::set<std::string> touched_;
};

TEST_P(KvApi, KeyShapes) {
  const auto keys = key_shapes();
  ASSERT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), keys.size()) << "the test's keys repeat";
  auto value = [](std::size_t i, int round) { return "v" + std::to_string(round) + ":" + std::to_string(i); };
  for (std::size_t i = 0; i < keys.size(); ++i) get(keys[i]);
  for (std::size_t i = 0; i < keys.size(); ++i) put(keys[i], value(i, 0));
  verify_all("after the first puts");
  settle();  // learned: every key just touched turns hot
  verify_all("after the first switch");
  for (std::size_t i = 0; i < keys.size(); ++i) put(keys[i], value(i, 1));
  verify_all("after the second puts");
  settle();
  for (std::size_t i = 0; i < keys.size(); i += 2) del(keys[i]);
  verify_all("after deleting every other key");
  for (std::size_t i = 0; i < keys.size(); i += 2) del(keys[i]);  // absent now
  settle();
  verify_all("after the second switch");
  for (std::size_t i = 0; i < keys.size(); ++i) put(keys[i], value(i, 2));
  for (std::size_t i = 1; i < keys.size(); i += 2) del(keys[i]);
  settle();
  verify_all("at the end");
}

TEST_P(KvApi, KeyAtTheDefaultLimit) {
  const std::size_t limit = store_->config().limits.max_key_bytes;
  ASSERT_EQ(limit, 64u * 1024);
  std::string k(limit, 'k');
  k[0] = '\xf5';
  put(k, "at the limit");
  settle();
  get(k);
  std::string over = k + "!";
  std::string got;
  bool found = true;
  EXPECT_EQ(kv_->put(over, "x").code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->get(over, &got, &found).code(), StatusCode::kTooLarge);
  verify_all("after the over-limit key");
}

TEST_P(KvApi, ValueShapes) {
  const auto values = value_shapes();
  // Each value under a key of its own.
  for (std::size_t i = 0; i < values.size(); ++i) put("own/" + std::to_string(i), values[i]);
  verify_all("values under their own keys");
  settle();
  verify_all("values under their own keys, after a switch");
  // One key of each kind taking every value in turn, forwards then backwards, so each value
  // replaces values of every other shape (inline by block, block by inline, empty by 1 MiB).
  for (const std::string& k : {"one"s, "\xf5" "1234567"s, std::string(8, '\0'), std::string(300, 'q')}) {
    for (const auto& v : values) put(k, v);
    settle();
    get(k);
    for (auto it = values.rbegin(); it != values.rend(); ++it) put(k, *it);
    get(k);
    del(k);
    get(k);
  }
  // Value of 1 MiB replaced by the empty value and back, with a switch in between.
  put("big", values.back());
  settle();
  put("big", "");
  get("big");
  settle();
  put("big", values.back());
  verify_all("at the end");
}

TEST_P(KvApi, PutAndDeleteReturnThePreviousValue) {
  std::string prev;
  bool had = true;
  ASSERT_TRUE(kv_->put("k", "first", &prev, &had).ok());
  EXPECT_FALSE(had);
  had = false;
  ASSERT_TRUE(kv_->put("k", "second", &prev, &had).ok());
  EXPECT_TRUE(had);
  EXPECT_EQ(prev, "first");
  settle();
  ASSERT_TRUE(kv_->put("k", "", &prev, &had).ok());
  EXPECT_TRUE(had);
  EXPECT_EQ(prev, "second");
  ASSERT_TRUE(kv_->put("k", "third", &prev, &had).ok());
  EXPECT_TRUE(had);
  EXPECT_EQ(prev, "") << "an empty previous value is a value";
  ASSERT_TRUE(kv_->del("k", &prev, &had).ok());
  EXPECT_TRUE(had);
  EXPECT_EQ(prev, "third");
  had = true;
  ASSERT_TRUE(kv_->del("k", &prev, &had).ok());
  EXPECT_FALSE(had);
  // Without the optional outputs.
  ASSERT_TRUE(kv_->put("k", "fourth").ok());
  ASSERT_TRUE(kv_->put("k", "fifth").ok());
  std::string got;
  bool found = false;
  ASSERT_TRUE(kv_->get("k", &got, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(got, "fifth");
  ASSERT_TRUE(kv_->del("k").ok());
  ASSERT_TRUE(kv_->del("k").ok());
  ASSERT_TRUE(kv_->get("k", &got, &found).ok());
  EXPECT_FALSE(found);
}

TEST_P(KvApi, WritesWithoutPreviousReportFoundOnly) {
  // Keys written twice in separate batches (and once more after the router settles, so that
  // hot keys take the Hot Cache path); requests alternate want_previous.
  constexpr int kKeys = 300;
  auto key = [](int i) { return "wp-key-" + std::to_string(i); };
  auto value = [](int i, int round) { return std::string(40, static_cast<char>('a' + round)) + std::to_string(i); };
  for (int round = 0; round < 3; ++round) {
    if (round == 2) settle();
    std::vector<std::string> keys(kKeys), values(kKeys);
    std::vector<KvRequest> batch(kKeys);
    for (int i = 0; i < kKeys; ++i) {
      keys[i] = key(i);
      values[i] = value(i, round);
      batch[i].op = KvRequest::Op::kPut;
      batch[i].key = keys[i];
      batch[i].value = values[i];
      batch[i].want_previous = i % 2 == 0;
    }
    ASSERT_TRUE(kv_->execute(batch).ok());
    for (int i = 0; i < kKeys; ++i) {
      ASSERT_TRUE(batch[i].status.ok()) << batch[i].status.to_string();
      EXPECT_EQ(batch[i].found, round > 0) << "round " << round << " key " << i;
      const std::string want = round > 0 && i % 2 == 0 ? value(i, round - 1) : "";
      EXPECT_EQ(batch[i].result, want) << "round " << round << " key " << i;
    }
  }
  std::vector<std::string> keys(kKeys);
  std::vector<KvRequest> dels(kKeys);
  for (int i = 0; i < kKeys; ++i) {
    keys[i] = key(i);
    std::string got;
    bool found = false;
    ASSERT_TRUE(kv_->get(keys[i], &got, &found).ok());
    EXPECT_TRUE(found);
    EXPECT_EQ(got, value(i, 2));
    dels[i].op = KvRequest::Op::kDelete;
    dels[i].key = keys[i];
    dels[i].want_previous = i % 3 == 0;
  }
  ASSERT_TRUE(kv_->execute(dels).ok());
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_TRUE(dels[i].found);
    EXPECT_EQ(dels[i].result, i % 3 == 0 ? value(i, 2) : "");
  }
  EXPECT_EQ(kv_->size(), 0u);
}

// An explicit switch with (almost) no requests since the last one (as when it follows an
// automatic switch) keeps what the router learned and applies the current threshold to it,
// instead of installing a model of nothing (every key cold).
TEST(KvRouter, SwitchWithoutNewSamplesKeepsWhatWasLearned) {
  StoreConfig c = duet::kvtest::test_config();
  c.router.mode = RouterMode::kLearned;
  c.router.bins = 1024;
  c.router.threshold = 0.002;
  c.router.sample_every = 1;
  c.router.train_requests = 64;
  c.router.auto_switch = false;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(duet::kvtest::open_store(c, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("router", &kv).ok());
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(kv->put("popular-" + std::to_string(i % 10), "v").ok());
  ASSERT_TRUE(kv->router().switch_model().ok());
  const std::uint64_t learned = kv->stats().hot_bins;
  ASSERT_GT(learned, 0u);
  ASSERT_TRUE(kv->router().switch_model().ok());  // no request since the last switch
  EXPECT_EQ(kv->stats().hot_bins, learned);
  ASSERT_TRUE(kv->put("popular-1", "w").ok());  // one sample: still too little on its own
  ASSERT_TRUE(kv->router().switch_model().ok());
  EXPECT_EQ(kv->stats().hot_bins, learned);
  ASSERT_TRUE(kv->router().set_threshold(1.0).ok());  // the new threshold applies to the kept counts
  ASSERT_TRUE(kv->router().switch_model().ok());
  EXPECT_EQ(kv->stats().hot_bins, 0u);
  ASSERT_TRUE(kv->router().set_threshold(0.002).ok());
  ASSERT_TRUE(kv->router().switch_model().ok());
  EXPECT_EQ(kv->stats().hot_bins, learned) << "the counts survive a model that made nothing hot";
}

TEST_P(KvApi, BatchesAgreeWithTheModel) {
  std::mt19937_64 rng(5);
  std::vector<std::string> keys = key_shapes();
  for (int i = 0; i < 300; ++i) {
    keys.push_back("batch/" + std::to_string(i));
    std::string b(8, '\0');
    for (int j = 0; j < 8; ++j) b[j] = static_cast<char>(rng());
    b[0] = static_cast<char>(0xF0 | (i & 15));
    keys.push_back(b);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  auto random_value = [&](std::uint64_t id) {
    const unsigned r = rng() % 100;
    const std::size_t n = r < 45 ? rng() % 9 : r < 97 ? 9 + rng() % 300 : 70000 + rng() % 1000;
    std::string v = random_bytes(rng, n);
    if (n >= 8) std::memcpy(v.data(), &id, 8);
    return v;
  };
  std::uint64_t id = 0;
  for (int round = 0; round < 60 && !HasFailure(); ++round) {
    // Distinct keys within a batch, so the model's answer does not depend on the order.
    std::vector<std::string> pick = keys;
    std::shuffle(pick.begin(), pick.end(), rng);
    const std::size_t n = round % 10 == 9 ? pick.size() : 1 + rng() % 64;
    pick.resize(n);
    std::vector<KvRequest> batch(n);
    std::vector<KvTrace> trace(n);
    std::vector<std::string> values(n);
    for (std::size_t i = 0; i < n; ++i) {
      const unsigned r = rng() % 100;
      batch[i].op = r < 40 ? KvRequest::Op::kGet : r < 80 ? KvRequest::Op::kPut : KvRequest::Op::kDelete;
      batch[i].key = pick[i];
      if (batch[i].op == KvRequest::Op::kPut) {
        values[i] = random_value(++id);
        batch[i].value = values[i];
      }
    }
    const Status s = kv_->execute(batch, trace);
    ASSERT_TRUE(s.ok()) << "batch " << round << ": " << s.to_string();
    for (std::size_t i = 0; i < n; ++i) {
      const KvRequest& r = batch[i];
      const KvTrace& t = trace[i];
      const std::string k(r.key);
      ASSERT_TRUE(r.status.ok()) << "request " << i << " on " << printable(k) << ": " << r.status.to_string();
      EXPECT_GT(t.done_ns, 0u);
      const auto it = model_.find(k);
      const std::string what = std::string(r.op == KvRequest::Op::kGet ? "get " : r.op == KvRequest::Op::kPut ? "put " : "del ") +
                               printable(k) + (it == model_.end() ? " (absent)" : " (present)") + ": path " +
                               std::to_string(static_cast<int>(t.path));
      if (GetParam().mode == RouterMode::kAllCold) {
        EXPECT_EQ(t.path, KvPath::kCold) << what;
      }
      if (GetParam().mode == RouterMode::kAllHot) {
        EXPECT_EQ(t.path, KvPath::kHot) << what;
      }
      EXPECT_NE(t.path, KvPath::kNone) << what;
      EXPECT_EQ(r.found, it != model_.end()) << "request " << i << " on " << printable(k);
      if (r.found && it != model_.end()) {
        EXPECT_EQ(difference(it->second, r.result), "") << "request " << i << " on " << printable(k);
      }
      if (r.op == KvRequest::Op::kPut) model_[k] = values[i];
      if (r.op == KvRequest::Op::kDelete && it != model_.end()) model_.erase(it);
      touched_.insert(k);
    }
    if (round % 7 == 6) settle();
  }
  verify_all("single GETs after the batches");
  // And a batch of GETs of every key.
  std::vector<KvRequest> all(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) all[i].key = keys[i];
  ASSERT_TRUE(kv_->execute(all).ok());
  for (const auto& r : all) {
    const auto it = model_.find(std::string(r.key));
    ASSERT_EQ(r.found, it != model_.end()) << printable(r.key);
    if (r.found) {
      EXPECT_EQ(difference(it->second, r.result), "") << printable(r.key);
    }
  }
  // An empty batch is a no-op.
  EXPECT_TRUE(kv_->execute(std::span<KvRequest>()).ok());
}

TEST_P(KvApi, RequestsOnOneKeyInOneBatchTakeEffectInSomeOrder) {
  for (int round = 0; round < 20 && !HasFailure(); ++round) {
    const std::string k = round % 2 ? "same" : "\xf5" "1234567"s;
    std::optional<std::string> initial;
    {
      std::string v;
      bool found = false;
      ASSERT_TRUE(kv_->get(k, &v, &found).ok());
      if (found) initial = v;
    }
    const std::string v1 = "one/" + std::to_string(round), v2 = std::string(20 + round, 'b');
    std::vector<KvRequest> batch(round % 3 == 0 ? 4 : 3);
    batch[0].op = KvRequest::Op::kPut;
    batch[0].key = k;
    batch[0].value = v1;
    batch[1].op = KvRequest::Op::kPut;
    batch[1].key = k;
    batch[1].value = v2;
    batch[2].op = KvRequest::Op::kGet;
    batch[2].key = k;
    if (batch.size() == 4) {
      batch[3].op = KvRequest::Op::kDelete;
      batch[3].key = k;
    }
    ASSERT_TRUE(kv_->execute(batch).ok());
    for (const auto& r : batch) ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    std::optional<std::string> final_state;
    std::string v;
    bool found = false;
    ASSERT_TRUE(kv_->get(k, &v, &found).ok());
    if (found) final_state = v;
    std::string told;
    for (const auto& r : batch)
      told += "  " + std::string(r.op == KvRequest::Op::kGet ? "get" : r.op == KvRequest::Op::kPut ? "put" : "del") +
              " -> " + (r.found ? printable(r.result) : "absent") + "\n";
    EXPECT_TRUE(explained_by_some_order(batch, initial, final_state))
        << "round " << round << ", initial " << (initial ? printable(*initial) : "absent") << ", final "
        << (final_state ? printable(*final_state) : "absent") << ":\n"
        << told;
    if (round % 5 == 4) settle();
  }
}

TEST_P(KvApi, OverLimitRequestsChangeNothing) {
  StoreConfig c = config();
  c.limits.max_key_bytes = 16;
  c.limits.max_value_bytes = 64;
  reopen(c);
  const std::string key16(16, 'k'), key17(17, 'k');
  const std::string val64(64, 'v'), val65(65, 'v');
  put(key16, val64);
  put("small", "old");
  settle();
  std::string got;
  bool found = false, had = false;
  EXPECT_EQ(kv_->put(key17, "x").code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->get(key17, &got, &found).code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->del(key17).code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->put(key16, val65, &got, &had).code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->put("small", val65).code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->put("absent", val65).code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->put("absent", std::string(1u << 20, 'z')).code(), StatusCode::kTooLarge);
  touched_.insert("absent");
  verify_all("after over-limit single requests");
  // A batch with over-limit requests: those get kTooLarge, the rest run, and execute() returns
  // the first failed request's status.
  std::vector<KvRequest> b(6);
  b[0] = request(KvRequest::Op::kPut, "small", "new");
  b[1] = request(KvRequest::Op::kPut, key16, val65);
  b[2] = request(KvRequest::Op::kGet, key17);
  b[3] = request(KvRequest::Op::kPut, "fits", val64);
  b[4] = request(KvRequest::Op::kDelete, key17);
  b[5] = request(KvRequest::Op::kGet, key16);
  const Status s = kv_->execute(b);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge) << s.to_string();
  EXPECT_TRUE(b[0].status.ok()) << b[0].status.to_string();
  EXPECT_EQ(b[1].status.code(), StatusCode::kTooLarge);
  EXPECT_EQ(b[2].status.code(), StatusCode::kTooLarge);
  EXPECT_TRUE(b[3].status.ok()) << b[3].status.to_string();
  EXPECT_EQ(b[4].status.code(), StatusCode::kTooLarge);
  EXPECT_TRUE(b[5].status.ok()) << b[5].status.to_string();
  EXPECT_TRUE(b[0].found);
  EXPECT_EQ(b[0].result, "old");
  EXPECT_TRUE(b[5].found);
  EXPECT_EQ(difference(val64, b[5].result), "");
  model_["small"] = "new";
  model_["fits"] = val64;
  touched_.insert("fits");
  settle();
  verify_all("after the batch with over-limit requests");
}

TEST_P(KvApi, ManyKeysBeyondTheInitialSizes) {
  StoreConfig c = config();
  c.expected_keys = 256;
  c.hot_cache_entries = 64;
  reopen(c);
  const int n = 6000;
  auto key = [](int i) {
    if (i % 3 == 0) {
      std::string b(8, '\0');
      std::memcpy(b.data(), &i, sizeof i);
      b[7] = static_cast<char>(0xF0 | (i & 15));
      std::reverse(b.begin(), b.end());  // first byte 0xF?
      return b;
    }
    return "many/" + std::to_string(i);
  };
  for (int i = 0; i < n && !HasFailure(); ++i) put(key(i), i % 2 ? std::to_string(i) : std::string(40, 'a' + i % 26));
  settle();
  verify_all("after filling");
  for (int i = 0; i < n && !HasFailure(); i += 2) del(key(i));
  for (int i = 1; i < n && !HasFailure(); i += 4) put(key(i), "again/" + std::to_string(i));
  settle();
  verify_all("after deleting and rewriting");
}

TEST_P(KvApi, MemoryBudgetExhaustionKeepsAcknowledgedWrites) {
  StoreConfig c = config();
  c.memory_budget_bytes = 64ull << 20;
  c.expected_keys = 1024;
  c.hot_cache_entries = 256;
  reopen(c);
  std::mt19937_64 rng(9);
  const std::size_t value_bytes = 1u << 20;
  std::vector<std::string> acked;
  bool exhausted = false;
  for (int i = 0; i < 256; ++i) {
    const std::string k = "budget/" + std::to_string(i);
    std::string v = random_bytes(rng, value_bytes);
    const Status s = kv_->put(k, v);
    touched_.insert(k);
    if (s.ok()) {
      model_[k] = std::move(v);
      acked.push_back(k);
      if (i % 16 == 15) settle();
      continue;
    }
    ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
    exhausted = true;
    break;
  }
  ASSERT_TRUE(exhausted) << "256 MiB of values fit a 64 MiB budget";
  EXPECT_GE(acked.size(), 8u) << "a 64 MiB budget held fewer than eight 1 MiB values";
  verify_all("after exhaustion");
  // A larger value on an acknowledged key: either it fits or the old value stays.
  {
    std::string big = random_bytes(rng, 8 * value_bytes);
    const Status s = kv_->put(acked.front(), big);
    if (s.ok()) {
      model_[acked.front()] = std::move(big);
    } else {
      EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
    }
  }
  const KvStats st = kv_->stats();
  EXPECT_GT(st.memory_bytes, 0u);
  EXPECT_LE(st.memory_bytes, c.memory_budget_bytes);
  settle();  // the switch protocol replays the hot log into a full store
  verify_all("after a switch at exhaustion");
  // Deleting returns memory: a write fits again (reclamation may lag by a few epochs).
  for (const auto& k : acked) del(k);
  settle();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  Status s;
  do {
    s = kv_->put("after", std::string(value_bytes, 'a'));
    if (s.ok()) break;
    ASSERT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
    get("budget/0");
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_TRUE(s.ok()) << "no 1 MiB write fits after deleting every key: " << s.to_string();
  if (s.ok()) model_["after"] = std::string(value_bytes, 'a');
  touched_.insert("after");
  verify_all("at the end");
}

TEST_P(KvApi, ContentsSurviveModelSwitchesAsPopularKeysChange) {
  std::mt19937_64 rng(21);
  std::vector<std::string> keys;
  for (int i = 0; i < 256; ++i) {
    if (i % 4 == 0) {
      std::string b(8, '\0');
      b[0] = static_cast<char>(0xF0 + i % 16);
      b[1] = static_cast<char>(i);
      keys.push_back(b);
    } else {
      keys.push_back("phase/" + std::to_string(i) + std::string(i % 13, '.'));
    }
  }
  std::uint64_t id = 0;
  const double thresholds[] = {0.0, 0.002, 1.0};
  for (int phase = 0; phase < 9 && !HasFailure(); ++phase) {
    const double threshold = thresholds[phase % 3];
    ASSERT_TRUE(kv_->router().set_threshold(threshold).ok());
    const std::size_t first = (phase * 40) % keys.size();
    for (int i = 0; i < 1500 && !HasFailure(); ++i) {
      const std::size_t k =
          rng() % 100 < 85 ? (first + rng() % 32) % keys.size() : rng() % keys.size();  // 32 popular keys
      const unsigned r = rng() % 100;
      if (r < 45) {
        get(keys[k]);
      } else if (r < 85) {
        ++id;
        const std::size_t n = id % 5 == 0 ? 9 + id % 200 : id % 9;
        std::string v(n, static_cast<char>(id));
        if (n >= 8) std::memcpy(v.data(), &id, 8);
        put(keys[k], v);
      } else {
        del(keys[k]);
      }
    }
    const KvStats before = kv_->stats();
    settle();
    const KvStats after = kv_->stats();
    if (learned()) {
      if (GetParam().auto_switch)
        EXPECT_GE(after.model_switches, before.model_switches + 1);
      else
        EXPECT_EQ(after.model_switches, before.model_switches + 1);
      if (threshold >= 1.0) {
        EXPECT_EQ(after.hot_bins, 0u) << "threshold 1 and bins still hot";
        EXPECT_EQ(after.hot_entries, 0u) << "keys no longer hot were not evicted";
      } else {
        EXPECT_GT(after.hot_bins, 0u) << "phase " << phase << " made no bin hot at threshold " << threshold;
      }
    }
    verify_all(("after the switch ending phase " + std::to_string(phase)).c_str());
  }
}

TEST_P(KvApi, StatisticsMove) {
  for (int i = 0; i < 64; ++i) put("s/" + std::to_string(i), "a value of 9 bytes or more: " + std::to_string(i));
  for (int i = 0; i < 64; ++i) get("s/" + std::to_string(i));
  KvStats s = kv_->stats();
  EXPECT_EQ(s.store_backend, duet::kvtest::expected_backend());
  EXPECT_FALSE(s.router_model.empty());
  EXPECT_GT(s.memory_bytes, 0u);
  switch (GetParam().mode) {
    case RouterMode::kAllHot:
      EXPECT_GT(s.hot_requests, 0u);
      break;
    case RouterMode::kAllCold:
      EXPECT_GT(s.cold_requests, 0u);
      EXPECT_EQ(s.hot_requests, 0u);
      EXPECT_GT(s.batches, 0u);
      EXPECT_GE(s.batched_requests, s.batches);
      break;
    case RouterMode::kLearned: {
      // Threshold 0: every key just used turns hot at the switch and is answered hot afterwards.
      settle();
      const KvStats a = kv_->stats();
      EXPECT_GE(a.model_switches, s.model_switches + 1);
      EXPECT_GT(a.hot_bins, 0u);
      for (int i = 0; i < 64; ++i) get("s/" + std::to_string(i));
      const KvStats b = kv_->stats();
      EXPECT_GT(b.hot_requests, a.hot_requests);
      // Threshold 1: nothing is hot, hot entries are evicted, every request goes cold.
      ASSERT_TRUE(kv_->router().set_threshold(1.0).ok());
      settle();
      const KvStats c = kv_->stats();
      EXPECT_EQ(c.hot_bins, 0u);
      EXPECT_EQ(c.hot_entries, 0u);
      for (int i = 0; i < 64; ++i) get("s/" + std::to_string(i));
      const KvStats d = kv_->stats();
      EXPECT_EQ(d.hot_requests, c.hot_requests);
      EXPECT_GE(d.cold_requests, c.cold_requests + 64);
      break;
    }
  }
  verify_all("at the end");
}

const ModeCase kModes[] = {
    {"learned", RouterMode::kLearned, false},
    {"learned_auto_switch", RouterMode::kLearned, true},
    {"all_hot", RouterMode::kAllHot, false},
    {"all_cold", RouterMode::kAllCold, false},
};

INSTANTIATE_TEST_SUITE_P(Router, KvApi, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- The Store: keyspaces, devices, names, configuration -------------------------------------

TEST(KvStore, KeyspacesAreNamedAndIndependent) {
  std::unique_ptr<Store> store;
  ASSERT_TRUE(duet::kvtest::open_store(duet::kvtest::test_config(), &store));
  EXPECT_TRUE(store->keyspaces().empty());
  std::shared_ptr<KvSpace> a;
  std::shared_ptr<KvSpace> b;
  ASSERT_TRUE(store->create_kv("alpha", &a).ok());
  ASSERT_TRUE(store->create_kv("beta", &b).ok());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(a->name(), "alpha");
  EXPECT_EQ(b->name(), "beta");
  std::shared_ptr<KvSpace> dup;
  EXPECT_EQ(store->create_kv("alpha", &dup).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->create_kv("", &dup).code(), StatusCode::kInvalidArgument);
  std::shared_ptr<KvSpace> found;
  ASSERT_TRUE(store->kv("beta", &found).ok());
  EXPECT_EQ(found, b);
  EXPECT_EQ(store->kv("missing", &found).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->kv("", &found).code(), StatusCode::kNotFound);
  EXPECT_EQ(store->keyspaces(), (std::vector<std::string>{"alpha", "beta"}));
  // Same key, different keyspaces.
  ASSERT_TRUE(a->put("k", "in alpha").ok());
  ASSERT_TRUE(b->put("k", "in beta").ok());
  std::string v;
  bool f = false;
  ASSERT_TRUE(a->get("k", &v, &f).ok());
  EXPECT_TRUE(f);
  EXPECT_EQ(v, "in alpha");
  ASSERT_TRUE(b->del("k").ok());
  ASSERT_TRUE(a->get("k", &v, &f).ok());
  EXPECT_TRUE(f);
  ASSERT_TRUE(b->get("k", &v, &f).ok());
  EXPECT_FALSE(f);
  EXPECT_FALSE(store->device_description().empty());
}

TEST(KvStore, GpuChoiceWithoutAGpuIsUnavailable) {
  StoreConfig c = duet::kvtest::test_config();
  c.device = DeviceChoice::kGpu;
  std::unique_ptr<Store> store;
  const Status s = Store::open(c, &store);
  if (duet::gpu::device().present) {
    ASSERT_TRUE(s.ok()) << s.to_string();
    std::shared_ptr<KvSpace> kv;
    ASSERT_TRUE(store->create_kv("g", &kv).ok());
    EXPECT_EQ(kv->stats().store_backend, "gpu");
  } else {
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.to_string();
  }
}

TEST(KvStore, CpuChoiceAlwaysOpensTheCpuTwin) {
  StoreConfig c = duet::kvtest::test_config();
  c.device = DeviceChoice::kCpu;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(duet::kvtest::open_store(c, &store));
  std::shared_ptr<KvSpace> kv;
  ASSERT_TRUE(store->create_kv("c", &kv).ok());
  EXPECT_EQ(kv->stats().store_backend, "cpu");
  EXPECT_EQ(store->config().device, DeviceChoice::kCpu);
}

TEST(KvStore, ParsesDeviceAndRouterNames) {
  DeviceChoice d = DeviceChoice::kCpu;
  ASSERT_TRUE(duet::parse_device_choice("auto", &d).ok());
  EXPECT_EQ(d, DeviceChoice::kAuto);
  ASSERT_TRUE(duet::parse_device_choice("gpu", &d).ok());
  EXPECT_EQ(d, DeviceChoice::kGpu);
  ASSERT_TRUE(duet::parse_device_choice("cpu", &d).ok());
  EXPECT_EQ(d, DeviceChoice::kCpu);
  EXPECT_EQ(duet::parse_device_choice("tpu", &d).code(), StatusCode::kInvalidArgument);
  for (DeviceChoice x : {DeviceChoice::kAuto, DeviceChoice::kCpu, DeviceChoice::kGpu}) {
    DeviceChoice y;
    ASSERT_TRUE(duet::parse_device_choice(duet::device_choice_name(x), &y).ok());
    EXPECT_EQ(x, y);
  }
  RouterMode m = RouterMode::kAllHot;
  ASSERT_TRUE(duet::parse_router_mode("learned", &m).ok());
  EXPECT_EQ(m, RouterMode::kLearned);
  ASSERT_TRUE(duet::parse_router_mode("all-cold", &m).ok());
  EXPECT_EQ(m, RouterMode::kAllCold);
  ASSERT_TRUE(duet::parse_router_mode("kvc", &m).ok());
  EXPECT_EQ(m, RouterMode::kAllHot);
  ASSERT_TRUE(duet::parse_router_mode("kvg", &m).ok());
  EXPECT_EQ(m, RouterMode::kAllCold);
  ASSERT_TRUE(duet::parse_router_mode("all-hot", &m).ok());
  EXPECT_EQ(m, RouterMode::kAllHot);
  EXPECT_EQ(duet::parse_router_mode("random", &m).code(), StatusCode::kInvalidArgument);
  for (RouterMode x : {RouterMode::kLearned, RouterMode::kAllCold, RouterMode::kAllHot}) {
    RouterMode y;
    ASSERT_TRUE(duet::parse_router_mode(duet::router_mode_name(x), &y).ok());
    EXPECT_EQ(x, y);
  }
}

TEST(KvStore, BadConfigurationIsRejectedNamingTheField) {
  StoreConfig c = duet::kvtest::test_config();
  c.router.bins = 0;
  std::unique_ptr<Store> store;
  const Status s = Store::open(c, &store);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find("bins"), std::string::npos) << s.to_string();
}

}  // namespace
