// KvSpace::size(), KvSpace::scan(), KvSpace::checkpoint() and Store::drop() on the CPU twin,
// in every router mode. size() is checked against a reference count after single requests and
// after batches with failed requests; a full scan (cursor 0 until the cursor is 0 again) must
// return exactly the keys that exist, for every key encoding (inline 0..7 bytes, 8 bytes read
// as a word, 8 bytes with a first byte >= 0xF0 and long keys through the key dictionary,
// binary keys with NUL bytes), with count 1, 10 and 1000, and without duplicates when nothing
// changes meanwhile. Under concurrent writers of transient keys, every scan must still return
// every key of a set that exists throughout (Redis SCAN's guarantee). In the all-hot mode every
// write lives in the Hot Cache until a replay, which is what scan's checkpoint at cursor 0 does.
//
// The stores open with DeviceChoice::kCpu whatever DUET_TEST_DEVICE says.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "kv/kv_test_util.hpp"

using namespace std::string_literals;
using duet::DeviceChoice;
using duet::KvPath;
using duet::KvRequest;
using duet::KvRouterControl;
using duet::KvSpace;
using duet::KvTrace;
using duet::RouterMode;
using duet::Status;
using duet::StatusCode;
using duet::Store;
using duet::StoreConfig;
using duet::kvtest::printable;

namespace {

struct ModeCase {
  const char* name;
  RouterMode mode;
  bool auto_switch;
};

void PrintTo(const ModeCase& m, std::ostream* os) { *os << m.name; }

/// Keys of every encoding: inline (0..7 bytes), 8-byte words (first byte < 0xF0), dictionary
/// keys (8 bytes with a first byte >= 0xF0, 9 bytes and longer, up to 1000), NUL bytes.
std::vector<std::string> shaped_keys() {
  std::vector<std::string> k;
  for (int n = 0; n <= 7; ++n) k.push_back("ABCDEFG"s.substr(0, n));
  k.push_back("abcdefgh");
  k.push_back(std::string(8, '\0'));
  k.push_back("\x01\0\0\0\0\0\0\0"s);
  k.push_back("\0\0\0\0\0\0\0\x01"s);
  for (int b : {0x00, 0x7F, 0x80, 0xEF, 0xF0, 0xF1, 0xF7, 0xF8, 0xFE, 0xFF}) {
    std::string s = "\x01" "2345678"s;
    s[0] = static_cast<char>(b);
    k.push_back(s);
  }
  k.push_back(std::string(8, '\xff'));
  k.push_back("\xf0"s + std::string(7, '\0'));
  k.push_back("abcdefghi");
  k.push_back("\xf5"s + "1234567"s + "8"s);
  for (std::size_t n : {16u, 63u, 64u, 65u, 255u, 999u, 1000u}) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 23);
    k.push_back(s);
  }
  std::string near = k.back();
  near.back() = '#';  // differs from the 1000-byte key in its last byte only
  k.push_back(near);
  // NUL bytes alone and inside keys, in each encoding.
  for (int n : {1, 2, 7, 9, 16}) k.push_back(std::string(n, '\0'));
  k.push_back("a\0b"s);
  k.push_back("\0a"s);
  k.push_back("a\0"s);
  k.push_back("abc\0"s);
  k.push_back("abc\0\0\0\0\0"s);
  k.push_back("abc\0\0\0\0\0\0"s);
  k.push_back("long key with a \0 NUL byte in the middle of it"s);
  return k;
}

std::string set_difference_text(const std::multiset<std::string>& want, const std::multiset<std::string>& got) {
  std::string out;
  int shown = 0;
  for (const auto& k : want)
    if (!got.count(k) && shown++ < 8) out += " missing " + printable(k) + ";";
  for (const auto& k : got)
    if (!want.count(k) && shown++ < 8) out += " unexpected " + printable(k) + ";";
  for (const auto& k : std::set<std::string>(got.begin(), got.end()))
    if (got.count(k) > 1 && shown++ < 8) out += " duplicated " + printable(k) + ";";
  return out;
}

class KvScan : public ::testing::TestWithParam<ModeCase> {
 protected:
  StoreConfig config() const {
    StoreConfig c;
    c.device = DeviceChoice::kCpu;
    c.expected_keys = 1u << 14;
    c.hot_cache_entries = 1u << 12;
    c.router.mode = GetParam().mode;
    // As in kv_api_test: the learned router samples every request and calls every sampled bin
    // hot, so a switch makes the touched keys hot.
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
    ASSERT_TRUE(duet::kvtest::open_store(c, &store_));
    const Status s = store_->create_kv("test", &kv_);
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_NE(kv_, nullptr);
  }

