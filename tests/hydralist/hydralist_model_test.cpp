// Hydralist against reference models: the fingerprint matchers against each other, the ART
// against std::map (floor, exact lookup, prefix keys), and the index against std::map for
// both key types (random operations, forced splits and merges, empty, 1 KiB and shared-prefix
// keys, scans), bad input, allocation failure, the lagging search layer (combiner paused),
// forced replicas and the synchronous search layer. Sizes scale with DUET_TEST_SCALE.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "index/hydralist/art.hpp"
#include "index/hydralist/fingerprint.hpp"
#include "index/hydralist/hydralist.hpp"

using namespace duet;
using namespace duet::hydralist;

namespace {

double scale() {
  if (const char* s = std::getenv("DUET_TEST_SCALE"); s && *s) return std::max(0.01, std::atof(s));
  return 1.0;
}
int scaled(int n) { return std::max(200, static_cast<int>(n * scale())); }

/// prefix followed by n in decimal. Appending to a named string, rather than
/// `"prefix" + std::to_string(n)`, avoids GCC 12's false -Wrestrict in operator+(const char*,
/// std::string&&) (GCC bug 105329).
std::string numbered(const char* prefix, int n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

Config test_config() {
  Config c;
  c.combiner_period = std::chrono::microseconds(100);
  return c;
}

// ---------------------------------------------------------------------------------------
// Fingerprints

TEST(HydralistFingerprint, EveryAvailableMatcherAgreesWithScalar) {
  std::mt19937_64 rng(1);
  alignas(64) std::uint8_t fps[64];
  int tested = 0;
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    MatchFn f = match_fn(l);
    if (!f) {
      std::printf("[ info ] %s not supported here, skipped\n", simd_name(l));
      continue;
    }
    ++tested;
    for (int round = 0; round < 2000; ++round) {
      const unsigned alphabet = round % 3 == 0 ? 4 : 256;  // small alphabets: many matches
      for (auto& b : fps) b = static_cast<std::uint8_t>(rng() % alphabet);
      const auto needle = static_cast<std::uint8_t>(rng() % alphabet);
      std::uint64_t want = 0;
      for (unsigned i = 0; i < 64; ++i)
        if (fps[i] == needle) want |= std::uint64_t{1} << i;
      ASSERT_EQ(f(fps, needle), want) << simd_name(l);
    }
  }
  EXPECT_GE(tested, 1);
  EXPECT_NE(match_fn(best_simd()), nullptr);
}

TEST(HydralistFingerprint, IndexRunsWithEachMatcher) {
  for (int level = 0; level <= 2; ++level) {
    if (!simd_supported(static_cast<SimdLevel>(level))) continue;
    Config c = test_config();
    c.simd = level;
    std::unique_ptr<U64Index> idx;
    ASSERT_TRUE(U64Index::create(c, &idx).ok());
    EXPECT_EQ(static_cast<int>(idx->simd()), level);
    std::unique_ptr<U64Session> s;
    ASSERT_TRUE(idx->attach(&s).ok());
    for (std::uint64_t k = 0; k < 1000; ++k) ASSERT_EQ(s->insert(k * 7919, k), Result::kOk);
    for (std::uint64_t k = 0; k < 1000; ++k) {
      std::uint64_t v = 0;
      ASSERT_EQ(s->get(k * 7919, &v), Result::kOk);
      ASSERT_EQ(v, k);
      ASSERT_EQ(s->get(k * 7919 + 1, &v), Result::kNotFound);
    }
  }
}

// ---------------------------------------------------------------------------------------
// ART

std::string random_key(std::mt19937_64& rng, int maxlen, int alphabet) {
  std::string k(rng() % (maxlen + 1), '\0');
  for (auto& c : k) c = static_cast<char>('a' + rng() % alphabet);
  return k;
}

TEST(HydralistArt, AgainstStdMapWithPrefixKeys) {
  std::mt19937_64 rng(2);
  Art art;
  std::map<std::string, void*> model;
  const int n = scaled(20000);
  for (int i = 0; i < n; ++i) {
    const std::string k = random_key(rng, 6, 3);  // short keys over 3 letters: many prefixes
    void* v = reinterpret_cast<void*>(static_cast<std::uintptr_t>(rng() | 1));
    if (rng() % 3 == 0) {
      auto it = model.find(k);
      const bool want = it != model.end();
      void* expect = want ? it->second : v;
      EXPECT_EQ(art.erase(k, expect), want);
      if (want) model.erase(it);
    } else {
      ASSERT_TRUE(art.insert(k, v));
      model[k] = v;
    }
    if (i % 97 == 0) {
      const std::string q = random_key(rng, 7, 4);
      auto it = model.upper_bound(q);
      void* want = nullptr;
      if (it != model.begin()) want = std::prev(it)->second;
      else if (!model.empty()) want = model.begin()->second;
      ASSERT_EQ(art.floor_or_first(q), want) << "query '" << q << "'";
      auto f = model.find(q);
      ASSERT_EQ(art.find(q), f == model.end() ? nullptr : f->second);
    }
  }
  auto e = art.entries();
  ASSERT_EQ(e.size(), model.size());
  std::size_t i = 0;
  for (auto& [k, v] : model) {
    EXPECT_EQ(e[i].first, k);
    EXPECT_EQ(e[i].second, v);
    ++i;
  }
}

TEST(HydralistArt, WideNodesAndLongSharedPrefixes) {
  Art art;
  std::map<std::string, void*> model;
  const std::string base(1000, 'p');
  for (int a = 0; a < 256; ++a)
    for (int b = 0; b < 4; ++b) {
      std::string k = base + static_cast<char>(a) + static_cast<char>(b);
      void* v = reinterpret_cast<void*>(static_cast<std::uintptr_t>(a * 4 + b + 1));
      ASSERT_TRUE(art.insert(k, v));
      model[k] = v;
    }
  ASSERT_TRUE(art.insert("", reinterpret_cast<void*>(7)));
  model[""] = reinterpret_cast<void*>(7);
  ASSERT_TRUE(art.insert(base, reinterpret_cast<void*>(9)));
  model[base] = reinterpret_cast<void*>(9);
  for (int a = 0; a < 256; a += 3) {
    std::string q = base + static_cast<char>(a) + "zz";
    auto it = std::prev(model.upper_bound(q));
    ASSERT_EQ(art.floor_or_first(q), it->second);
  }
  EXPECT_EQ(art.floor_or_first("a"), reinterpret_cast<void*>(7));
  EXPECT_EQ(art.floor_or_first(""), reinterpret_cast<void*>(7));
  EXPECT_EQ(art.entries().size(), model.size());
  for (auto& [k, v] : model) ASSERT_TRUE(art.erase(k, v));
  EXPECT_EQ(art.size(), 0u);
  EXPECT_EQ(art.floor_or_first("x"), nullptr);
}

// ---------------------------------------------------------------------------------------
// The index against std::map

template <class KT>
struct Keys;
template <>
struct Keys<U64Keys> {
  using Key = std::uint64_t;
  static Key make(std::mt19937_64& rng, std::uint64_t range) {
    const std::uint64_t r = rng() % range;
    return r % 2 ? ~std::uint64_t{0} - r / 2 : r / 2;  // both ends of the key space
  }
};
template <>
struct Keys<BytesKeys> {
  using Key = std::string;
  static Key make(std::mt19937_64& rng, std::uint64_t range) {
    const std::uint64_t r = rng() % range;
    switch (r % 4) {
      case 0: return std::to_string(r);                       // short, prefixes of each other
      case 1: return "shared/prefix/" + std::to_string(r);    // a shared prefix
      case 2: return std::string(1024, 'k') + std::to_string(r);  // 1 KiB keys
      default: return r == 3 ? std::string() : std::string(1, static_cast<char>(r % 256)) + "x";
    }
  }
};

template <class KT>
void run_against_map(std::uint64_t range, int ops, std::uint64_t seed, const Config& c = test_config(),
                     bool sync_each = false) {
  using Key = typename Keys<KT>::Key;
  std::unique_ptr<Index<KT>> idx;
  ASSERT_TRUE(Index<KT>::create(c, &idx).ok());
  std::unique_ptr<Session<KT>> s;
  ASSERT_TRUE(idx->attach(&s).ok());
  std::map<Key, std::uint64_t> model;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < ops; ++i) {
    const Key k = Keys<KT>::make(rng, range);
    const std::uint64_t v = rng();
    const auto it = model.find(k);
    const bool present = it != model.end();
    std::uint64_t out = 0;
    switch (rng() % 8) {
      case 0:
      case 1:
      case 2: {
        const Result r = s->insert(k, v, &out);
        ASSERT_EQ(r, present ? Result::kExists : Result::kOk);
        if (present) ASSERT_EQ(out, it->second);
        else model[k] = v;
        break;
      }
      case 3:
      case 4: {
        const Result r = s->remove(k, &out);
        ASSERT_EQ(r, present ? Result::kOk : Result::kNotFound);
        if (present) {
          ASSERT_EQ(out, it->second);
          model.erase(it);
        }
        break;
      }
      case 5: {
        const Result r = s->update(k, v, &out);
        ASSERT_EQ(r, present ? Result::kOk : Result::kNotFound);
        if (present) {
          ASSERT_EQ(out, it->second);
          it->second = v;
        }
        break;
      }
      case 6: {
        if (rng() % 4 == 0) {
          bool existed = false;
          ASSERT_EQ(s->upsert(k, v, &out, &existed), Result::kOk);
          ASSERT_EQ(existed, present);
          if (present) {
            ASSERT_EQ(out, it->second);
          }
          model[k] = v;
          break;
        }
        const Result r = s->get(k, &out);
        ASSERT_EQ(r, present ? Result::kOk : Result::kNotFound);
        if (present) {
          ASSERT_EQ(out, it->second);
        }
        break;
      }
      default: {
        typename Session<KT>::Pairs got;
        const std::size_t count = 1 + rng() % 100;
        ASSERT_EQ(s->scan(k, count, &got), Result::kOk);
        auto m = model.lower_bound(k);
        for (std::size_t j = 0; j < got.size(); ++j, ++m) {
          ASSERT_NE(m, model.end());
          ASSERT_EQ(got[j].first, m->first);
          ASSERT_EQ(got[j].second, m->second);
        }
        ASSERT_TRUE(got.size() == count || m == model.end()) << got.size() << " of " << count;
        if (rng() % 2) {
          const Key e = Keys<KT>::make(rng, range);
          got.clear();
          ASSERT_EQ(s->scan_range(k, e, 0, &got), Result::kOk);
          std::size_t want = 0;
          if (!(e < k))
            for (auto x = model.lower_bound(k); x != model.end() && !(e < x->first); ++x) {
              ASSERT_LT(want, got.size());
              ASSERT_EQ(got[want].first, x->first);
              ++want;
            }
          ASSERT_EQ(got.size(), want);
        }
      }
    }
    if (sync_each && i % 1000 == 0) {
      idx->sync();
      ASSERT_TRUE(idx->check().ok()) << idx->check().to_string();
    }
  }
  idx->sync();
  std::uint64_t keys = 0;
  const Status st = idx->check(&keys);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(keys, model.size());
  const Stats stats = idx->stats();
  EXPECT_GT(stats.nodes, 1u);
  // A full scan returns the model.
  typename Session<KT>::Pairs all;
  ASSERT_EQ(s->scan(Key{}, model.size() + 10, &all), Result::kOk);
  ASSERT_EQ(all.size(), model.size());
  std::size_t j = 0;
  for (auto& [k, v] : model) {
    ASSERT_EQ(all[j].first, k);
    ASSERT_EQ(all[j].second, v);
    ++j;
  }
  s.reset();
}

