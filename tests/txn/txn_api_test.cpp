// The txn keyspace's API: reads at the start, own writes, deletes, scans with bounds and
// paging, SNAPSHOT's columnar output, commit outcomes, bad input, collection, a reference
// model of SI driven through interleaved transactions.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "duet/store.hpp"
#include "duet/txn.hpp"
#include "txn/read_key.hpp"

namespace duet {
namespace {

std::shared_ptr<TxnSpace> open_space(TxnConfig c = {}) {
  std::shared_ptr<TxnSpace> s;
  Status st = TxnSpace::open("t", c, &s);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return s;
}

void put_commit(TxnSpace& s, std::string_view k, std::string_view v) {
  Txn t;
  ASSERT_TRUE(s.begin(&t).ok());
  ASSERT_TRUE(t.put(k, v).ok());
  CommitResult r;
  ASSERT_TRUE(t.commit(&r).ok());
  ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
}

using test::read_key;

TEST(TxnApi, StoreCreatesTxnKeyspaces) {
  std::unique_ptr<Store> store;
  StoreConfig c;
  c.device = DeviceChoice::kCpu;
  ASSERT_TRUE(Store::open(c, &store).ok());
  std::shared_ptr<TxnSpace> t;
  ASSERT_TRUE(store->create_txn("orders", &t).ok());
  EXPECT_EQ(t->kind(), KeyspaceKind::kTxn);
  std::shared_ptr<TxnSpace> again;
  ASSERT_TRUE(store->txn("orders", &again).ok());
  EXPECT_EQ(again.get(), t.get());
  std::shared_ptr<KvSpace> kv;
  EXPECT_EQ(store->kv("orders", &kv).code(), StatusCode::kInvalidArgument);
  put_commit(*t, "a", "1");
  EXPECT_EQ(t->size(), 1u);
}

TEST(TxnApi, ReadsSeeTheStartOverlaidByOwnWrites) {
  auto s = open_space();
  put_commit(*s, "k", "v1");
  Txn old;
  ASSERT_TRUE(s->begin(&old).ok());
  put_commit(*s, "k", "v2");
  put_commit(*s, "new", "x");
  std::string v;
  bool found = false;
  ASSERT_TRUE(old.get("k", &v, &found).ok());
  EXPECT_TRUE(found);
  EXPECT_EQ(v, "v1");
  ASSERT_TRUE(old.get("new", &v, &found).ok());
  EXPECT_FALSE(found) << "a key created after the start is invisible";
  ASSERT_TRUE(old.put("k", "mine").ok());
  ASSERT_TRUE(old.get("k", &v, &found).ok());
  EXPECT_EQ(v, "mine");
  ASSERT_TRUE(old.del("k").ok());
  ASSERT_TRUE(old.get("k", &v, &found).ok());
  EXPECT_FALSE(found);
  CommitResult r;
  ASSERT_TRUE(old.commit(&r).ok());
  EXPECT_EQ(r.outcome, TxnOutcome::kConflict);
  EXPECT_EQ(r.conflict_key, "k");
  EXPECT_FALSE(old.active());
  EXPECT_EQ(read_key(*s, "k"), "v2") << "the aborted transaction changed nothing";
}

TEST(TxnApi, ReadOnlyTransactionsNeverAbort) {
  auto s = open_space();
  put_commit(*s, "a", "1");
  Txn ro;
  ASSERT_TRUE(s->begin(&ro).ok());
  std::string v;
  bool f;
  ASSERT_TRUE(ro.get("a", &v, &f).ok());
  for (int i = 0; i < 10; ++i) put_commit(*s, "a", std::to_string(i));
  ASSERT_TRUE(ro.get("a", &v, &f).ok());
  EXPECT_EQ(v, "1");
  CommitResult r;
  ASSERT_TRUE(ro.commit(&r).ok());
  EXPECT_EQ(r.outcome, TxnOutcome::kCommitted);
}

TEST(TxnApi, WatchedKeysAreValidatedWithoutBeingWritten) {
  auto s = open_space();
  put_commit(*s, "w", "0");
  put_commit(*s, "x", "0");
  // A write to a watched key after `since` aborts the watcher, even one that writes nothing.
  const std::uint64_t since = s->now();
  put_commit(*s, "w", "1");
  for (bool writes : {false, true}) {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    ASSERT_TRUE(t.watch("w", since).ok());
    if (writes) {
      ASSERT_TRUE(t.put("a", "v").ok());
    }
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
    EXPECT_EQ(r.outcome, TxnOutcome::kConflict) << "writes=" << writes;
    EXPECT_EQ(r.conflict_key, "w");
  }
  EXPECT_EQ(read_key(*s, "a"), std::nullopt) << "the aborted watcher installed nothing";
  // Unchanged watched keys (also absent ones) commit, and are not written.
  const std::uint64_t later = s->now();
  put_commit(*s, "x", "2");
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  ASSERT_TRUE(t.watch("w", later).ok());
  ASSERT_TRUE(t.watch("absent", later).ok());
  ASSERT_TRUE(t.put("a", "v").ok());
  CommitResult r;
  ASSERT_TRUE(t.commit(&r).ok());
  EXPECT_EQ(r.outcome, TxnOutcome::kCommitted);
  EXPECT_EQ(read_key(*s, "a"), "v");
  EXPECT_EQ(read_key(*s, "w"), "1");
  EXPECT_EQ(read_key(*s, "absent"), std::nullopt);
  // Watching twice keeps the earlier bound; watching a written key validates against it.
  Txn u;
  ASSERT_TRUE(s->begin(&u).ok());
  ASSERT_TRUE(u.watch("x", since).ok());
  ASSERT_TRUE(u.watch("x", s->now()).ok());
  ASSERT_TRUE(u.put("x", "3").ok());
  ASSERT_TRUE(u.commit(&r).ok());
  EXPECT_EQ(r.outcome, TxnOutcome::kConflict);
  EXPECT_EQ(r.conflict_key, "x");
  EXPECT_EQ(read_key(*s, "x"), "2");
  Txn idle;
  EXPECT_EQ(idle.watch("x", 0).code(), StatusCode::kInvalidArgument) << "an inactive transaction";
}

TEST(TxnApi, DeletesAndRecreation) {
  auto s = open_space();
  put_commit(*s, "a", "1");
  Txn before;
  ASSERT_TRUE(s->begin(&before).ok());
  {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    ASSERT_TRUE(t.del("a").ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
    ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
  }
  EXPECT_EQ(read_key(*s, "a"), std::nullopt);
  EXPECT_EQ(s->size(), 0u);
  std::string v;
  bool f;
  ASSERT_TRUE(before.get("a", &v, &f).ok());
  EXPECT_TRUE(f);
  EXPECT_EQ(v, "1");
  put_commit(*s, "a", "2");
  EXPECT_EQ(read_key(*s, "a"), "2");
  EXPECT_EQ(s->size(), 1u);
}

TEST(TxnApi, ScanBoundsAndPaging) {
  auto s = open_space();
  // Keys with long shared prefixes land in one collision run of the index.
  std::vector<std::string> keys = {"a", "ab", "abc", "abcdefgh", "abcdefgh1", "abcdefgh2", "abcdefgi", "b", "c"};
  {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    for (auto& k : keys) ASSERT_TRUE(t.put(k, "v" + k).ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
  }
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  std::vector<std::pair<std::string, std::string>> out;
  ASSERT_TRUE(t.scan(TxnRange::all(), 0, &out).ok());
  ASSERT_EQ(out.size(), keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(out[i].first, keys[i]);
  out.clear();
  TxnRange r{"abcdefgh", "b", false, false, false, false};
  ASSERT_TRUE(t.scan(r, 0, &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, "abcdefgh1");
  EXPECT_EQ(out[2].first, "abcdefgi");
  // Own writes merge in key order; own deletes hide.
  ASSERT_TRUE(t.put("abd", "own").ok());
  ASSERT_TRUE(t.del("abc").ok());
  out.clear();
  bool more = false;
  std::string resume;
  ASSERT_TRUE(t.scan(TxnRange::closed("ab", "abz"), 3, &out, &more, &resume).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, "ab");
  EXPECT_EQ(out[1].first, "abcdefgh");
  EXPECT_EQ(out[2].first, "abcdefgh1");
  EXPECT_TRUE(more);
  EXPECT_EQ(resume, "abcdefgh1");
  out.clear();
  TxnRange next{resume, "abz", false, true, false, false};
  ASSERT_TRUE(t.scan(next, 3, &out, &more, &resume).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].first, "abcdefgh2");
  EXPECT_EQ(out[1].first, "abcdefgi");
  EXPECT_EQ(out[2].first, "abd");
  EXPECT_EQ(out[2].second, "own");
  EXPECT_FALSE(more);
  // Inverted range.
  EXPECT_EQ(t.scan(TxnRange::closed("b", "a"), 0, &out).code(), StatusCode::kInvalidArgument);
}

// Every range between keys of one 8-byte prefix, keys shorter than 8 bytes with trailing zero
// bytes and their neighbours, each bound inclusive and exclusive, read by scan (with and
// without a limit) and by SNAPSHOT: each gives the reference's keys. An exclusive end is read
// without walking its own prefix only when no key of that prefix can lie below it ("ABCDEFG"
// lies below "ABCDEFG\0" in the same prefix).
TEST(TxnApi, RangesAtPrefixEdgesMatchTheReference) {
  auto s = open_space();
  using namespace std::string_literals;
  const std::vector<std::string> keys = {"AB",        "AB\0"s,       "AB\0\x01"s, "ABC",       "ABCDEFG", "ABCDEFG\0"s,
                                         "ABCDEFGH", "ABCDEFGH\0"s, "ABCDEFGH1", "ABCDEFGI", "ABD",    "B"};
  {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    for (auto& k : keys) ASSERT_TRUE(t.put(k, "v" + k).ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
  }
  std::vector<std::string> bounds = keys;
  for (const std::string& k : keys) bounds.push_back(k + "\x01");
  bounds.insert(bounds.end(), {"A", "ABCDEFF\xff"s, "ABCDEFH", "AC"});
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  for (const std::string& lo : bounds)
    for (const std::string& hi : bounds)
      for (int incl = 0; incl < 4; ++incl) {
        if (hi < lo) continue;
        const TxnRange r{lo, hi, (incl & 1) != 0, (incl & 2) != 0, false, false};
        std::vector<std::string> want;
        for (const std::string& k : keys)
          if ((r.start_inclusive ? k >= lo : k > lo) && (r.end_inclusive ? k <= hi : k < hi)) want.push_back(k);
        const std::string what = "[" + lo + ", " + hi + "] inclusive bits " + std::to_string(incl);
        std::vector<std::pair<std::string, std::string>> out;
        ASSERT_TRUE(t.scan(r, 0, &out).ok()) << what;
        std::vector<std::string> got;
        for (auto& kv : out) got.push_back(kv.first);
        EXPECT_EQ(got, want) << "scan " << what;
        out.clear();
        ASSERT_TRUE(t.scan(r, 2, &out).ok()) << what;
        got.clear();
        for (auto& kv : out) got.push_back(kv.first);
        EXPECT_EQ(got, std::vector<std::string>(want.begin(), want.begin() + std::min<std::size_t>(2, want.size())))
            << "scan limit 2 " << what;
        TxnSnapshot snap;
        const SnapshotArg arg = SnapshotArg::of(r);
        ASSERT_TRUE(t.snapshot(std::span<const SnapshotArg>(&arg, 1), &snap).ok()) << what;
        got.clear();
        for (std::size_t i = 0; i < snap.size(); ++i) got.emplace_back(snap.key(i));
        EXPECT_EQ(got, want) << "snapshot " << what;
      }
}

TEST(TxnApi, SnapshotIsColumnar) {
  auto s = open_space();
  {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(t.put("k" + std::to_string(i), std::string(4, char('a' + i))).ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
  }
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  ASSERT_TRUE(t.put("k10", "own!").ok());  // sorts between k1 and k2
  std::vector<SnapshotArg> args = {SnapshotArg::point("k3"), SnapshotArg::point("zz"),
                                   SnapshotArg::of(TxnRange::closed("k1", "k2")),
                                   SnapshotArg::of(TxnRange::closed("k5", "k9"), 2)};
  TxnSnapshot snap;
  ASSERT_TRUE(t.snapshot(args, &snap).ok());
  ASSERT_EQ(snap.arg_offsets, (SnapshotColumn<std::uint64_t>{0, 1, 2, 5, 7}));
  EXPECT_EQ(snap.key(0), "k3");
  EXPECT_EQ(snap.value(0), "dddd");
  EXPECT_EQ(snap.present[1], 0);
  EXPECT_EQ(snap.key(1), "zz");
  EXPECT_EQ(snap.key(2), "k1");
  EXPECT_EQ(snap.key(3), "k10");
  EXPECT_EQ(snap.value(3), "own!");
  EXPECT_EQ(snap.key(4), "k2");
  EXPECT_EQ(snap.key(5), "k5");
  EXPECT_EQ(snap.key(6), "k6");
  EXPECT_EQ(snap.more[3], 1);
  EXPECT_EQ(snap.resume[3], "k6");
  // Fixed-width form: keys <= 8 bytes, values of one size.
  std::vector<std::uint64_t> fk;
  std::vector<char> fv;
  std::size_t w = 0;
  ASSERT_TRUE(snap.to_fixed(&fk, &fv, &w).ok());
  EXPECT_EQ(w, 4u);
  EXPECT_EQ(fk.size(), snap.size());
  EXPECT_EQ(std::string(fv.data() + 4 * 3, 4), "own!");
  // One packed buffer.
  PackedSnapshot p;
  ASSERT_TRUE(PackedSnapshot::pack(snap, &p).ok());
  EXPECT_EQ(p.slots(), snap.size());
  EXPECT_EQ(p.args(), 4u);
  std::uint64_t off3 = 0;
  std::memcpy(&off3, p.data() + p.key_offsets_at() + 8 * 3, 8);
  EXPECT_EQ(std::string(p.data() + p.key_bytes_at() + off3, 3), "k10");
  std::uint64_t voff = 0;
  std::memcpy(&voff, p.data() + p.value_offsets_at() + 8 * 3, 8);
  EXPECT_EQ(std::string(p.data() + p.value_bytes_at() + voff, 4), "own!");
  EXPECT_EQ(p.data()[p.present_at() + 1], 0);
}

TEST(TxnApi, LargeRangeSnapshotSplitsAcrossThreads) {
  TxnConfig c;
  c.parallel_range_keys = 1000;
  c.snapshot_threads = 4;
  auto s = open_space(c);
  const int n = 5000;
  Txn w;
  ASSERT_TRUE(s->begin(&w).ok());
  for (int i = 0; i < n; ++i) {
    char k[16];
    std::snprintf(k, sizeof k, "r%06d", i);
    ASSERT_TRUE(w.put(k, std::to_string(i)).ok());
  }
  CommitResult r;
  ASSERT_TRUE(w.commit(&r).ok());
  put_commit(*s, "r000007", "changed");  // invisible to the snapshot below? no: it starts later
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  put_commit(*s, "r000008", "after");  // after the start: invisible
  std::vector<SnapshotArg> args = {SnapshotArg::of(TxnRange::all())};
  TxnSnapshot snap;
  ASSERT_TRUE(t.snapshot(args, &snap).ok());
  ASSERT_EQ(snap.size(), static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    char k[16];
    std::snprintf(k, sizeof k, "r%06d", i);
    ASSERT_EQ(snap.key(i), k);
    ASSERT_EQ(snap.value(i), i == 7 ? "changed" : std::to_string(i));
  }
}

// A packed snapshot of more than 4 MiB is copied in pieces by the pool's threads: byte for byte
// the calling thread's copy, every slot readable from the layout; packing again reuses the buffer.
TEST(TxnApi, LargePackedSnapshotIsCopiedByThePool) {
  TxnConfig c;
  c.snapshot_threads = 4;
  auto s = open_space(c);
  const int n = 6000;
  auto value_of = [](int i) { return std::string(700 + i % 200, static_cast<char>('a' + i % 26)); };
  Txn w;
  ASSERT_TRUE(s->begin(&w).ok());
  for (int i = 0; i < n; ++i) {
    char k[16];
    std::snprintf(k, sizeof k, "p%06d", i);
    ASSERT_TRUE(w.put(k, value_of(i)).ok());
  }
  CommitResult r;
  ASSERT_TRUE(w.commit(&r).ok());
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  std::vector<SnapshotArg> args = {SnapshotArg::point("p000003"), SnapshotArg::point("absent"),
                                   SnapshotArg::of(TxnRange::all())};
  TxnSnapshot snap;
  ASSERT_TRUE(t.snapshot(args, &snap).ok());
  ASSERT_EQ(snap.size(), static_cast<std::size_t>(n + 2));
  PackedSnapshot pooled, serial;
  ASSERT_TRUE(PackedSnapshot::pack(snap, &pooled).ok());
  ASSERT_TRUE(PackedSnapshot::pack(snap, &serial, 1).ok());
  ASSERT_GT(pooled.bytes(), std::size_t{4} << 20);
  ASSERT_EQ(pooled.bytes(), serial.bytes());
  EXPECT_EQ(std::memcmp(pooled.data(), serial.data(), pooled.bytes()), 0);
  EXPECT_EQ(pooled.slots(), snap.size());
  EXPECT_EQ(pooled.args(), 3u);
  EXPECT_EQ(pooled.data()[pooled.present_at() + 1], 0);
  for (std::size_t i = 0; i < snap.size(); ++i) {
    std::uint64_t k0, k1, v0, v1;
    std::memcpy(&k0, pooled.data() + pooled.key_offsets_at() + 8 * i, 8);
    std::memcpy(&k1, pooled.data() + pooled.key_offsets_at() + 8 * (i + 1), 8);
    std::memcpy(&v0, pooled.data() + pooled.value_offsets_at() + 8 * i, 8);
    std::memcpy(&v1, pooled.data() + pooled.value_offsets_at() + 8 * (i + 1), 8);
    ASSERT_EQ(std::string_view(pooled.data() + pooled.key_bytes_at() + k0, k1 - k0), snap.key(i)) << i;
    ASSERT_EQ(std::string_view(pooled.data() + pooled.value_bytes_at() + v0, v1 - v0), snap.value(i)) << i;
  }
  // A smaller snapshot packed into the same object reuses its buffer.
  TxnSnapshot one;
  const std::vector<SnapshotArg> point = {SnapshotArg::point("p000005")};
  ASSERT_TRUE(t.snapshot(point, &one).ok());
  const char* buffer = pooled.data();
  ASSERT_TRUE(PackedSnapshot::pack(one, &pooled).ok());
  EXPECT_EQ(pooled.data(), buffer);
  EXPECT_EQ(pooled.slots(), 1u);
  std::uint64_t v1 = 0;
  std::memcpy(&v1, pooled.data() + pooled.value_offsets_at() + 8, 8);
  EXPECT_EQ(std::string_view(pooled.data() + pooled.value_bytes_at(), v1), value_of(5));
}

// Ranges past the serial first part are walked in pieces by prefix at once: with keys of
// one bucket each and keys sharing 8-byte prefixes (buckets of several keys), with bounds that
// cut into such a bucket, exclusive, inclusive and unbounded, the result is the reference's.
TEST(TxnApi, LongRangesWalkedInPiecesMatchTheReference) {
  TxnConfig c;
  c.snapshot_threads = 4;
  auto s = open_space(c);
  std::map<std::string, std::string> ref;
  std::mt19937_64 rng(3);
  Txn w;
  ASSERT_TRUE(s->begin(&w).ok());
  for (int i = 0; i < 12000; ++i) {
    char k[32];
    if (i % 3 == 0) std::snprintf(k, sizeof k, "k%05d", i);  // its own bucket
    else std::snprintf(k, sizeof k, "shared%02d/%05d", static_cast<int>(rng() % 40), i);  // runs of a prefix
    ref[k] = std::to_string(i);
    ASSERT_TRUE(w.put(k, ref[k]).ok());
  }
  CommitResult r;
  ASSERT_TRUE(w.commit(&r).ok());
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  auto check = [&](const TxnRange& range) {
    TxnSnapshot snap;
    std::vector<SnapshotArg> args = {SnapshotArg::of(range)};
    ASSERT_TRUE(t.snapshot(args, &snap).ok());
    std::vector<std::pair<std::string, std::string>> want;
    for (const auto& [k, v] : ref) {
      const bool after = range.start_unbounded || (range.start_inclusive ? k >= range.start : k > range.start);
      const bool before = range.end_unbounded || (range.end_inclusive ? k <= range.end : k < range.end);
      if (after && before) want.emplace_back(k, v);
    }
    ASSERT_EQ(snap.size(), want.size()) << range.start << " .. " << range.end;
    for (std::size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(snap.key(i), want[i].first);
      ASSERT_EQ(snap.value(i), want[i].second);
    }
  };
  check(TxnRange::all());
  check(TxnRange{"k", "shared20/", false, false});
  check(TxnRange{"shared03/00500", "shared31", true, true});
  check(TxnRange{"shared05/", "", true, true, false, true});
  check(TxnRange{"", "shared10/09999", true, false, true, false});
}

// DUET_TEST_SCALE (default 1): the sanitizer runs shrink the concurrent tests with it.
double test_scale() {
  const char* e = std::getenv("DUET_TEST_SCALE");
  return e ? std::atof(e) : 1.0;
}

/// Starts one thread per entry of `done`: thread w commits `per` transactions, the i-th putting
/// key(w, i, k) = "v" for k < keys, then publishes done[w] = i + 1 (release) and calls
/// after(w, i). A refused call or a commit that does not commit sets `bad` and ends the thread;
/// every thread stops once `bad` is set.
template <class Key, class After>
void start_creators(TxnSpace& s, std::span<std::atomic<int>> done, int per, int keys, Key key, std::atomic<bool>& bad,
                    After after, std::vector<std::thread>* ts) {
  for (auto& d : done) d.store(0);
  for (int w = 0; w < static_cast<int>(done.size()); ++w)
    ts->emplace_back([&s, done, &bad, per, keys, key, after, w] {  // done: a view, by value
      for (int i = 0; i < per && !bad; ++i) {
        Txn t;
        CommitResult r;
        bool ok = s.begin(&t).ok();
        for (int k = 0; k < keys && ok; ++k) ok = t.put(key(w, i, k), "v").ok();
        if (!ok || !t.commit(&r).ok() || r.outcome != TxnOutcome::kCommitted) {
          bad = true;
          return;
        }
        done[w].store(i + 1, std::memory_order_release);
        after(w, i);
      }
    });
}

// The point map grows (a new table, twice the size) while writers add keys and readers look
// them up without locks: every key whose commit returned is found by every later transaction,
// on the writer's thread and on the others, across the growths.
TEST(TxnApi, PointMapGrowsWhileReadersRun) {
  auto s = open_space();
  const int per = std::max(500, static_cast<int>(20000 * test_scale()));
  constexpr int kWriters = 3;
  std::atomic<int> done[kWriters];
  std::atomic<bool> stop{false}, bad{false};
  auto key = [](int w, int i, int = 0) { return "w" + std::to_string(w) + "/" + std::to_string(i); };
  std::vector<std::thread> ts;
  start_creators(*s, std::span(done), per, 1, key, bad, [&](int w, int i) {
    if (read_key(*s, key(w, i)) != "v") bad = true;
  }, &ts);
  for (int rd = 0; rd < 2; ++rd)
    ts.emplace_back([&, rd] {
      std::mt19937_64 rng(rd);
      while (!stop && !bad) {
        const int w = static_cast<int>(rng() % kWriters);
        const int n = done[w].load(std::memory_order_acquire);
        if (n == 0) continue;
        if (read_key(*s, key(w, static_cast<int>(rng() % n))) != "v") bad = true;
      }
    });
  for (int w = 0; w < kWriters; ++w) ts[w].join();
  stop = true;
  for (std::size_t i = kWriters; i < ts.size(); ++i) ts[i].join();
  ASSERT_FALSE(bad) << "a committed key was not found";
  EXPECT_EQ(s->size(), static_cast<std::uint64_t>(kWriters * per));
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < per; i += 97) ASSERT_EQ(read_key(*s, key(w, i)), "v") << key(w, i);
}

TEST(TxnApi, ClockNamesParseBothWays) {
  for (TxnClock k : {TxnClock::kCounter, TxnClock::kTsc}) {
    TxnClock back = k == TxnClock::kTsc ? TxnClock::kCounter : TxnClock::kTsc;
    ASSERT_TRUE(parse_txn_clock(txn_clock_name(k), &back).ok());
    EXPECT_EQ(back, k);
  }
  TxnClock c = TxnClock::kCounter;
  EXPECT_TRUE(parse_txn_clock("TSC", &c).ok());
  EXPECT_EQ(c, TxnClock::kTsc);
  const Status bad = parse_txn_clock("sundial", &c);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("counter or tsc"), std::string::npos);
  EXPECT_EQ(c, TxnClock::kTsc);  // unchanged
  TxnConfig cfg;
  cfg.clock = TxnClock::kTsc;
  cfg.tsc_boundary_cycles = (std::uint64_t{1} << 20) + 1;
  std::shared_ptr<TxnSpace> s;
  EXPECT_EQ(TxnSpace::open("t", cfg, &s).code(), StatusCode::kInvalidArgument);
}

TEST(TxnApi, BadInput) {
  TxnConfig c;
  c.limits.max_key_bytes = 16;
  c.limits.max_value_bytes = 32;
  auto s = open_space(c);
  Txn t;
  std::string v;
  bool f;
  EXPECT_EQ(t.get("a", &v, &f).code(), StatusCode::kInvalidArgument) << "use before begin";
  ASSERT_TRUE(s->begin(&t).ok());
  EXPECT_EQ(t.put(std::string(17, 'k'), "v").code(), StatusCode::kTooLarge);
  EXPECT_EQ(t.put("k", std::string(33, 'v')).code(), StatusCode::kTooLarge);
  EXPECT_EQ(t.get("", &v, &f).code(), StatusCode::kInvalidArgument);
  const std::string_view many[] = {"a", std::string_view("kkkkkkkkkkkkkkkkk")};
  std::string vs[2];
  bool fs[2];
  EXPECT_EQ(t.get_many(many, 2, vs, fs).code(), StatusCode::kTooLarge) << "one oversized key refuses the batch";
  EXPECT_EQ(t.scan(TxnRange::closed("z", "a"), 0, nullptr).code(), StatusCode::kInvalidArgument);
  std::vector<SnapshotArg> bad = {SnapshotArg::point("a"), SnapshotArg::of(TxnRange::closed("z", "a"))};
  TxnSnapshot snap;
  EXPECT_EQ(t.snapshot(bad, &snap).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(t.writes().empty()) << "nothing was buffered by the refused calls";
  ASSERT_TRUE(t.put("k", "v").ok());
  CommitResult r;
  ASSERT_TRUE(t.commit(&r).ok());
  EXPECT_EQ(t.commit(&r).code(), StatusCode::kInvalidArgument) << "use after commit";
  EXPECT_EQ(t.put("k", "v").code(), StatusCode::kInvalidArgument);
  TxnConfig badc;
  badc.max_transactions = 0;
  std::shared_ptr<TxnSpace> out;
  EXPECT_EQ(TxnSpace::open("x", badc, &out).code(), StatusCode::kInvalidArgument);
  badc = {};
  badc.limits.max_key_bytes = 1u << 20;
  EXPECT_EQ(TxnSpace::open("x", badc, &out).code(), StatusCode::kInvalidArgument);
}

TEST(TxnApi, SlotsAreBounded) {
  TxnConfig c;
  c.max_transactions = 4;
  auto s = open_space(c);
  std::vector<Txn> ts(5);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(s->begin(&ts[i]).ok());
  EXPECT_EQ(s->begin(&ts[4]).code(), StatusCode::kResourceExhausted);
  ts[0].abort();
  EXPECT_TRUE(s->begin(&ts[4]).ok());
}

TEST(TxnApi, MemoryBudgetAbortsTheCommit) {
  TxnConfig c;
  c.memory_budget_bytes = 4096;
  auto s = open_space(c);
  put_commit(*s, "small", "v");
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  ASSERT_TRUE(t.put("big", std::string(8192, 'x')).ok());
  CommitResult r;
  EXPECT_EQ(t.commit(&r).code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(t.active());
  EXPECT_EQ(read_key(*s, "big"), std::nullopt);
  EXPECT_EQ(read_key(*s, "small"), "v");
}

TEST(TxnApi, CollectionFreesOnlyBelowTheOldestStart) {
  TxnConfig c;
  c.background_gc = false;
  auto s = open_space(c);
  put_commit(*s, "k", "0");
  Txn holder;
  ASSERT_TRUE(s->begin(&holder).ok());
  for (int i = 1; i <= 100; ++i) put_commit(*s, "k", std::to_string(i));
  EXPECT_EQ(s->stats().versions, 101u);
  s->collect();
  EXPECT_EQ(s->stats().versions, 101u) << "the holder sees version 0; everything above it may be read by someone";
  std::string v;
  bool f;
  ASSERT_TRUE(holder.get("k", &v, &f).ok());
  EXPECT_EQ(v, "0");
  holder.abort();
  s->collect();
  EXPECT_EQ(s->stats().versions, 1u);
  EXPECT_EQ(s->stats().reclaimed, 100u);
  EXPECT_EQ(read_key(*s, "k"), "100");
}

TEST(TxnApi, CommittersFreeVersionsBelowTheCollectionFloor) {
  TxnConfig c;
  c.background_gc = false;  // no collector: only committers free
  c.gc_watermark = 64;      // folds (and floor updates) at every commit
  auto s = open_space(c);
  for (int i = 0; i < 10; ++i) put_commit(*s, "k", std::to_string(i));
  // Each commit cut what lay below the previous head once the floor passed it.
  EXPECT_LE(s->stats().versions, 2u);
  EXPECT_GE(s->stats().reclaimed, 8u);
  Txn holder;  // pins the floor at its start: sees "9"
  ASSERT_TRUE(s->begin(&holder).ok());
  for (int i = 10; i < 20; ++i) put_commit(*s, "k", std::to_string(i));
  EXPECT_EQ(s->stats().versions, 11u) << "the holder's version and every newer one stay";
  std::string v;
  bool f = false;
  ASSERT_TRUE(holder.get("k", &v, &f).ok());
  EXPECT_EQ(v, "9");
  holder.abort();
  for (int i = 20; i < 23; ++i) put_commit(*s, "k", std::to_string(i));
  EXPECT_LE(s->stats().versions, 3u) << "the floor moved past the holder's start";
  EXPECT_EQ(read_key(*s, "k"), "22");
  EXPECT_EQ(s->stats().obsolete_versions + 1, s->stats().versions);
}

// The negative controls plant faults that let a reader hold a version no start protects (a
// read_latest reader holding the newest version while newer commits land). Committers must
// free nothing under such a fault, or the control reads freed memory (seen once under TSan).
TEST(TxnApi, CommittersFreeNothingUnderAPlantedReadFault) {
  for (int fault = 0; fault < 3; ++fault) {
    TxnConfig c;
    c.background_gc = false;
    c.gc_watermark = 64;
    c.faults.read_latest = fault == 0;
    c.faults.ts_before_locks = fault == 1;
    c.faults.install_after_unlock = fault == 2;
    auto s = open_space(c);
    for (int i = 0; i < 10; ++i) put_commit(*s, "k", std::to_string(i));
    EXPECT_EQ(s->stats().reclaimed, 0u) << "fault " << fault;
    EXPECT_EQ(s->stats().versions, 10u) << "fault " << fault;
  }
}

TEST(TxnApi, VersionBudgetAbortsTheOldestAsSnapshotTooOld) {
  TxnConfig c;
  c.background_gc = false;
  c.max_obsolete_versions = 10;
  auto s = open_space(c);
  put_commit(*s, "k", "0");
  Txn old;
  ASSERT_TRUE(s->begin(&old).ok());
  for (int i = 1; i <= 50; ++i) put_commit(*s, "k", std::to_string(i));
  s->collect();
  std::string v;
  bool f;
  Status st = old.get("k", &v, &f);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("snapshot too old"), std::string::npos);
  EXPECT_FALSE(old.active());
  s->collect();
  EXPECT_LE(s->stats().obsolete_versions, 10u);
  EXPECT_EQ(s->stats().too_old, 1u);
}

TEST(TxnApi, SnapshotAgeAbortsTheOldest) {
  TxnConfig c;
  c.background_gc = false;
  c.max_snapshot_age_ms = 1;
  auto s = open_space(c);
  put_commit(*s, "k", "0");
  Txn old;
  ASSERT_TRUE(s->begin(&old).ok());
  put_commit(*s, "k", "1");
  // Age is wall time: wait until it has certainly passed (bounded by the test's timeout).
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(3)) std::this_thread::yield();
  s->collect();
  CommitResult r;
  ASSERT_TRUE(old.commit(&r).ok());
  EXPECT_EQ(r.outcome, TxnOutcome::kSnapshotTooOld);
}

TEST(TxnApi, CursorScanSeesPresentKeys) {
  auto s = open_space();
  for (int i = 0; i < 100; ++i) put_commit(*s, "c" + std::to_string(i), "v");
  {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    ASSERT_TRUE(t.del("c5").ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
  }
  std::vector<std::string> keys;
  std::uint64_t cur = 0;
  do {
    ASSERT_TRUE(s->scan(cur, 7, &keys, &cur).ok());
  } while (cur != 0);
  EXPECT_EQ(keys.size(), 99u);
  EXPECT_EQ(std::count(keys.begin(), keys.end(), "c5"), 0);
}

// The creation log behind the cursor is lock-free: writers claim positions and make its chunks
// (4,096 entries each) while a scanner walks it. Each full pass returns no key twice and every
// key whose commit returned before the pass began.
TEST(TxnApi, CursorScanUnderCreatorsSeesEachEarlierKeyOnce) {
  auto s = open_space();
  const int per = std::max(300, static_cast<int>(3000 * test_scale()));  // transactions per writer
  constexpr int kWriters = 3, kKeys = 8;                                 // keys per transaction
  std::atomic<int> done[kWriters];
  std::atomic<bool> bad{false};
  auto key = [](int w, int i, int k) { return std::to_string(w) + "/" + std::to_string(i) + "/" + std::to_string(k); };
  std::vector<std::thread> ts;
  start_creators(*s, std::span(done), per, kKeys, key, bad, [](int, int) {}, &ts);
  int passes = 0;
  std::string failure;
  for (bool last = false; !last && failure.empty();) {
    last = std::all_of(done, done + kWriters, [&](const std::atomic<int>& d) { return d.load() == per; }) || bad;
    int before[kWriters];
    for (int w = 0; w < kWriters; ++w) before[w] = done[w].load(std::memory_order_acquire);
    std::vector<std::string> keys;
    std::uint64_t cur = 0;
    do {
      if (!s->scan(cur, 500, &keys, &cur).ok()) failure = "scan failed";
    } while (cur != 0 && failure.empty());
    std::sort(keys.begin(), keys.end());
    if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) failure = "a key came twice in one pass";
    for (int w = 0; w < kWriters && failure.empty(); ++w)
      for (int i = 0; i < before[w] && failure.empty(); ++i)
        for (int k = 0; k < kKeys; ++k)
          if (!std::binary_search(keys.begin(), keys.end(), key(w, i, k))) {
            failure = "pass " + std::to_string(passes) + " missed " + key(w, i, k);
            break;
          }
    ++passes;
  }
  bad = bad || !failure.empty();
  for (auto& t : ts) t.join();
  EXPECT_EQ(failure, "");
  EXPECT_GT(passes, 1);
  EXPECT_EQ(s->size(), static_cast<std::uint64_t>(kWriters * per * kKeys));
}

TEST(TxnApi, RealTimeReaderWaitsForInstallOfAnEarlierTimestamp) {
  // A reader that begins once the committer holds its timestamp (every lock held, nothing
  // installed) must see the write: it waits for the install instead of passing the key.
  TxnConfig c;
  std::shared_ptr<TxnSpace> s;
  std::optional<std::string> seen;
  std::thread reader;
  c.faults.hook = [&](std::string_view step, std::string_view) {
    if (step != "ts") return;
    reader = std::thread([&] { seen = read_key(*s, "x"); });
    // Give the reader a chance to reach the key while it is locked (whether it does or not,
    // it must see the write: its start is >= the timestamp).
    for (int i = 0; i < 1000; ++i) std::this_thread::yield();
  };
  ASSERT_TRUE(TxnSpace::open("t", c, &s).ok());
  put_commit(*s, "x", "new");
  reader.join();
  EXPECT_EQ(seen, "new");
}

// ---- Reference model: interleaved transactions on one thread against a model of SI.

struct ModelTxn {
  std::size_t start;  // index into history of committed states
  std::map<std::string, std::optional<std::string>> writes;
};

// The commit observer: it sees every writing commit once, the write sets of one key in
// timestamp order, deletes as nullopt; after wait_commits(S) it has seen every timestamp up to
// S (writing commits take consecutive timestamps 1, 2, ...). Two observers see the same commits;
// removing one stops its calls and not the other's; at most kMaxCommitObservers at once.
TEST(TxnApi, CommitObserverSeesEachKeyInOrderAndWaitCommitsCoversAStart) {
  struct Recorder : TxnCommitObserver {
    std::mutex m;
    std::map<std::string, std::uint64_t> last;  // key -> newest ts seen
    std::vector<std::uint64_t> seen;            // every ts, in call order
    std::uint64_t out_of_order = 0, deletes = 0;
    void on_commit(std::uint64_t ts,
                   const std::map<std::string, std::optional<std::string>, std::less<>>& writes) override {
      std::lock_guard<std::mutex> lk(m);
      seen.push_back(ts);
      for (const auto& [k, v] : writes) {
        std::uint64_t& l = last[k];
        out_of_order += l >= ts;
        l = ts;
        deletes += !v.has_value();
      }
    }
  };
  auto s = open_space();
  auto rec = std::make_shared<Recorder>();
  auto rec2 = std::make_shared<Recorder>();  // a second observer sees the same calls
  ASSERT_TRUE(s->add_commit_observer(rec).ok());
  ASSERT_TRUE(s->add_commit_observer(rec2).ok());
  EXPECT_EQ(s->add_commit_observer(rec).code(), StatusCode::kInvalidArgument);  // already there
  EXPECT_EQ(s->add_commit_observer(nullptr).code(), StatusCode::kInvalidArgument);
  std::atomic<unsigned> done{0};
  std::vector<std::thread> writers;
  for (unsigned w = 0; w < 3; ++w)
    writers.emplace_back([&, w] {
      std::mt19937_64 rng(w + 1);
      Txn t;
      for (int i = 0; i < 2000; ++i) {
        ASSERT_TRUE(s->begin(&t).ok());
        for (unsigned j = 0; j < 1 + rng() % 3; ++j) {
          const std::string k = "k" + std::to_string(rng() % 20);
          ASSERT_TRUE(rng() % 5 == 0 ? t.del(k).ok() : t.put(k, std::to_string(i)).ok());
        }
        CommitResult r;
        ASSERT_TRUE(t.commit(&r).ok());
      }
      ++done;
    });
  std::size_t checks = 0, missing = 0;
  while (done.load() < 3 || checks < 10) {
    Txn t;
    ASSERT_TRUE(s->begin(&t).ok());
    s->wait_commits(t.start_ts());
    std::lock_guard<std::mutex> lk(rec->m);
    const auto up_to = static_cast<std::size_t>(
        std::count_if(rec->seen.begin(), rec->seen.end(), [&](std::uint64_t x) { return x <= t.start_ts(); }));
    missing += t.start_ts() - up_to;
    ++checks;
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(missing, 0u) << "timestamps <= a waited-for start not yet seen, over " << checks << " checks";
  std::size_t calls = 0;
  {
    std::lock_guard<std::mutex> lk(rec->m);
    EXPECT_EQ(rec->out_of_order, 0u);
    EXPECT_GT(rec->deletes, 0u);
    std::vector<std::uint64_t> sorted = rec->seen;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // each once
    EXPECT_EQ(sorted.back(), s->now());
    calls = rec->seen.size();
  }
  {
    std::lock_guard<std::mutex> lk(rec2->m);
    std::vector<std::uint64_t> a = rec->seen, b = rec2->seen;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "both observers see every commit";
    EXPECT_EQ(rec2->out_of_order, 0u);
  }
  // Removing one leaves the other; a removed one is not an observer any more.
  ASSERT_TRUE(s->remove_commit_observer(rec.get()).ok());
  EXPECT_EQ(s->remove_commit_observer(rec.get()).code(), StatusCode::kNotFound);
  put_commit(*s, "after", "x");
  {
    std::lock_guard<std::mutex> lk(rec->m);
    EXPECT_EQ(rec->seen.size(), calls);
  }
  {
    std::lock_guard<std::mutex> lk(rec2->m);
    EXPECT_EQ(rec2->seen.size(), calls + 1);
  }
  ASSERT_TRUE(s->remove_commit_observer(rec2.get()).ok());
  // At most kMaxCommitObservers at once.
  std::vector<std::shared_ptr<Recorder>> many;
  for (std::size_t i = 0; i < TxnSpace::kMaxCommitObservers; ++i) {
    many.push_back(std::make_shared<Recorder>());
    ASSERT_TRUE(s->add_commit_observer(many.back()).ok());
  }
  EXPECT_EQ(s->add_commit_observer(std::make_shared<Recorder>()).code(), StatusCode::kInvalidArgument);
  put_commit(*s, "many", "x");
  for (auto& r : many) {
    std::lock_guard<std::mutex> lk(r->m);
    EXPECT_EQ(r->seen.size(), 1u);
  }
}

// A commit makes the entries of its new keys before it locks any key: index inserts can block
// (the index growing), and a lock held meanwhile kept every other committer of that key waiting
// (docs/txn.md, "Commit"). At the first "locked" step every new key of the write set already
// has its entry (TxnStats::keys counts entries, with or without a version).
TEST(TxnApi, NewKeysGetEntriesBeforeAnyLockIsTaken) {
  std::shared_ptr<TxnSpace> s;
  std::vector<std::uint64_t> keys_at_lock;
  TxnConfig c;
  c.background_gc = false;
  c.faults.hook = [&](std::string_view step, std::string_view) {
    if (step == "locked") keys_at_lock.push_back(s->stats().keys);
  };
  ASSERT_TRUE(TxnSpace::open("t", c, &s).ok());
  put_commit(*s, "old", "1");  // one existing key, locked first (key order)
  keys_at_lock.clear();
  Txn t;
  ASSERT_TRUE(s->begin(&t).ok());
  ASSERT_TRUE(t.put("old", "2").ok());
  for (const char* k : {"p1", "p2", "p3"}) ASSERT_TRUE(t.put(k, "x").ok());
  CommitResult r;
  ASSERT_TRUE(t.commit(&r).ok());
  ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
  ASSERT_EQ(keys_at_lock.size(), 4u);
  for (std::uint64_t k : keys_at_lock) EXPECT_EQ(k, 4u) << "a new key's entry was made with a lock held";
}

// A commit that finds its key locked by another committer counts one lock wait, and waits
// (pauses, yields, sleeps) until the holder unlocks; then it validates and loses (first
// updater wins).
TEST(TxnApi, ALockedKeyIsCountedAsALockWait) {
  std::shared_ptr<TxnSpace> s;
  std::atomic<std::thread::id> holder{};
  std::atomic<bool> locked{false};
  TxnConfig c;
  c.background_gc = false;
  c.faults.hook = [&](std::string_view step, std::string_view) {
    if (step != "locked" || std::this_thread::get_id() != holder.load()) return;
    // The first committer holds the key until the second has counted its wait (bounded).
    locked = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (s->stats().lock_waits == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  };
  ASSERT_TRUE(TxnSpace::open("t", c, &s).ok());
  put_commit(*s, "k", "0");
  Txn a, b;
  ASSERT_TRUE(s->begin(&a).ok());
  ASSERT_TRUE(s->begin(&b).ok());
  ASSERT_TRUE(a.put("k", "a").ok());
  ASSERT_TRUE(b.put("k", "b").ok());
  std::thread first([&] {
    holder = std::this_thread::get_id();
    CommitResult r;
    ASSERT_TRUE(a.commit(&r).ok());
    EXPECT_EQ(r.outcome, TxnOutcome::kCommitted);
  });
  while (!locked.load()) std::this_thread::yield();
  // a holds k: b's commit finds it locked, counts the wait, waits, and then loses.
  CommitResult rb;
  ASSERT_TRUE(b.commit(&rb).ok());
  first.join();
  EXPECT_EQ(rb.outcome, TxnOutcome::kConflict);
  EXPECT_EQ(s->stats().lock_waits, 1u);
  EXPECT_EQ(s->stats().lock_waits_collector, 0u);
}

TEST(TxnApi, AgreesWithAReferenceModel) {
  TxnConfig c;
  c.gc_watermark = 16;
  auto s = open_space(c);
  std::mt19937_64 rng(7);
  std::vector<std::map<std::string, std::string>> states(1);  // committed states in order
  std::map<std::string, std::size_t> last_write;              // key -> state index that wrote it
  constexpr int kOpen = 4;
  std::vector<Txn> txns(kOpen);
  std::vector<ModelTxn> model(kOpen);
  std::vector<bool> open(kOpen, false);
  auto key = [&] { return "m" + std::to_string(rng() % 40); };
  const int steps = 20000;
  for (int step = 0; step < steps; ++step) {
    const int i = static_cast<int>(rng() % kOpen);
    if (!open[i]) {
      ASSERT_TRUE(s->begin(&txns[i]).ok());
      model[i] = ModelTxn{states.size() - 1, {}};
      open[i] = true;
      continue;
    }
    auto view = [&](const std::string& k) -> std::optional<std::string> {
      if (auto w = model[i].writes.find(k); w != model[i].writes.end()) return w->second;
      const auto& st = states[model[i].start];
      auto it = st.find(k);
      return it == st.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    switch (rng() % 8) {
      case 0: {
        const std::string k = key();
        std::string v;
        bool f;
        ASSERT_TRUE(txns[i].get(k, &v, &f).ok());
        auto want = view(k);
        ASSERT_EQ(f, want.has_value()) << k;
        if (f) {
          ASSERT_EQ(v, *want);
        }
        break;
      }
      case 1: {  // get_many: 1 to 70 keys, repeats allowed (more than one batch of lookups)
        const std::size_t n = 1 + rng() % 70;
        std::vector<std::string> ks(n);
        std::vector<std::string_view> kv(n);
        for (std::size_t j = 0; j < n; ++j) kv[j] = ks[j] = key();
        std::vector<std::string> vs(n, "stale");
        std::unique_ptr<bool[]> fs(new bool[n]);
        ASSERT_TRUE(txns[i].get_many(kv.data(), n, vs.data(), fs.get()).ok());
        for (std::size_t j = 0; j < n; ++j) {
          auto want = view(ks[j]);
          ASSERT_EQ(fs[j], want.has_value()) << ks[j];
          ASSERT_EQ(vs[j], want.value_or("")) << ks[j];
        }
        break;
      }
      case 2:
      case 3: {
        const std::string k = key(), v = std::to_string(rng() % 1000);
        ASSERT_TRUE(txns[i].put(k, v).ok());
        model[i].writes[k] = v;
        break;
      }
      case 4: {
        const std::string k = key();
        ASSERT_TRUE(txns[i].del(k).ok());
        model[i].writes[k] = std::nullopt;
        break;
      }
      case 5: {
        std::string a = key(), b = key();
        if (a > b) std::swap(a, b);
        const std::size_t limit = rng() % 4;
        std::vector<std::pair<std::string, std::string>> out;
        bool more = false;
        ASSERT_TRUE(txns[i].scan(TxnRange::closed(a, b), limit, &out, &more).ok());
        std::vector<std::pair<std::string, std::string>> want;
        std::map<std::string, std::string> merged = states[model[i].start];
        for (auto& [k, w] : model[i].writes) {
          if (w) merged[k] = *w;
          else merged.erase(k);
        }
        for (auto it = merged.lower_bound(a); it != merged.end() && it->first <= b; ++it) want.push_back(*it);
        const bool cut = limit && want.size() > limit;
        if (cut) want.resize(limit);
        ASSERT_EQ(out, want);
        ASSERT_EQ(more, cut);
        break;
      }
      case 6: {
        txns[i].abort();
        open[i] = false;
        break;
      }
      default: {
        CommitResult r;
        ASSERT_TRUE(txns[i].commit(&r).ok());
        bool conflict = false;
        for (auto& [k, w] : model[i].writes)
          if (auto it = last_write.find(k); it != last_write.end() && it->second > model[i].start) conflict = true;
        ASSERT_EQ(r.outcome, conflict ? TxnOutcome::kConflict : TxnOutcome::kCommitted);
        if (!conflict && !model[i].writes.empty()) {
          auto next = states.back();
          for (auto& [k, w] : model[i].writes) {
            if (w) next[k] = *w;
            else next.erase(k);
            last_write[k] = states.size();
          }
          states.push_back(std::move(next));
        }
        open[i] = false;
      }
    }
    if (step % 1000 == 0) s->collect();
  }
}

}  // namespace
}  // namespace duet