  void SetUp() override { reopen(config()); }

  void settle() {
    const Status s = kv_->router().switch_model();
    ASSERT_TRUE(s.ok()) << "switch_model: " << s.to_string();
  }

  void put(std::string_view k, std::string_view v) {
    const Status s = kv_->put(k, v);
    ASSERT_TRUE(s.ok()) << "put " << printable(k) << ": " << s.to_string();
  }
  void del(std::string_view k) {
    const Status s = kv_->del(k);
    ASSERT_TRUE(s.ok()) << "del " << printable(k) << ": " << s.to_string();
  }

  /// One full iteration (cursor 0 until the cursor is 0 again); every key returned, in order.
  static void scan_all(KvSpace* kv, std::size_t count, std::vector<std::string>* out, std::size_t* calls = nullptr) {
    out->clear();
    std::uint64_t cursor = 0;
    std::size_t n = 0;
    do {
      std::uint64_t next = 12345;
      const Status s = kv->scan(cursor, count, out, &next);
      ASSERT_TRUE(s.ok()) << "scan(" << cursor << ", " << count << "): " << s.to_string();
      cursor = next;
      ASSERT_LT(++n, 1000000u) << "the scan does not end";
    } while (cursor != 0);
    if (calls) *calls = n;
  }

  /// A full scan returns exactly `want`, each key once.
  void expect_scan_is(const std::set<std::string>& want, std::size_t count, const char* where) {
    SCOPED_TRACE(std::string(where) + ", count " + std::to_string(count));
    std::vector<std::string> got;
    scan_all(kv_.get(), count, &got);
    const std::multiset<std::string> g(got.begin(), got.end());
    const std::multiset<std::string> w(want.begin(), want.end());
    EXPECT_EQ(got.size(), want.size()) << set_difference_text(w, g);
    EXPECT_TRUE(g == w) << set_difference_text(w, g);
  }

  std::unique_ptr<Store> store_;
  std::shared_ptr<KvSpace> kv_;
};

// ---- size() ------------------------------------------------------------------------------------

TEST_P(KvScan, SizeIsExactAfterPutsOverwritesAndDeletes) {
  EXPECT_EQ(kv_->size(), 0u);
  const auto keys = shaped_keys();
  for (const auto& k : keys) put(k, "v1");
  EXPECT_EQ(kv_->size(), keys.size()) << "after one put per key";
  for (std::size_t i = 0; i < keys.size(); i += 2) put(keys[i], std::string(100, 'o'));  // overwrites
  EXPECT_EQ(kv_->size(), keys.size()) << "overwrites must not count";
  settle();
  EXPECT_EQ(kv_->size(), keys.size()) << "a model switch must not change the count";
  std::size_t live = keys.size();
  for (std::size_t i = 0; i < keys.size(); i += 3, --live) del(keys[i]);
  EXPECT_EQ(kv_->size(), live) << "after deletes";
  for (std::size_t i = 0; i < keys.size(); i += 3) del(keys[i]);  // already absent
  del("never written");
  del(std::string(500, 'n'));  // a long key the dictionary never saw
  EXPECT_EQ(kv_->size(), live) << "deletes of absent keys must not count";
  put(keys[0], "back");
  ++live;
  EXPECT_EQ(kv_->size(), live) << "a deleted key written again counts again";
  settle();
  for (const auto& k : keys) del(k);
  EXPECT_EQ(kv_->size(), 0u) << "after deleting everything";
}