TEST(HydralistModel, U64RandomOperations) { run_against_map<U64Keys>(4000, scaled(60000), 3, test_config(), true); }
TEST(HydralistModel, BytesRandomOperations) { run_against_map<BytesKeys>(4000, scaled(40000), 4, test_config(), true); }
TEST(HydralistModel, U64SmallRangeForcesSplitsAndMerges) { run_against_map<U64Keys>(300, scaled(40000), 5); }
TEST(HydralistModel, BytesSmallRangeForcesSplitsAndMerges) { run_against_map<BytesKeys>(300, scaled(30000), 6); }

TEST(HydralistModel, SplitsAndMergesAreCountedAndUndone) {
  std::unique_ptr<U64Index> idx;
  ASSERT_TRUE(U64Index::create(test_config(), &idx).ok());
  std::unique_ptr<U64Session> s;
  ASSERT_TRUE(idx->attach(&s).ok());
  const int n = 64 * 40;
  for (int k = 0; k < n; ++k) ASSERT_EQ(s->insert(static_cast<std::uint64_t>(k), k), Result::kOk);
  idx->sync();
  ASSERT_TRUE(idx->check().ok());
  const auto grown = idx->stats().nodes;
  EXPECT_GE(grown, static_cast<std::uint64_t>(n / 64));
  EXPECT_EQ(idx->replica_anchors(0).size(), grown - 1);
  for (int k = 0; k < n; ++k) ASSERT_EQ(s->remove(static_cast<std::uint64_t>(k)), Result::kOk);
  idx->sync();
  ASSERT_TRUE(idx->check().ok()) << idx->check().to_string();
  EXPECT_LE(idx->stats().nodes, 2u);
  s.reset();  // sessions' counters are added when they detach
  EXPECT_GT(idx->stats().merges, 0u);
  EXPECT_GT(idx->stats().splits, 0u);
}

