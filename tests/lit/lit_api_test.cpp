// LIT (CPU): every operation against a reference std::map, forced splits and resizes, bad
// input, paging, and the byte-string key encoding. Single-threaded; the concurrent histories
// are in lit_concurrency_test.cpp.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "index/lit/gpu_lit.hpp"
#include "index/lit/lit.hpp"

namespace duet::lit {
namespace {

using Pairs = std::vector<std::pair<std::uint64_t, std::uint64_t>>;

struct Fixture {
  std::unique_ptr<Map> map;
  std::unique_ptr<Session> s;
  explicit Fixture(const Config& c) {
    Status st = Map::create(c, &map);
    EXPECT_TRUE(st.ok()) << st.message();
    st = map->open_session(&s);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  ~Fixture() { s.reset(); }
};

Pairs reference_range(const std::map<std::uint64_t, std::uint64_t>& ref, std::uint64_t a, std::uint64_t b) {
  Pairs out;
  for (auto it = ref.lower_bound(a); it != ref.end() && it->first <= b; ++it) out.push_back(*it);
  return out;
}

/// Runs `ops` random operations on keys in [lo, lo + span) against a std::map, checking every
/// outcome, with a full range compare every 500 ops and a structural check at the end.
void random_against_reference(const Config& c, std::uint64_t lo, std::uint64_t span, int ops, std::uint32_t seed) {
  Fixture f(c);
  std::map<std::uint64_t, std::uint64_t> ref;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    const std::uint64_t k = lo + rng() % span;
    const std::uint64_t v = rng();
    const int op = static_cast<int>(rng() % 10);
    SCOPED_TRACE("seed " + std::to_string(seed) + " op " + std::to_string(i) + " key " + std::to_string(k));
    if (op < 3) {
      const Result r = f.s->insert(k, v);
      const bool had = ref.count(k) != 0;
      ASSERT_EQ(r, had ? Result::kExists : Result::kOk);
      if (!had) ref[k] = v;
    } else if (op < 5) {
      std::uint64_t prev = 0;
      const Result r = f.s->remove(k, &prev);
      auto it = ref.find(k);
      if (it == ref.end()) {
        ASSERT_EQ(r, Result::kNotFound);
      } else {
        ASSERT_EQ(r, Result::kOk);
        ASSERT_EQ(prev, it->second);
        ref.erase(it);
      }
    } else if (op < 7) {
      std::uint64_t prev = 0;
      bool existed = false;
      ASSERT_EQ(f.s->upsert(k, v, &prev, &existed), Result::kOk);
      auto it = ref.find(k);
      ASSERT_EQ(existed, it != ref.end());
      if (existed) ASSERT_EQ(prev, it->second);
      ref[k] = v;
    } else if (op < 9) {
      std::uint64_t got = 0;
      const Result r = f.s->get(k, &got);
      auto it = ref.find(k);
      if (it == ref.end()) {
        ASSERT_EQ(r, Result::kNotFound);
      } else {
        ASSERT_EQ(r, Result::kOk);
        ASSERT_EQ(got, it->second);
      }
    } else {
      const std::uint64_t len = rng() % 64;
      const std::uint64_t end = k + len;
      Pairs out;
      RangePage page;
      ASSERT_TRUE(f.s->range(k, end, &out, &page).ok());
      ASSERT_EQ(out, reference_range(ref, k, end));
      ASSERT_FALSE(page.more);
    }
    if (i % 500 == 499) {
      Pairs all;
      RangePage page;
      ASSERT_TRUE(f.s->range(0, ~std::uint64_t{0}, &all, &page).ok());
      ASSERT_EQ(all, reference_range(ref, 0, ~std::uint64_t{0}));
    }
  }
  std::uint64_t entries = 0;
  Status st = f.map->check(&entries);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(entries, ref.size());
}

TEST(Lit, EmptyMap) {
  Fixture f(Config{});
  std::uint64_t v = 7;
  EXPECT_EQ(f.s->get(5, &v), Result::kNotFound);
  EXPECT_EQ(v, 7u);
  EXPECT_EQ(f.s->remove(5), Result::kNotFound);
  Pairs out;
  RangePage page;
  ASSERT_TRUE(f.s->range(0, ~std::uint64_t{0}, &out, &page).ok());
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(page.count, 0u);
  EXPECT_FALSE(page.more);
  EXPECT_TRUE(f.map->check(nullptr).ok());
}

TEST(Lit, PointOperations) {
  Fixture f(Config{});
  EXPECT_EQ(f.s->insert(10, 100), Result::kOk);
  EXPECT_EQ(f.s->insert(10, 200), Result::kExists);
  std::uint64_t v = 0;
  EXPECT_EQ(f.s->get(10, &v), Result::kOk);
  EXPECT_EQ(v, 100u);
  std::uint64_t prev = 0;
  bool existed = false;
  EXPECT_EQ(f.s->upsert(10, 300, &prev, &existed), Result::kOk);
  EXPECT_TRUE(existed);
  EXPECT_EQ(prev, 100u);
  EXPECT_EQ(f.s->upsert(11, 400, &prev, &existed), Result::kOk);
  EXPECT_FALSE(existed);
  EXPECT_EQ(f.s->remove(10, &prev), Result::kOk);
  EXPECT_EQ(prev, 300u);
  EXPECT_EQ(f.s->get(10, &v), Result::kNotFound);
  EXPECT_EQ(f.s->insert(10, 500), Result::kOk);  // a removed key can come back
  EXPECT_EQ(f.s->get(10, &v), Result::kOk);
  EXPECT_EQ(v, 500u);
}

TEST(Lit, ExtremeKeys) {
  Fixture f(Config{});
  const std::uint64_t top = ~std::uint64_t{0};
  EXPECT_EQ(f.s->insert(0, 1), Result::kOk);  // shares its key with the first marker
  EXPECT_EQ(f.s->insert(top, 2), Result::kOk);
  EXPECT_EQ(f.s->insert(top - 1, 3), Result::kOk);
  Pairs out;
  RangePage page;
  ASSERT_TRUE(f.s->range(0, top, &out, &page).ok());
  EXPECT_EQ(out, (Pairs{{0, 1}, {top - 1, 3}, {top, 2}}));
  out.clear();
  ASSERT_TRUE(f.s->range(top, top, &out, &page).ok());
  EXPECT_EQ(out, (Pairs{{top, 2}}));
}

TEST(Lit, RandomAgainstReferenceDefaults) { random_against_reference(Config{}, 0, 5000, 20000, 1); }

TEST(Lit, RandomAgainstReferenceForcedSplits) {
  Config c;
  c.buckets = 4;
  c.predicted_min = 0;
  c.predicted_max = 1000;
  c.split_threshold = 3;
  c.resize_levels = 4;
  random_against_reference(c, 0, 3000, 30000, 2);
}

TEST(Lit, RandomAgainstReferenceKeysOutsidePrediction) {
  Config c;
  c.buckets = 8;
  c.predicted_min = 1000;
  c.predicted_max = 2000;
  c.split_threshold = 4;
  c.resize_levels = 3;
  random_against_reference(c, std::uint64_t{1} << 40, 100000, 20000, 3);
  random_against_reference(c, 0, 500, 10000, 4);
}

TEST(Lit, SplitsAndResizesHappenAndKeepOrder) {
  Config c;
  c.buckets = 2;
  c.predicted_min = 0;
  c.predicted_max = 100;
  c.split_threshold = 3;
  c.resize_levels = 3;
  Fixture f(c);
  std::map<std::uint64_t, std::uint64_t> ref;
  std::mt19937_64 rng(5);
  for (int i = 0; i < 20000; ++i) {
    const std::uint64_t k = rng() % 1000000;
    if (f.s->insert(k, k * 3) == Result::kOk) ref[k] = k * 3;
  }
  const Stats st = f.map->stats();
  EXPECT_GT(st.splits, 0u);
  EXPECT_GT(st.resizes, 0u);
  EXPECT_GT(st.root_buckets, 2u);
  std::uint64_t entries = 0;
  Status s = f.map->check(&entries);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(entries, ref.size());
  Pairs all;
  RangePage page;
  ASSERT_TRUE(f.s->range(0, ~std::uint64_t{0}, &all, &page).ok());
  EXPECT_EQ(all, reference_range(ref, 0, ~std::uint64_t{0}));
}

// Load-factor resizes over wide buckets: with the 63-bit prediction and uniform keys (hashes)
// each root bucket spans about 2^63 / n keys, and finding a bucket's least key by stepping
// from an estimate took up to a bucket's width of steps (a resize never ended). Its least key
// is now computed exactly; every resize must finish and every key stay findable.
TEST(Lit, ResizesOverWideBucketsFinish) {
  Config c;
  c.predicted_min = 0;
  c.predicted_max = (std::uint64_t{1} << 63) - 1;
  c.buckets = 4096;
  c.resize_load = 4;
  Fixture f(c);
  std::mt19937_64 rng(9);
  std::vector<std::uint64_t> keys;
  const int n = 60000;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t k = rng() >> 1;
    if (f.s->insert(k, k ^ 1) == Result::kOk) keys.push_back(k);
  }
  const Stats st = f.map->stats();
  EXPECT_GT(st.resizes, 0u);
  EXPECT_GT(st.root_buckets, 4096u);
  for (std::uint64_t k : keys) {
    std::uint64_t v = 0;
    ASSERT_EQ(f.s->get(k, &v), Result::kOk) << k;
    ASSERT_EQ(v, k ^ 1);
  }
  std::uint64_t entries = 0;
  Status s = f.map->check(&entries);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(entries, keys.size());
}

TEST(Lit, ManualSplitAndResize) {
  Config c;
  c.buckets = 4;
  c.predicted_max = 1000;
  c.auto_structure = false;
  Fixture f(c);
  std::map<std::uint64_t, std::uint64_t> ref;
  for (std::uint64_t k = 0; k < 2000; k += 3) {
    ASSERT_EQ(f.s->insert(k, k + 1), Result::kOk);
    ref[k] = k + 1;
  }
  EXPECT_TRUE(f.map->split(10));
  EXPECT_TRUE(f.map->split(10));  // the first sub-bucket of the new level
  EXPECT_TRUE(f.map->split(999999));  // the last bucket, unbounded above
  EXPECT_EQ(f.map->stats().splits, 3u);
  EXPECT_GE(f.map->stats().max_depth, 3u);
  ASSERT_TRUE(f.map->check(nullptr).ok());
  EXPECT_TRUE(f.map->resize(100, 0, 2000));
  EXPECT_EQ(f.map->stats().root_buckets, 100u);
  EXPECT_FALSE(f.map->resize(10, 5, 5));  // empty key range: refused
  Status st = f.map->check(nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  // Markers the old index used and the new one does not are removed once nothing can see
  // the old index: enough operations later (each session maintains every 64 updates).
  for (int round = 0; round < 50; ++round)
    for (std::uint64_t k = 1; k < 2000; k += 3) {
      f.s->upsert(k, k);
      f.s->remove(k);
    }
  EXPECT_GT(f.map->stats().markers_removed, 0u);
  st = f.map->check(nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  Pairs all;
  RangePage page;
  ASSERT_TRUE(f.s->range(0, 5000, &all, &page).ok());
  EXPECT_EQ(all, reference_range(ref, 0, 5000));
}

TEST(Lit, BadInput) {
  Config c;
  c.universe_min = 100;
  c.universe_max = 1000;
  c.predicted_min = 100;
  c.predicted_max = 1000;
  Fixture f(c);
  EXPECT_EQ(f.s->insert(99, 1), Result::kOutOfUniverse);
  EXPECT_EQ(f.s->insert(1001, 1), Result::kOutOfUniverse);
  EXPECT_EQ(f.s->upsert(5, 1), Result::kOutOfUniverse);
  EXPECT_EQ(f.s->remove(5), Result::kOutOfUniverse);
  std::uint64_t v;
  EXPECT_EQ(f.s->get(5000, &v), Result::kOutOfUniverse);
  EXPECT_EQ(f.s->insert(100, 1), Result::kOk);
  EXPECT_EQ(f.s->insert(1000, 2), Result::kOk);
  Pairs out;
  RangePage page;
  Status st = f.s->range(500, 400, &out, &page);  // inverted
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("after"), std::string::npos) << st.message();
  st = f.s->range(50, 400, &out, &page);  // outside the universe
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(f.s->range(500, 500, &out, &page).ok());  // a one-key range with nothing in it
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(f.s->range(100, 1000, nullptr, &page).code(), StatusCode::kInvalidArgument);

  Config bad;  // an inverted prediction (a one-key prediction, min == max, is one bucket)
  bad.predicted_min = 11;
  bad.predicted_max = 10;
  std::unique_ptr<Map> m;
  EXPECT_EQ(Map::create(bad, &m).code(), StatusCode::kInvalidArgument);
  bad = Config{};
  bad.split_threshold = 1;
  EXPECT_EQ(Map::create(bad, &m).code(), StatusCode::kInvalidArgument);
}

// The GPU map's configuration is checked on every machine: each bad field is named, and
// GpuMap::create refuses it with InvalidArgument whether or not a GPU (or the CUDA toolkit) is
// there; a good configuration is refused only for want of a GPU.
TEST(GpuLitConfig, IsCheckedWithOrWithoutAGpu) {
  struct Case {
    const char* field;
    void (*spoil)(GpuConfig&);
  };
  const Case cases[] = {
      {"universe_min", [](GpuConfig& c) { c.universe_min = 10, c.universe_max = 5, c.predicted_min = c.predicted_max = 7; }},
      {"predicted_min", [](GpuConfig& c) { c.predicted_min = 100, c.predicted_max = 99; }},
      {"outside the universe", [](GpuConfig& c) { c.universe_min = 50; }},
      {"outside the universe", [](GpuConfig& c) { c.universe_max = 1000; }},
      {"bucket_width", [](GpuConfig& c) { c.bucket_width = 0; }},
      {"max_range_results", [](GpuConfig& c) { c.max_range_results = 0; }},
  };
  EXPECT_TRUE(check_config(GpuConfig{}).ok());
  for (const Case& k : cases) {
    GpuConfig c;
    k.spoil(c);
    const Status checked = check_config(c);
    EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument) << k.field;
    EXPECT_NE(checked.message().find(k.field), std::string::npos) << checked.message();
    std::unique_ptr<GpuMap> m;
    const Status created = GpuMap::create(c, &m);
    EXPECT_EQ(created.code(), StatusCode::kInvalidArgument) << k.field << ": " << created.to_string();
    EXPECT_FALSE(m);
  }
  GpuConfig one_key;  // predicted_min == predicted_max is a valid one-bucket range here
  one_key.predicted_min = one_key.predicted_max = 5;
  EXPECT_TRUE(check_config(one_key).ok());
  std::unique_ptr<GpuMap> m;
  const Status good = GpuMap::create(GpuConfig{}, &m);
  EXPECT_TRUE(good.ok() || good.code() == StatusCode::kUnavailable) << good.to_string();
  EXPECT_EQ(GpuMap::create(GpuConfig{}, nullptr).code(), StatusCode::kInvalidArgument);
}

TEST(Lit, RangePages) {
  Config c;
  c.max_range_results = 10;
  Fixture f(c);
  for (std::uint64_t k = 0; k < 95; ++k) ASSERT_EQ(f.s->insert(k * 2, k), Result::kOk);
  Pairs all;
  RangePage page;
  std::uint64_t start = 0;
  int pages = 0;
  for (;;) {
    ASSERT_TRUE(f.s->range(start, 1000, &all, &page).ok());
    ++pages;
    ASSERT_LE(page.count, 10u);
    if (!page.more) break;
    ASSERT_EQ(page.count, 10u);
    start = page.resume_key;
  }
  EXPECT_EQ(pages, 10);
  ASSERT_EQ(all.size(), 95u);
  for (std::uint64_t k = 0; k < 95; ++k) EXPECT_EQ(all[k], std::make_pair(k * 2, k));
  // A smaller per-call limit pages sooner; a larger one is capped by the configuration.
  Pairs some;
  ASSERT_TRUE(f.s->range(0, 1000, &some, &page, 3).ok());
  EXPECT_EQ(some.size(), 3u);
  EXPECT_TRUE(page.more);
  EXPECT_EQ(page.resume_key, 6u);
  some.clear();
  ASSERT_TRUE(f.s->range(0, 1000, &some, &page, 1000).ok());
  EXPECT_EQ(some.size(), 10u);
  EXPECT_TRUE(page.more);
  // Exactly the limit left: no further page.
  some.clear();
  ASSERT_TRUE(f.s->range(170, 1000, &some, &page).ok());
  EXPECT_EQ(some.size(), 10u);
  EXPECT_FALSE(page.more);
}

TEST(Lit, SnapshotOfARangeIgnoresLaterChanges) {
  // Read a page, change the map, read the same range again: the two snapshots differ
  // exactly by the change, and the first page's snapshot is older.
  Fixture f(Config{});
  for (std::uint64_t k = 0; k < 100; ++k) ASSERT_EQ(f.s->insert(k, k), Result::kOk);
  Pairs a, b;
  RangePage pa, pb;
  ASSERT_TRUE(f.s->range(0, 99, &a, &pa).ok());
  ASSERT_EQ(f.s->remove(50), Result::kOk);
  ASSERT_EQ(f.s->upsert(51, 1000), Result::kOk);
  ASSERT_TRUE(f.s->range(0, 99, &b, &pb).ok());
  EXPECT_LT(pa.snapshot, pb.snapshot);
  ASSERT_EQ(a.size(), 100u);
  ASSERT_EQ(b.size(), 99u);
  EXPECT_EQ(b[50], std::make_pair(std::uint64_t{51}, std::uint64_t{1000}));
}

TEST(Lit, SessionsAreLimited) {
  Config c;
  c.max_sessions = 2;
  std::unique_ptr<Map> m;
  ASSERT_TRUE(Map::create(c, &m).ok());
  std::unique_ptr<Session> a, b, d;
  ASSERT_TRUE(m->open_session(&a).ok());
  ASSERT_TRUE(m->open_session(&b).ok());
  EXPECT_EQ(m->open_session(&d).code(), StatusCode::kResourceExhausted);
  a.reset();
  EXPECT_TRUE(m->open_session(&d).ok());  // a closed session's slot is reused
}

// Churn retires nodes and versions; once it stops, what is retired but not yet freed must fall
// back under a small bound (not merely "more than half was freed"), and the map must still
// hold exactly the churn's final state.
TEST(Lit, ReclamationReturnsMemoryAfterChurnAndKeepsTheContents) {
  Fixture f(Config{});
  std::map<std::uint64_t, std::uint64_t> ref;
  for (int round = 0; round < 200; ++round)
    for (std::uint64_t k = 0; k < 100; ++k) {
      f.s->upsert(k, round);
      ref[k] = round;
      if (round % 2 && k % 4 != 0) {
        f.s->remove(k);
        ref.erase(k);
      }
    }
  const Stats during = f.map->stats();
  EXPECT_GT(during.retired, 10000u);
  // Churn stops. The session leaves (its unfreed objects go to the map's epoch manager), and a
  // new one reads every key, which lets the epoch advance and frees what became safe.
  f.s.reset();
  ASSERT_TRUE(f.map->open_session(&f.s).ok());
  for (int pass = 0; pass < 3; ++pass)
    for (std::uint64_t k = 0; k < 100; ++k) {
      std::uint64_t v = 0;
      f.s->get(k, &v);
      if (ref.count(k)) f.s->upsert(k, ref[k]);  // same value: retires a version, changes nothing
    }
  f.s.reset();  // flushes the session's counters
  ASSERT_TRUE(f.map->open_session(&f.s).ok());
  const Stats after = f.map->stats();
  // Bound: one participant frees everything retired two epochs back at each collection (every
  // 64 retirements), so at most a few collections' worth may still wait.
  constexpr std::uint64_t kPendingBound = 4 * 64;
  EXPECT_LE(after.retired - after.freed, kPendingBound)
      << "retired " << after.retired << ", freed " << after.freed << " after churn stopped";
  Pairs all;
  RangePage page;
  ASSERT_TRUE(f.s->range(0, ~std::uint64_t{0}, &all, &page).ok());
  EXPECT_EQ(all, reference_range(ref, 0, ~std::uint64_t{0}));
  EXPECT_EQ(all.size(), 25u);
  std::uint64_t entries = 0;
  const Status st = f.map->check(&entries);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(entries, ref.size());
}

TEST(LitBytes, EncodingPreservesOrder) {
  using namespace std::string_literals;
  std::vector<std::string> words = {""s, "a"s, "a\0"s, "ab"s, "abc"s, "b"s, "zzzzzzz"s, "\xff"s, "\x01\x02"s, "\0"s};
  std::mt19937_64 rng(9);
  for (int i = 0; i < 2000; ++i) {
    std::string w(rng() % 8, '\0');
    for (char& ch : w) ch = static_cast<char>(rng() % 4 == 0 ? 0 : rng());
    words.push_back(w);
  }
  for (const auto& x : words) {
    std::uint64_t kx = 0;
    ASSERT_TRUE(encode_bytes(x, &kx));
    std::string back;
    ASSERT_TRUE(decode_bytes(kx, &back));
    EXPECT_EQ(back, x);
    for (const auto& y : words) {
      std::uint64_t ky = 0;
      ASSERT_TRUE(encode_bytes(y, &ky));
      ASSERT_EQ(kx < ky, x < y) << "order differs for two strings of " << x.size() << " and " << y.size() << " bytes";
    }
  }
  std::uint64_t k = 42;
  EXPECT_FALSE(encode_bytes("12345678", &k));  // too long: refused, key untouched
  EXPECT_EQ(k, 42u);
  std::string s;
  EXPECT_FALSE(decode_bytes(9, &s));                        // length over 7
  EXPECT_FALSE(decode_bytes((std::uint64_t{1} << 40) | 1, &s));  // a byte after the length
}

TEST(LitBytes, StringKeysInTheMap) {
  Fixture f(Config{});
  const std::vector<std::string> names = {"pear", "apple", "fig", "apricot", "banana", "kiwi", "a"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::uint64_t k = 0;
    ASSERT_TRUE(encode_bytes(names[i], &k));
    ASSERT_EQ(f.s->insert(k, i), Result::kOk);
  }
  std::uint64_t lo = 0, hi = 0;
  ASSERT_TRUE(encode_bytes("a", &lo));
  ASSERT_TRUE(encode_bytes("b\xff\xff\xff\xff\xff\xff", &hi));
  Pairs out;
  RangePage page;
  ASSERT_TRUE(f.s->range(lo, hi, &out, &page).ok());
  std::vector<std::string> got;
  for (auto& [key, v] : out) {
    std::string w;
    ASSERT_TRUE(decode_bytes(key, &w));
    got.push_back(w);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"a", "apple", "apricot", "banana"}));
}

}  // namespace
}  // namespace duet::lit