TEST_P(KvScan, SizeCountsOnlyTheSucceededRequestsOfABatch) {
  StoreConfig c = config();
  c.limits.max_key_bytes = 16;
  c.limits.max_value_bytes = 64;
  ASSERT_NO_FATAL_FAILURE(reopen(c));
  put("existing", "x");
  ASSERT_EQ(kv_->size(), 1u);
  const std::string key16(16, 'k'), key17(17, 'k'), val64(64, 'v'), val65(65, 'v');
  std::vector<KvRequest> b(9);
  auto set = [&](std::size_t i, KvRequest::Op op, std::string_view k, std::string_view v = {}) {
    b[i].op = op;
    b[i].key = k;
    b[i].value = v;
  };
  set(0, KvRequest::Op::kPut, "fresh", "1");        // +1
  set(1, KvRequest::Op::kPut, "too-big", val65);     // kTooLarge: must not count
  set(2, KvRequest::Op::kPut, key17, "x");           // kTooLarge key: must not count
  set(3, KvRequest::Op::kPut, key16, val64);         // +1 (dictionary key)
  set(4, KvRequest::Op::kPut, "existing", "y");      // overwrite: 0
  set(5, KvRequest::Op::kDelete, "absent");          // 0
  set(6, KvRequest::Op::kDelete, key17);             // kTooLarge: 0
  set(7, KvRequest::Op::kPut, "existing", val65);    // kTooLarge overwrite: 0
  set(8, KvRequest::Op::kGet, "fresh");              // 0
  const Status s = kv_->execute(b);
  EXPECT_EQ(s.code(), StatusCode::kTooLarge) << s.to_string();
  EXPECT_EQ(b[1].status.code(), StatusCode::kTooLarge);
  EXPECT_EQ(b[2].status.code(), StatusCode::kTooLarge);
  EXPECT_EQ(b[6].status.code(), StatusCode::kTooLarge);
  EXPECT_EQ(b[7].status.code(), StatusCode::kTooLarge);
  EXPECT_EQ(kv_->size(), 3u) << "existing, fresh and the 16-byte key";

  // Put and delete of one key in one batch: whichever order they took, size() agrees with
  // whether the key exists afterwards.
  std::vector<KvRequest> pd(2);
  pd[0].op = KvRequest::Op::kPut;
  pd[0].key = "flip";
  pd[0].value = "v";
  pd[1].op = KvRequest::Op::kDelete;
  pd[1].key = "flip";
  ASSERT_TRUE(kv_->execute(pd).ok());
  std::string v;
  bool found = false;
  ASSERT_TRUE(kv_->get("flip", &v, &found).ok());
  EXPECT_EQ(kv_->size(), 3u + (found ? 1u : 0u)) << "flip exists: " << found;

  // Two puts of one new key in one batch count once.
  std::vector<KvRequest> pp(2);
  for (auto& r : pp) {
    r.op = KvRequest::Op::kPut;
    r.key = "twice";
    r.value = "t";
  }
  ASSERT_TRUE(kv_->execute(pp).ok());
  EXPECT_EQ(kv_->size(), 4u + (found ? 1u : 0u));
  std::set<std::string> want = {"existing", "fresh", key16, "twice"};
  if (found) want.insert("flip");
  expect_scan_is(want, 10, "after the batches");
}

TEST_P(KvScan, SizeDoesNotCountPutsRefusedByTheMemoryBudget) {
  StoreConfig c = config();
  c.memory_budget_bytes = 64 * 1024;
  ASSERT_NO_FATAL_FAILURE(reopen(c));
  const std::string big(10 * 1024, 'b');  // a value block of about 10 KiB
  std::uint64_t ok = 0, refused = 0;
  for (int i = 0; i < 12; ++i) {
    const Status s = kv_->put("big/" + std::to_string(i), big);
    if (s.ok()) ++ok;
    else {
      EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.to_string();
      ++refused;
    }
  }
  EXPECT_GT(refused, 0u) << "the budget should refuse some of 120 KiB of values";
  EXPECT_EQ(kv_->size(), ok);
  std::vector<std::string> got;
  scan_all(kv_.get(), 10, &got);
  EXPECT_EQ(got.size(), ok);
}

// ---- scan() -----------------------------------------------------------------------------------

TEST_P(KvScan, EmptyKeyspaceScanEndsWithCursorZero) {
  for (std::size_t count : {1u, 10u, 1000u}) {
    std::vector<std::string> keys;
    std::uint64_t next = 99;
    ASSERT_TRUE(kv_->scan(0, count, &keys, &next).ok());
    EXPECT_EQ(next, 0u) << "count " << count;
    EXPECT_TRUE(keys.empty()) << "count " << count;
  }
  // Emptied again after writes: the iteration still ends and finds nothing.
  for (int i = 0; i < 100; ++i) put("gone/" + std::to_string(i), "v");
  for (int i = 0; i < 100; ++i) del("gone/" + std::to_string(i));
  EXPECT_EQ(kv_->size(), 0u);
  expect_scan_is({}, 10, "after deleting every key");
}