TEST(HydralistModel, GetOrInsertAndRemoveIf) {
  std::unique_ptr<BytesIndex> idx;
  ASSERT_TRUE(BytesIndex::create(test_config(), &idx).ok());
  std::unique_ptr<BytesSession> s;
  ASSERT_TRUE(idx->attach(&s).ok());
  int made = 0;
  std::uint64_t v = 0;
  bool inserted = false;
  for (int round = 0; round < 2; ++round)
    for (int k = 0; k < 500; ++k) {
      ASSERT_EQ(s->get_or_insert("key" + std::to_string(k), [&] { return std::uint64_t(++made); }, &v, &inserted),
                Result::kOk);
      EXPECT_EQ(inserted, round == 0);
    }
  EXPECT_EQ(made, 500);
  ASSERT_EQ(s->get("key7", &v), Result::kOk);
  EXPECT_EQ(s->remove_if("key7", v + 1), Result::kMismatch);
  EXPECT_EQ(s->remove_if("key7", v), Result::kOk);
  EXPECT_EQ(s->remove_if("key7", v), Result::kNotFound);
}

TEST(HydralistModel, BadInput) {
  Config c = test_config();
  c.max_key_bytes = 100;
  c.max_sessions = 2;
  c.max_scan = 10;
  std::unique_ptr<BytesIndex> idx;
  ASSERT_TRUE(BytesIndex::create(c, &idx).ok());
  std::unique_ptr<BytesSession> a, b, d;
  ASSERT_TRUE(idx->attach(&a).ok());
  ASSERT_TRUE(idx->attach(&b).ok());
  const Status too_many = idx->attach(&d);
  EXPECT_EQ(too_many.code(), StatusCode::kResourceExhausted) << too_many.to_string();
  const std::string big(101, 'x');
  std::uint64_t v = 0;
  EXPECT_EQ(a->insert(big, 1), Result::kTooLarge);
  EXPECT_EQ(a->get(big, &v), Result::kTooLarge);
  EXPECT_EQ(a->remove(big), Result::kTooLarge);
  EXPECT_EQ(a->update(big, 1), Result::kTooLarge);
  for (int k = 0; k < 30; ++k) ASSERT_EQ(a->insert(numbered("k", 100 + k), k), Result::kOk);
  BytesSession::Pairs out;
  EXPECT_EQ(a->scan("k", 0, &out), Result::kOk);
  EXPECT_TRUE(out.empty());
  ScanPage page;
  EXPECT_EQ(a->scan("k", 1000, &out, &page), Result::kOk);  // over max_scan: one page
  EXPECT_EQ(out.size(), 10u);
  EXPECT_TRUE(page.more);
  out.clear();
  EXPECT_EQ(a->scan_range("z", "a", 5, &out), Result::kOk);  // start after end: empty
  EXPECT_TRUE(out.empty());
  std::uint64_t keys = 0;
  idx->sync();
  ASSERT_TRUE(idx->check(&keys).ok());
  EXPECT_EQ(keys, 30u);
  // Bad configurations name their field.
  Config bad;
  bad.max_sessions = 0;
  std::unique_ptr<U64Index> x;
  const Status st = U64Index::create(bad, &x);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("max_sessions"), std::string::npos);
  bad = Config{};
  bad.simd = 7;
  EXPECT_EQ(U64Index::create(bad, &x).code(), StatusCode::kInvalidArgument);
}

