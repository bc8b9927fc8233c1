// Rows for the ColumnMirror tests (column_mirror_test.cpp, and compute_gpu_test.cpp for the GPU
// copy): a table of keys "r" + 4 bytes holding rows (g, a, b), a mirror config over it, one grouped
// query and the same query computed from a transaction's own reads.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "compute/column_mirror.hpp"

namespace duet::compute::mirror_rows {

// Rows (g, a, b): g the group (0 .. 7), a and b integers.
inline const RowCodec& codec() {
  static const RowCodec c = [] {
    RowCodec r;
    EXPECT_TRUE(RowCodec::make({{"g", Type::kInt64, 0}, {"a", Type::kInt64, 0}, {"b", Type::kMoney, 0}}, &r).ok());
    return r;
  }();
  return c;
}

inline std::string key(std::uint32_t i) {
  std::string k = "r";
  for (int s = 24; s >= 0; s -= 8) k.push_back(static_cast<char>(i >> s));
  return k;
}

inline std::string row(std::int64_t g, std::int64_t a, std::int64_t b) {
  std::string r;
  const Value v[] = {g, a, b};
  EXPECT_TRUE(codec().encode(v, &r).ok());
  return r;
}

inline ColumnMirror::Config config() {
  ColumnMirror::Config c;
  c.lo = "r";
  c.hi = "s";
  c.codec = codec();
  c.columns = {"g", "a", "b"};
  c.key_id = [](std::string_view k, std::uint64_t* id) {
    if (k.size() != 5) return false;
    *id = 0;
    for (std::size_t i = 1; i < 5; ++i) *id = (*id << 8) | static_cast<unsigned char>(k[i]);
    return true;
  };
  return c;
}

// Group by g over rows with a > lo: count, sum a, min b, max b.
inline ColumnMirror::Query query(std::int64_t lo) {
  return {{{"a", Cmp::kGt, lo, 0, 0, 0, {}, {}}},
          "g",
          {{Agg::kCount, "", "n"}, {Agg::kSum, "a", "sa"}, {Agg::kMin, "b", "mb"}, {Agg::kMax, "b", "xb"}}};
}

using Groups = std::map<std::int64_t, std::array<std::int64_t, 4>>;

inline Groups from_table(const Table& t) {
  Groups g;
  for (std::size_t i = 0; i < t.rows(); ++i)
    g[t.get("g")->i64()[i]] = {t.get("n")->i64()[i], t.get("sa")->i64()[i], t.get("mb")->i64()[i],
                               t.get("xb")->i64()[i]};
  return g;
}

// The same query from the transaction's own reads.
inline Groups reference(Txn* t, std::int64_t lo) {
  std::vector<std::pair<std::string, std::string>> kv;
  EXPECT_TRUE(t->scan(TxnRange{"r", "s", true, false, false, false}, 0, &kv).ok());
  Groups g;
  for (const auto& [k, v] : kv) {
    if (k.size() != 5) continue;  // not a row key (config().key_id)
    std::int64_t x[3];
    std::memcpy(x, v.data(), 24);
    if (x[1] <= lo) continue;
    auto [it, fresh] = g.try_emplace(x[0], std::array<std::int64_t, 4>{0, 0, x[2], x[2]});
    it->second[0] += 1;
    it->second[1] += x[1];
    it->second[2] = std::min(it->second[2], x[2]);
    it->second[3] = std::max(it->second[3], x[2]);
  }
  return g;
}

inline void commit(TxnSpace& s, const std::vector<std::pair<std::string, std::optional<std::string>>>& w) {
  Txn t;
  ASSERT_TRUE(s.begin(&t).ok());
  for (const auto& [k, v] : w) ASSERT_TRUE(v ? t.put(k, *v).ok() : t.del(k).ok());
  CommitResult r;
  ASSERT_TRUE(t.commit(&r).ok());
  ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
}

/// `threads` writers committing transactions of 1 .. max_keys random puts (rows with g in 0..7, a
/// in -100..899, b in 0..999) and deletes (one in four) over keys 0 .. keys-1 until stop() (or
/// destruction), each writer pausing `pause_us` after each commit; `commits` counts the ones
/// that committed.
class RandomWriters {
 public:
  RandomWriters(TxnSpace& space, unsigned threads, std::uint32_t keys, unsigned max_keys, unsigned pause_us = 0) {
    for (unsigned w = 0; w < threads; ++w)
      th_.emplace_back([this, &space, w, keys, max_keys, pause_us] {
        std::mt19937_64 rng(w + 7);
        Txn t;
        while (!stop_.load()) {
          if (!space.begin(&t).ok()) continue;
          const unsigned n = 1 + static_cast<unsigned>(rng() % max_keys);
          for (unsigned j = 0; j < n; ++j) {
            const std::uint32_t k = static_cast<std::uint32_t>(rng() % keys);
            if (rng() % 4 == 0) (void)t.del(key(k));
            else (void)t.put(key(k), row(static_cast<std::int64_t>(rng() % 8), static_cast<std::int64_t>(rng() % 1000) - 100,
                                         static_cast<std::int64_t>(rng() % 1000)));
          }
          CommitResult r;
          if (t.commit(&r).ok() && r.outcome == TxnOutcome::kCommitted) ++commits;
          if (pause_us) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
        }
      });
  }
  ~RandomWriters() { stop(); }
  void stop() {
    stop_ = true;
    for (auto& t : th_)
      if (t.joinable()) t.join();
  }
  std::atomic<std::uint64_t> commits{0};

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> th_;
};

}  // namespace duet::compute::mirror_rows