TEST_P(KvScan, FullScanReturnsExactlyTheKeysOfEveryEncoding) {
  const auto shapes = shaped_keys();
  std::set<std::string> want(shapes.begin(), shapes.end());
  ASSERT_EQ(want.size(), shapes.size()) << "the test's keys repeat";
  for (const auto& k : shapes) put(k, "v");
  for (int i = 0; i < 300; ++i) {  // enough keys that count 1 and 10 need many calls
    const std::string k = i % 2 ? "bulk/" + std::to_string(i) : "bulk/long/" + std::string(40, 'x') + std::to_string(i);
    put(k, std::to_string(i));
    want.insert(k);
  }
  ASSERT_EQ(kv_->size(), want.size());
  for (std::size_t count : {1u, 10u, 1000u}) expect_scan_is(want, count, "after writes");
  settle();
  for (std::size_t count : {1u, 10u, 1000u}) expect_scan_is(want, count, "after a model switch");
}

TEST_P(KvScan, SmallerCountsTakeMoreCallsButReturnTheSameKeys) {
  std::set<std::string> want;
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "key:" + std::to_string(i);
    put(k, "v");
    want.insert(k);
  }
  std::size_t calls1 = 0, calls1000 = 0;
  std::vector<std::string> got1, got1000;
  scan_all(kv_.get(), 1, &got1, &calls1);
  scan_all(kv_.get(), 1000, &got1000, &calls1000);
  EXPECT_EQ(std::set<std::string>(got1.begin(), got1.end()), want);
  EXPECT_EQ(std::set<std::string>(got1000.begin(), got1000.end()), want);
  EXPECT_EQ(got1.size(), want.size());
  EXPECT_EQ(got1000.size(), want.size());
  EXPECT_GT(calls1, calls1000) << "count 1 should need more calls than count 1000";
  EXPECT_GE(calls1000, 1u);
}

TEST_P(KvScan, KeysDeletedBeforeTheScanDoNotAppear) {
  const auto shapes = shaped_keys();
  std::set<std::string> want;
  for (std::size_t i = 0; i < shapes.size(); ++i) put(shapes[i], "v");
  for (int i = 0; i < 200; ++i) put("d/" + std::to_string(i), "v");
  settle();  // learned: the keys are hot now; their deletes go through the Hot Cache
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i % 2) del(shapes[i]);
    else want.insert(shapes[i]);
  }
  for (int i = 0; i < 200; ++i) {
    if (i % 3) del("d/" + std::to_string(i));
    else want.insert("d/" + std::to_string(i));
  }
  EXPECT_EQ(kv_->size(), want.size());
  for (std::size_t count : {1u, 10u, 1000u}) expect_scan_is(want, count, "after deletes");
  // Deleted and written again before the scan: present once.
  put(shapes[1], "again");
  want.insert(shapes[1]);
  expect_scan_is(want, 10, "after a rewrite");
}

TEST_P(KvScan, ScanCoversOverflowSlabsAndSlabsFreedByDeletes) {
  StoreConfig c = config();
  c.expected_keys = 64;  // few buckets: most keys live in overflow slabs from the pool
  c.hot_cache_entries = 64;
  ASSERT_NO_FATAL_FAILURE(reopen(c));
  std::set<std::string> want;
  for (int i = 0; i < 3000; ++i) {
    const std::string k = i % 5 == 0 ? "overflow/long/" + std::string(30, 'y') + std::to_string(i)
                                     : "o/" + std::to_string(i);
    put(k, i % 7 ? "v" : std::string(40, 'v'));
    want.insert(k);
  }
  for (std::size_t count : {1u, 10u, 1000u}) expect_scan_is(want, count, "after filling");
  // Delete two keys in three: overflow slabs empty out and go back to the pool.
  int i = 0;
  for (auto it = want.begin(); it != want.end(); ++i) {
    if (i % 3) {
      del(*it);
      it = want.erase(it);
    } else {
      ++it;
    }
  }
  EXPECT_EQ(kv_->size(), want.size());
  for (std::size_t count : {1u, 10u, 1000u}) expect_scan_is(want, count, "after deleting two thirds");
}