TEST(HydralistModel, AllocationFailureLeavesTheIndexUnchanged) {
  auto& fail_in = detail::fail_allocation_in();
  {
    std::unique_ptr<U64Index> idx;
    ASSERT_TRUE(U64Index::create(test_config(), &idx).ok());
    std::unique_ptr<U64Session> s;
    ASSERT_TRUE(idx->attach(&s).ok());
    for (std::uint64_t k = 0; k < 64; ++k) ASSERT_EQ(s->insert(k, k), Result::kOk);
    fail_in.store(0);  // the split's node
    EXPECT_EQ(s->insert(100, 1), Result::kNoMemory);
    fail_in.store(-1);
    std::uint64_t v = 0, keys = 0;
    EXPECT_EQ(s->get(100, &v), Result::kNotFound);
    ASSERT_TRUE(idx->check(&keys).ok());
    EXPECT_EQ(keys, 64u);
    EXPECT_EQ(idx->stats().nodes, 1u);
    EXPECT_EQ(s->insert(100, 1), Result::kOk);
    EXPECT_EQ(idx->stats().nodes, 2u);
  }
  std::unique_ptr<BytesIndex> idx;
  ASSERT_TRUE(BytesIndex::create(test_config(), &idx).ok());
  std::unique_ptr<BytesSession> s;
  ASSERT_TRUE(idx->attach(&s).ok());
  for (int k = 0; k < 64; ++k) ASSERT_EQ(s->insert(numbered("k", 1000 + k), k), Result::kOk);
  // 0: the key's copy; 1: the split's node; 2: the new node's anchor copy.
  for (int which = 0; which < 3; ++which) {
    fail_in.store(which);
    EXPECT_EQ(s->insert("k9999", 5), Result::kNoMemory) << which;
    fail_in.store(-1);
    std::uint64_t v = 0, keys = 0;
    EXPECT_EQ(s->get("k9999", &v), Result::kNotFound);
    idx->sync();
    ASSERT_TRUE(idx->check(&keys).ok());
    EXPECT_EQ(keys, 64u);
    EXPECT_EQ(idx->stats().nodes, 1u);
  }
  EXPECT_EQ(s->insert("k9999", 5), Result::kOk);  // and the split then works
  EXPECT_EQ(idx->stats().nodes, 2u);
}