TEST_P(KvScan, EveryStableKeyIsReturnedWhileWritersChurnOtherKeys) {
  const auto shapes = shaped_keys();
  std::set<std::string> stable(shapes.begin(), shapes.end());
  for (int i = 0; i < 400; ++i) stable.insert(i % 4 ? "stable/" + std::to_string(i) : "stable/long/" + std::string(20, 's') + std::to_string(i));
  for (const auto& k : stable) put(k, "stable");
  ASSERT_FALSE(HasFailure());

  constexpr int kWriters = 2;
  constexpr int kSlots = 256;  // transient keys per writer
  auto transient = [](int w, int slot) {
    // Short keys, 8-byte keys and dictionary keys, so every encoding churns.
    switch (slot % 3) {
      case 0: return "t" + std::to_string(w) + "/" + std::to_string(slot);
      case 1: {
        std::string k = "T" + std::to_string(w) + "/" + std::to_string(slot);
        k.resize(8, '_');
        return k;
      }
      default: return "transient/long/" + std::to_string(w) + "/" + std::string(50, 'z') + std::to_string(slot);
    }
  };
  std::set<std::string> all_transient;
  for (int w = 0; w < kWriters; ++w)
    for (int s = 0; s < kSlots; ++s) all_transient.insert(transient(w, s));
  for (const auto& k : all_transient) ASSERT_FALSE(stable.count(k)) << "test keys overlap";

  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> ops{0};
  std::atomic<int> writer_errors{0};
  std::vector<std::vector<char>> present(kWriters, std::vector<char>(kSlots, 0));
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      unsigned x = 12345u + static_cast<unsigned>(w);
      std::vector<KvRequest> batch(4);
      std::vector<std::string> names(4);
      int slots[4];
      while (!stop.load(std::memory_order_relaxed)) {
        // A batch of four: puts and deletes of this writer's own keys.
        for (int j = 0; j < 4; ++j) {
          x = x * 1103515245u + 12345u;
          slots[j] = static_cast<int>((x >> 8) % kSlots);
          names[j] = transient(w, slots[j]);
          batch[j] = KvRequest();
          batch[j].key = names[j];
          if (present[w][slots[j]]) {
            batch[j].op = KvRequest::Op::kDelete;
          } else {
            batch[j].op = KvRequest::Op::kPut;
            batch[j].value = (x & 1) ? std::string_view("small") : std::string_view("a value longer than eight bytes");
          }
        }
        const Status s = kv_->execute(batch);
        if (!s.ok()) writer_errors.fetch_add(1);
        // A slot may appear twice in a batch and requests on one key take effect in some
        // order: read back each slot's state (only this writer writes these keys).
        for (int j = 0; j < 4; ++j) {
          std::string v;
          bool found = false;
          if (!kv_->get(names[j], &v, &found).ok()) writer_errors.fetch_add(1);
          present[w][slots[j]] = found ? 1 : 0;
        }
        ops.fetch_add(4, std::memory_order_relaxed);
      }
    });
  }
  // Start scanning once the writers are under way (a progress counter, not a sleep).
  while (ops.load() < 200) std::this_thread::yield();

  constexpr int kIterations = 24;
  for (int it = 0; it < kIterations && !HasFailure(); ++it) {
    const std::size_t count = it % 3 == 0 ? 1 : it % 3 == 1 ? 10 : 1000;
    const std::uint64_t before = ops.load();
    std::vector<std::string> got;
    scan_all(kv_.get(), count, &got);
    const std::set<std::string> g(got.begin(), got.end());
    int missing = 0;
    for (const auto& k : stable) {
      if (!g.count(k)) {
        ADD_FAILURE() << "iteration " << it << " (count " << count << ") missed stable key " << printable(k);
        if (++missing >= 5) break;
      }
    }
    for (const auto& k : g)
      EXPECT_TRUE(stable.count(k) || all_transient.count(k))
          << "iteration " << it << " returned a key nobody wrote: " << printable(k);
    // Writers keep going until the scan ends: make sure this iteration overlapped writes.
    while (ops.load() < before + 8) std::this_thread::yield();
  }
  stop.store(true);
  for (auto& t : writers) t.join();
  EXPECT_EQ(writer_errors.load(), 0);
  const std::uint64_t total_ops = ops.load();
  EXPECT_GT(total_ops, 200u);

  // Quiescent now: size() and a full scan agree exactly with what the writers left.
  std::set<std::string> want = stable;
  for (int w = 0; w < kWriters; ++w)
    for (int s = 0; s < kSlots; ++s)
      if (present[w][s]) want.insert(transient(w, s));
  EXPECT_EQ(kv_->size(), want.size());
  expect_scan_is(want, 10, "after the writers stopped");
}

// ---- checkpoint() -----------------------------------------------------------------------------

TEST_P(KvScan, CheckpointKeepsContentsAndWritesPendingUpdatesOnce) {
  std::map<std::string, std::string> model;
  for (int i = 0; i < 100; ++i) {
    const std::string k = "cp/" + std::to_string(i), v = std::string(i % 2 ? 3 : 30, 'a' + i % 26);
    put(k, v);
    model[k] = v;
  }
  settle();
  for (int i = 0; i < 100; i += 2) {  // hot updates in learned and all-hot modes
    const std::string k = "cp/" + std::to_string(i);
    if (i % 4 == 0) {
      del(k);
      model.erase(k);
    } else {
      put(k, "new");
      model[k] = "new";
    }
  }
  const std::uint64_t before = kv_->stats().batched_requests;
  ASSERT_TRUE(kv_->checkpoint().ok());
  const std::uint64_t after_first = kv_->stats().batched_requests;
  ASSERT_TRUE(kv_->checkpoint().ok());
  const std::uint64_t after_second = kv_->stats().batched_requests;
  if (GetParam().mode == RouterMode::kAllHot) {
    EXPECT_GE(after_first - before, 50u) << "the 50 updates live in the Hot Cache until the checkpoint";
  }
  EXPECT_EQ(after_second, after_first) << "a second checkpoint has nothing left to write";
  EXPECT_EQ(kv_->size(), model.size());
  for (const auto& [k, v] : model) {
    std::string got;
    bool found = false;
    ASSERT_TRUE(kv_->get(k, &got, &found).ok());
    EXPECT_TRUE(found) << k;
    EXPECT_EQ(got, v) << k;
  }
  for (int i = 0; i < 100; i += 4) {
    bool found = true;
    std::string got;
    ASSERT_TRUE(kv_->get("cp/" + std::to_string(i), &got, &found).ok());
    EXPECT_FALSE(found) << "cp/" << i << " was deleted";
  }
  std::set<std::string> want;
  for (const auto& [k, v] : model) want.insert(k);
  expect_scan_is(want, 10, "after checkpoints");
}

// ---- drop() --------------------------------------------------------------------------------

TEST_P(KvScan, DropThenCreateWithTheSameNameGivesAnEmptyKeyspace) {
  std::shared_ptr<KvSpace> other;
  ASSERT_TRUE(store_->create_kv("other", &other).ok());
  ASSERT_TRUE(other->put("kept", "yes").ok());
  const auto shapes = shaped_keys();
  for (const auto& k : shapes) put(k, std::string(100, 'v'));  // value blocks, long keys
  settle();
  for (std::size_t i = 0; i < shapes.size(); i += 2) put(shapes[i], std::string(50, 'w'));  // dirty in the cache
  ASSERT_EQ(kv_->size(), shapes.size());

  ASSERT_TRUE(store_->drop("test").ok());
  kv_ = nullptr;
  std::shared_ptr<KvSpace> found;
  EXPECT_EQ(store_->kv("test", &found).code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->keyspaces(), (std::vector<std::string>{"other"}));
  EXPECT_EQ(store_->drop("test").code(), StatusCode::kNotFound) << "dropped twice";

  ASSERT_TRUE(store_->create_kv("test", &kv_).ok());
  EXPECT_EQ(store_->keyspaces(), (std::vector<std::string>{"other", "test"}));
  EXPECT_EQ(kv_->size(), 0u);
  expect_scan_is({}, 10, "in the re-created keyspace");
  for (const auto& k : shapes) {
    std::string v;
    bool f = true;
    ASSERT_TRUE(kv_->get(k, &v, &f).ok());
    EXPECT_FALSE(f) << printable(k) << " survived drop";
  }
  put(shapes.back(), "fresh");
  EXPECT_EQ(kv_->size(), 1u);
  expect_scan_is({shapes.back()}, 10, "after one write");
  // The other keyspace is untouched.
  std::string v;
  bool f = false;
  ASSERT_TRUE(other->get("kept", &v, &f).ok());
  EXPECT_TRUE(f);
  EXPECT_EQ(v, "yes");
  EXPECT_EQ(other->size(), 1u);
}

TEST_P(KvScan, DropOfAnUnknownNameIsNotFound) {
  EXPECT_EQ(store_->drop("missing").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->drop("").code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->drop("tes").code(), StatusCode::kNotFound) << "a prefix of an existing name";
  EXPECT_EQ(store_->keyspaces(), (std::vector<std::string>{"test"}));
}