TEST(HydralistModel, LaggingSearchLayerStaysCorrect) {
  // With the combiner paused the search layer never learns about a split: every lookup starts
  // at the head (or a stale anchor) and walks. Afterwards each replica must index exactly the
  // live anchors.
  Config c = test_config();
  c.replicas = 2;
  std::unique_ptr<U64Index> idx;
  ASSERT_TRUE(U64Index::create(c, &idx).ok());
  std::unique_ptr<U64Session> s;
  ASSERT_TRUE(idx->attach(&s).ok());
  // Some anchors first, so the search layer is stale rather than empty.
  for (std::uint64_t k = 0; k < 2000; ++k) ASSERT_EQ(s->insert(k * 1000, k), Result::kOk);
  idx->sync();
  idx->pause_combiner(true);
  const std::size_t indexed = idx->replica_anchors(0).size();
  std::map<std::uint64_t, std::uint64_t> model;
  for (std::uint64_t k = 0; k < 2000; ++k) model[k * 1000] = k;
  std::mt19937_64 rng(9);
  const int n = scaled(100000);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t k = rng() % 2'000'000;
    if (i % 3 != 0) {  // two inserts per remove: the list grows far past what is indexed
      const bool absent = !model.count(k);
      ASSERT_EQ(s->insert(k, i), absent ? Result::kOk : Result::kExists);
      if (absent) model[k] = static_cast<std::uint64_t>(i);
    } else {
      auto it = model.lower_bound(k);
      if (it == model.end()) continue;
      ASSERT_EQ(s->remove(it->first), Result::kOk);
      model.erase(it);
    }
    if (i % 16 == 0) {
      std::uint64_t v = 0;
      const bool present = model.count(k);
      ASSERT_EQ(s->get(k, &v), present ? Result::kOk : Result::kNotFound);
    }
  }
  for (auto& [k, v] : model) {
    std::uint64_t got = 0;
    ASSERT_EQ(s->get(k, &got), Result::kOk);
    ASSERT_EQ(got, v);
  }
  EXPECT_EQ(idx->replica_anchors(0).size(), indexed);  // nothing applied while paused
  EXPECT_FALSE(idx->check().ok());  // the replicas lag the list
  idx->pause_combiner(false);
  idx->sync();
  std::uint64_t keys = 0;
  const Status st = idx->check(&keys);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(keys, model.size());
  EXPECT_EQ(idx->replicas(), 2u);
}