TEST_P(KvScan, DropReturnsTheValueBytesToTheMemoryBudget) {
  ASSERT_EQ(kv_->stats().memory_bytes, 0u);
  for (int i = 0; i < 50; ++i) put("k" + std::to_string(i), std::string(200, 'v'));  // short keys, value blocks
  settle();
  for (int i = 0; i < 50; i += 2) put("n" + std::to_string(i), std::string(300, 'w'));  // maybe only in the cache
  EXPECT_GT(kv_->stats().memory_bytes, 50u * 200u);
  ASSERT_TRUE(store_->drop("test").ok());
  ASSERT_TRUE(store_->create_kv("test", &kv_).ok());
  EXPECT_EQ(kv_->stats().memory_bytes, 0u) << "bytes still charged after the only keyspace was dropped";
}

TEST_P(KvScan, DropReturnsTheKeyDictionaryBytesToTheMemoryBudget) {
  ASSERT_EQ(kv_->stats().memory_bytes, 0u);
  // Long keys (through the key dictionary) with inline values: only the dictionary is charged.
  for (int i = 0; i < 50; ++i) put("long/" + std::string(95, 'k') + std::to_string(i), "v");
  const std::uint64_t charged = kv_->stats().memory_bytes;
  EXPECT_GT(charged, 50u * 100u);
  ASSERT_TRUE(store_->drop("test").ok());
  ASSERT_TRUE(store_->create_kv("test", &kv_).ok());
  EXPECT_EQ(kv_->stats().memory_bytes, 0u)
      << "a dropped keyspace's dictionary keys stay charged to the store's budget (" << charged
      << " bytes were charged before the drop)";
}

TEST_P(KvScan, RepeatedDropAndCreateOfLongKeysNeverExhaustsTheBudget) {
  StoreConfig c = config();
  c.memory_budget_bytes = 64 * 1024;
  ASSERT_NO_FATAL_FAILURE(reopen(c));
  // Each round writes about 10 KiB of long keys into an empty keyspace and drops it: the
  // budget (64 KiB) holds one round easily, so no round may be refused.
  for (int round = 0; round < 12 && !HasFailure(); ++round) {
    for (int i = 0; i < 10; ++i) {
      const Status s = kv_->put("round/" + std::string(1000, 'r') + std::to_string(i), "v");
      ASSERT_TRUE(s.ok()) << "round " << round << " key " << i << " in a fresh keyspace: " << s.to_string();
    }
    ASSERT_TRUE(store_->drop("test").ok());
    ASSERT_TRUE(store_->create_kv("test", &kv_).ok());
  }
}

const ModeCase kModes[] = {
    {"learned", RouterMode::kLearned, false},
    {"learned_auto_switch", RouterMode::kLearned, true},
    {"all_hot", RouterMode::kAllHot, false},
    {"all_cold", RouterMode::kAllCold, false},
};

INSTANTIATE_TEST_SUITE_P(Router, KvScan, ::testing::ValuesIn(kModes),
                         [](const auto& info) { return std::string(info.param.name); });

// The default KvSpace (a keyspace that does not count or iterate) answers 0 and kUnavailable.
class BareSpace final : public KvSpace {
 public:
  Status get(std::string_view, std::string*, bool*) override { return Status::Ok(); }
  Status put(std::string_view, std::string_view, std::string*, bool*) override { return Status::Ok(); }
  Status del(std::string_view, std::string*, bool*) override { return Status::Ok(); }
  Status execute(std::span<KvRequest>, std::span<KvTrace>) override { return Status::Ok(); }
  duet::KvStats stats() const override { return {}; }
  KvRouterControl& router() override { return router_; }
  const std::string& name() const override { return name_; }

 private:
  std::string name_ = "bare";
  duet::kvtest::NoRouter router_;
};

TEST(KvScanDefaults, AKeyspaceWithoutIterationAnswersZeroAndUnavailable) {
  BareSpace s;
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.checkpoint().ok());
  std::vector<std::string> keys;
  std::uint64_t next = 7;
  EXPECT_EQ(s.scan(0, 10, &keys, &next).code(), StatusCode::kUnavailable);
  EXPECT_EQ(next, 0u);
  EXPECT_TRUE(keys.empty());
}

}  // namespace