TEST(HydralistModel, ThreeReplicasOnOneNode) {
  Config c = test_config();
  c.replicas = 3;
  std::unique_ptr<BytesIndex> idx;
  ASSERT_TRUE(BytesIndex::create(c, &idx).ok());
  ASSERT_EQ(idx->replicas(), 3u);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      std::unique_ptr<BytesSession> s;
      ASSERT_TRUE(idx->attach(&s).ok());
      std::mt19937_64 rng(t);
      for (int i = 0; i < scaled(20000); ++i) {
        const std::string k = "user" + std::to_string(t) + "/" + std::to_string(rng() % 3000);
        if (rng() % 3) (void)s->insert(k, i);
        else (void)s->remove(k);
        std::uint64_t v;
        (void)s->get(k, &v);
      }
    });
  for (auto& th : threads) th.join();
  idx->sync();
  const Status st = idx->check();
  ASSERT_TRUE(st.ok()) << st.to_string();
  const auto a0 = idx->replica_anchors(0);
  EXPECT_GT(a0.size(), 10u);
  EXPECT_EQ(idx->replica_anchors(1), a0);
  EXPECT_EQ(idx->replica_anchors(2), a0);
}

TEST(HydralistModel, SynchronousSearchLayer) {
  Config c = test_config();
  c.async_search_layer = false;
  c.replicas = 2;
  run_against_map<U64Keys>(3000, scaled(30000), 11, c, true);
  run_against_map<BytesKeys>(3000, scaled(20000), 12, c, true);
}

TEST(HydralistModel, SortedSlots) {
  // The factor analysis's first step: sorted slots, binary search, no fingerprints.
  Config c = test_config();
  c.sorted_slots = true;
  run_against_map<U64Keys>(4000, scaled(15000), 14, c, true);
  run_against_map<BytesKeys>(4000, scaled(10000), 15, c, true);
  run_against_map<U64Keys>(300, scaled(15000), 16, c);
  run_against_map<BytesKeys>(300, scaled(15000), 17, c);
}

TEST(HydralistModel, CounterClockAndNoBackoff) {
  Config c = test_config();
  c.counter_clock = true;
  c.backoff = false;
  run_against_map<U64Keys>(2000, scaled(20000), 13, c);
}

}  // namespace
