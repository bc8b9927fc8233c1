// SnapKV's index, slots, reads and collector (docs/txn.md, "Protocol" and "Versions").
#include "txn/core.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

#include "sched/striped_shared_mutex.hpp"
#include "sched/thread_pool.hpp"

namespace duet::txn {

namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

/// A small number per thread, 0, 1, 2, ... in the order threads first ask: the starting point
/// of each thread's probe for a session stripe and a transaction slot, so that threads start
/// apart. (A hash of std::thread::id does not: it is the thread's stack address, aligned
/// alike for every thread, so all threads started at one stripe and fought over it.)
unsigned thread_ordinal() {
  static std::atomic<unsigned> next{0};
  thread_local const unsigned mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

}  // namespace

Version* Version::make(std::string_view value, bool tombstone) {
  void* p = ::operator new(sizeof(Version) + value.size(), std::nothrow);
  if (p == nullptr) return nullptr;
  auto* v = new (p) Version{0, {nullptr}, value.size(), tombstone};
  if (!value.empty()) std::memcpy(v->data(), value.data(), value.size());
  return v;
}

Entry* Entry::make(std::string_view key) {
  void* p = ::operator new(sizeof(Entry) + key.size());
  auto* e = new (p) Entry();
  e->key_len = static_cast<std::uint32_t>(key.size());
  if (!key.empty()) std::memcpy(reinterpret_cast<char*>(e + 1), key.data(), key.size());
  return e;
}

void Entry::destroy(Entry* e) {
  Version* v = e->head.load(std::memory_order_relaxed);
  while (v != nullptr) {
    Version* o = v->older.load(std::memory_order_relaxed);
    Version::destroy(v);
    v = o;
  }
  e->~Entry();
  ::operator delete(e);
}

std::uint64_t prefix_of(std::string_view key) {
  std::uint64_t p = 0;
  const std::size_t n = std::min<std::size_t>(key.size(), 8);
  for (std::size_t i = 0; i < n; ++i) p |= std::uint64_t(static_cast<unsigned char>(key[i])) << (56 - 8 * i);
  return p;
}

// ---------------------------------------------------------------- Index

/// A LIT session borrowed from the pool for the caller's scope: the thread's own stripe when
/// free, else the next free one, else it waits for its own.
class Index::SessionRef {
 public:
  explicit SessionRef(Index& ix) {
    const unsigned hint = thread_ordinal();
    const std::size_t n = ix.pool_.size();
    for (std::size_t i = 0; i < n; ++i) {
      PoolSlot* p = ix.pool_[(hint + i) % n].get();
      if (p->m.try_lock()) {
        slot_ = p;
        return;
      }
    }
    slot_ = ix.pool_[hint % n].get();
    slot_->m.lock();
  }
  ~SessionRef() { slot_->m.unlock(); }
  lit::Session* operator->() { return slot_->s.get(); }

 private:
  PoolSlot* slot_;
};

Status Index::init() {
  lit::Config c;
  c.predicted_min = 0;
  c.predicted_max = (std::uint64_t{1} << 63) - 1;  // ASCII keys; others go to the last bucket, which splits
  c.buckets = 4096;
  // The ordered map grows by splits only (the seed's depth rule): with keys appended in
  // ascending order (ids), the load-factor resize spans the keys seen so far and every later
  // key lands past its last bucket, which then splits and walks far more than splits alone.
  c.resize_load = 0;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t pool = std::min<std::size_t>(4 * hw, 256);
  c.max_sessions = pool + 8;
  Status s = lit::Map::create(c, &map_);
  if (!s.ok()) return s;
  for (std::size_t i = 0; i < pool; ++i) {
    auto p = std::make_unique<PoolSlot>();
    s = map_->open_session(&p->s);
    if (!s.ok()) return s;
    pool_.push_back(std::move(p));
  }
  points_ = std::make_unique<PointMap>();
  // The log's directory: zeroed memory is null chunk pointers, and the pages past the first
  // are mapped only when a chunk is made there.
  log_ = static_cast<std::atomic<std::atomic<Entry*>*>*>(std::calloc(kLogChunks, sizeof(std::atomic<Entry*>*)));
  if (log_ == nullptr) return Status::ResourceExhausted("txn index: out of memory for the creation log");
  return Status::Ok();
}

Index::~Index() {
  if (log_ != nullptr) {
    const std::uint64_t chunks = (n_entries_.load() + kLogChunk - 1) / kLogChunk;
    for (std::uint64_t c = 0; c < chunks; ++c) {
      std::atomic<Entry*>* chunk = log_[c].load();
      if (chunk == nullptr) continue;
      for (std::uint64_t i = 0; i < kLogChunk; ++i)
        if (Entry* e = chunk[i].load()) Entry::destroy(e);
      std::free(chunk);
    }
    std::free(log_);
  }
  for (Bucket* b = made_buckets_.load(); b != nullptr;) {
    Bucket* next = b->next_made;
    delete b;
    b = next;
  }
  pool_.clear();  // sessions before the map
  map_.reset();
  points_.reset();
}

Bucket* Index::bucket_of(std::uint64_t prefix) {
  SessionRef s(*this);
  std::uint64_t v = 0;
  return s->get(prefix, &v) == lit::Result::kOk ? reinterpret_cast<Bucket*>(v) : nullptr;
}

Bucket* Index::bucket_or_insert(std::uint64_t prefix) {
  if (Bucket* b = bucket_of(prefix)) return b;
  auto* fresh = new Bucket();
  SessionRef s(*this);
  if (s->insert(prefix, reinterpret_cast<std::uint64_t>(fresh)) == lit::Result::kOk) {
    for (std::uint64_t m = min_prefix_.load(std::memory_order_relaxed);
         prefix < m && !min_prefix_.compare_exchange_weak(m, prefix, std::memory_order_relaxed);) {
    }
    for (std::uint64_t m = max_prefix_.load(std::memory_order_relaxed);
         prefix > m && !max_prefix_.compare_exchange_weak(m, prefix, std::memory_order_relaxed);) {
    }
    fresh->next_made = made_buckets_.load(std::memory_order_relaxed);
    while (!made_buckets_.compare_exchange_weak(fresh->next_made, fresh, std::memory_order_relaxed)) {
    }
    n_buckets_.fetch_add(1, std::memory_order_relaxed);
    return fresh;
  }
  delete fresh;  // a racing insert won
  std::uint64_t v = 0;
  (void)s->get(prefix, &v);  // present: buckets are never removed
  return reinterpret_cast<Bucket*>(v);
}

namespace {

/// 63 bits of a 64-bit FNV-1a hash, finalised with MurmurHash3's mixer.
std::uint64_t point_hash(std::string_view key) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h >> 1;
}

}  // namespace

/// The point map: key hash -> the first entry of its hash chain. Insert-only open addressing
/// (linear probing) whose reads take no lock: a slot's key is claimed by CAS and its entry
/// published by a release store, so a reader sees either an empty or claimed-but-unpublished
/// slot (the key is absent to it: the entry's first version is committed only after
/// publication) or the entry. Inserts hold `resize` shared; growth holds it exclusive, copies
/// every slot into a table twice the size and publishes it. Old tables stay allocated until the
/// index is destroyed (a reader may still be probing one), at most as much again as the
/// current table.
struct Index::PointMap {
  /// 32 bytes, so that a slot never straddles two cache lines.
  struct alignas(32) Slot {
    std::atomic<std::uint64_t> key{0};  ///< hash + 1; 0: empty
    std::atomic<Entry*> entry{nullptr};
    /// The newest version of `entry` as its last committer left it: a prefetch hint only,
    /// never dereferenced. A reader starts loading it together with the entry, so reading
    /// the newest version costs the slot's miss and one more (entry and version in parallel),
    /// not three dependent misses. Stale after a table growth or for chained entries; the
    /// reader trusts only the entry's own head.
    std::atomic<Version*> head{nullptr};
  };
  /// A power-of-two array of slots. Tables of 2 MiB and more are 2 MiB aligned and asked to
  /// be backed by huge pages: a probe of a large table is a random access, and with 4 KiB
  /// pages each one also missed the TLB.
  struct Table {
    std::uint64_t mask;
    Slot* slots;
    explicit Table(std::uint64_t cap) : mask(cap - 1) {
      constexpr std::size_t kHuge = std::size_t{2} << 20;
      const std::size_t bytes = cap * sizeof(Slot);
      void* p = bytes >= kHuge ? std::aligned_alloc(kHuge, bytes) : std::aligned_alloc(alignof(Slot), bytes);
      if (p == nullptr) throw std::bad_alloc();
      if (bytes >= kHuge) (void)madvise(p, bytes, MADV_HUGEPAGE);
      slots = static_cast<Slot*>(p);
      for (std::uint64_t i = 0; i < cap; ++i) new (&slots[i]) Slot();
    }
    ~Table() { std::free(slots); }
    Table(const Table&) = delete;
    Table& operator=(const Table&) = delete;
  };
  std::atomic<Table*> cur{nullptr};
  std::vector<std::unique_ptr<Table>> tables;  ///< every table made (under resize)
  /// Every insert holds it shared, so it is striped: a std::shared_mutex made each of them an
  /// atomic read-modify-write of one line that every inserting thread shares.
  sched::StripedSharedMutex resize;
  std::atomic<std::uint64_t> used{0};

  PointMap() {
    tables.push_back(std::make_unique<Table>(std::uint64_t{1} << 12));
    cur.store(tables.back().get(), std::memory_order_release);
  }

  /// Starts loading the line where a probe for hash h begins.
  void prefetch(std::uint64_t h) const {
    const Table* t = cur.load(std::memory_order_acquire);
    __builtin_prefetch(&t->slots[h & t->mask]);
  }

  /// The slot of hash h, or null.
  Slot* find(std::uint64_t h) const {
    const Table* t = cur.load(std::memory_order_acquire);
    for (std::uint64_t i = h & t->mask;; i = (i + 1) & t->mask) {
      const std::uint64_t k = t->slots[i].key.load(std::memory_order_acquire);
      if (k == 0) return nullptr;
      if (k == h + 1) return &t->slots[i];
    }
  }

  /// Publishes e under h; false when h already has an entry (*first is set to it). *slot is
  /// set to the slot that holds h.
  bool insert(std::uint64_t h, Entry* e, Entry** first, Slot** slot) {
    for (;;) {
      {
        std::shared_lock<sched::StripedSharedMutex> lk(resize);
        Table* t = cur.load(std::memory_order_acquire);
        if ((used.load(std::memory_order_relaxed) + 1) * 2 <= t->mask + 1) {
          for (std::uint64_t i = h & t->mask;; i = (i + 1) & t->mask) {
            std::uint64_t k = t->slots[i].key.load(std::memory_order_acquire);
            if (k == 0 && t->slots[i].key.compare_exchange_strong(k, h + 1, std::memory_order_acq_rel)) {
              t->slots[i].entry.store(e, std::memory_order_release);
              used.fetch_add(1, std::memory_order_relaxed);
              *slot = &t->slots[i];
              return true;
            }
            if (k == h + 1) {  // another key with this hash: wait for its entry's publication
              Entry* f;
              while ((f = t->slots[i].entry.load(std::memory_order_acquire)) == nullptr) _mm_pause();
              *first = f;
              *slot = &t->slots[i];
              return false;
            }
          }
        }
      }
      grow();
    }
  }

  void grow() {
    std::unique_lock<sched::StripedSharedMutex> lk(resize);
    Table* t = cur.load(std::memory_order_relaxed);
    if ((used.load(std::memory_order_relaxed) + 1) * 2 <= t->mask + 1) return;  // another thread grew it
    auto n = std::make_unique<Table>((t->mask + 1) * 2);
    for (std::uint64_t i = 0; i <= t->mask; ++i) {
      const std::uint64_t k = t->slots[i].key.load(std::memory_order_relaxed);
      if (k == 0) continue;
      std::uint64_t j = (k - 1) & n->mask;
      while (n->slots[j].key.load(std::memory_order_relaxed) != 0) j = (j + 1) & n->mask;
      n->slots[j].key.store(k, std::memory_order_relaxed);
      n->slots[j].entry.store(t->slots[i].entry.load(std::memory_order_relaxed), std::memory_order_relaxed);
      n->slots[j].head.store(t->slots[i].head.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }
    cur.store(n.get(), std::memory_order_release);
    tables.push_back(std::move(n));
  }
};

Entry* Index::find_hashed(std::string_view key, std::uint64_t h, std::atomic<Version*>** head_hint) {
  PointMap::Slot* s = points_->find(h);
  if (s == nullptr) return nullptr;
  Entry* first = s->entry.load(std::memory_order_acquire);
  // Start the newest version's miss now, beside the entry's (the key compare below).
  __builtin_prefetch(s->head.load(std::memory_order_relaxed));
  for (Entry* e = first; e != nullptr; e = e->hash_next.load(std::memory_order_acquire))
    if (e->key() == key) {
      if (head_hint) *head_hint = e == first ? &s->head : nullptr;
      return e;
    }
  return nullptr;
}

Entry* Index::find(std::string_view key) { return find_hashed(key, point_hash(key), nullptr); }

void Index::find_many(const std::string_view* keys, std::size_t n, Entry** out, std::atomic<Version*>** hints) {
  std::uint64_t h[kFindMany];
  PointMap::Slot* slot[kFindMany];
  n = std::min(n, kFindMany);
  for (std::size_t i = 0; i < n; ++i) {
    h[i] = point_hash(keys[i]);
    points_->prefetch(h[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    slot[i] = points_->find(h[i]);
    if (slot[i] == nullptr) continue;
    __builtin_prefetch(slot[i]->entry.load(std::memory_order_relaxed));
    __builtin_prefetch(slot[i]->head.load(std::memory_order_relaxed));
  }
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = nullptr;
    if (hints) hints[i] = nullptr;
    if (slot[i] == nullptr) continue;
    Entry* const first = slot[i]->entry.load(std::memory_order_acquire);
    for (Entry* e = first; e != nullptr; e = e->hash_next.load(std::memory_order_acquire))
      if (e->key() == keys[i]) {
        out[i] = e;
        if (hints && e == first) hints[i] = &slot[i]->head;
        break;
      }
  }
}

Entry* Index::find_or_insert(std::string_view key, bool* created, std::atomic<Version*>** head_hint) {
  *created = false;
  std::atomic<Version*>* hint_dummy = nullptr;
  if (head_hint == nullptr) head_hint = &hint_dummy;
  *head_hint = nullptr;
  const std::uint64_t h = point_hash(key);
  if (Entry* e = find_hashed(key, h, head_hint)) return e;
  Bucket* b = bucket_or_insert(prefix_of(key));
  {
    std::shared_lock<std::shared_mutex> lk(b->m);
    auto it = b->keys.find(key);
    if (it != b->keys.end()) return it->second;
  }
  std::unique_lock<std::shared_mutex> lk(b->m);
  auto it = b->keys.find(key);
  if (it != b->keys.end()) return it->second;
  Entry* e = Entry::make(key);
  b->keys.emplace(e->key(), e);
  b->only.store(b->keys.size() == 1 ? e : nullptr, std::memory_order_release);
  *created = true;
  // Publish in the point index (still under the bucket's lock, so a key is published once).
  PointMap::Slot* slot = nullptr;
  if (Entry* tail = nullptr; points_->insert(h, e, &tail, &slot)) {
    *head_hint = &slot->head;
  } else {  // another key with this hash: chain e (its versions get no hint)
    for (;;) {
      Entry* expect = nullptr;
      if (tail->hash_next.compare_exchange_strong(expect, e, std::memory_order_acq_rel)) break;
      tail = expect;
    }
  }
  log_append(e);
  return e;
}

static_assert(std::atomic<Entry*>::is_always_lock_free && sizeof(std::atomic<Entry*>) == sizeof(Entry*),
              "the creation log takes zeroed memory for null atomic pointers");

void Index::log_append(Entry* e) {
  const std::uint64_t n = n_entries_.fetch_add(1, std::memory_order_relaxed);
  // 2^34 keys is past any memory a keyspace can be given (each key costs its entry, its
  // point-map slot and its versions: over 100 bytes), so this never fails in practice.
  if (n >= kLogChunk * kLogChunks) {
    std::fprintf(stderr, "duet txn: more than 2^34 keys in one keyspace\n");
    std::abort();
  }
  std::atomic<Entry*>* chunk = log_[n / kLogChunk].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    // Zeroed memory is a chunk of null atomic pointers.
    auto* fresh = static_cast<std::atomic<Entry*>*>(std::calloc(kLogChunk, sizeof(std::atomic<Entry*>)));
    if (fresh == nullptr) throw std::bad_alloc();
    if (log_[n / kLogChunk].compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) chunk = fresh;
    else std::free(fresh);  // another creator made it; chunk holds theirs
  }
  chunk[n % kLogChunk].store(e, std::memory_order_release);
}

void Index::walk(const TxnRange& r, std::size_t max, const Visit& visit) {
  const std::uint64_t lo = r.start_unbounded ? 0 : prefix_of(r.start);
  std::uint64_t hi = r.end_unbounded ? ~std::uint64_t{0} : prefix_of(r.end);
  // An exclusive end of at most 8 bytes whose last byte is not zero has no key of its own
  // prefix below it (such a key would begin with the end's bytes, or be padded with zeros where
  // the end's last byte is not), so that prefix is not walked: [p, p + 1) over the keys of one
  // prefix p is then a walk of one prefix.
  if (!r.end_unbounded && !r.end_inclusive && !r.end.empty() && r.end.size() <= 8 && r.end.back() != '\0' && hi > lo)
    --hi;
  walk_between(r, lo, hi, max, visit);
}

void Index::split(const TxnRange& r, std::size_t parts, std::vector<std::pair<std::uint64_t, std::uint64_t>>* out) {
  out->clear();
  std::uint64_t lo = r.start_unbounded ? 0 : prefix_of(r.start);
  std::uint64_t hi = r.end_unbounded ? ~std::uint64_t{0} : prefix_of(r.end);
  lo = std::max(lo, min_prefix_.load(std::memory_order_relaxed));
  hi = std::min(hi, max_prefix_.load(std::memory_order_relaxed));
  if (lo > hi) return;
  using u128 = unsigned __int128;
  const u128 w = static_cast<u128>(hi) - lo + 1;
  if (parts < 1) parts = 1;
  if (w < parts) parts = static_cast<std::size_t>(w);
  for (std::size_t i = 0; i < parts; ++i)
    out->emplace_back(static_cast<std::uint64_t>(lo + w * i / parts), static_cast<std::uint64_t>(lo + w * (i + 1) / parts - 1));
}

void Index::walk_between(const TxnRange& r, std::uint64_t lo, std::uint64_t hi, std::size_t max, const Visit& visit) {
  if (lo > hi) return;
  auto below_end = [&](std::string_view k) {
    if (r.end_unbounded) return true;
    const int c = k.compare(r.end);
    return c < 0 || (c == 0 && r.end_inclusive);
  };
  // Batches handed to `visit`: about what a capped walk can use (one more than its limit, so
  // that it can tell whether the range goes on), else kWalkBatch.
  const std::size_t cap = max != 0 ? std::min(max + 1, kWalkBatch) : kWalkBatch;
  Entry* batch[kWalkBatch];
  std::size_t nb = 0;
  bool stopped = false;
  auto flush = [&] {
    if (nb != 0 && !visit(batch, nb)) stopped = true;
    nb = 0;
    return !stopped;
  };
  const std::uint64_t pstart = r.start_unbounded ? 0 : prefix_of(r.start);
  const std::uint64_t pend = r.end_unbounded ? ~std::uint64_t{0} : prefix_of(r.end);
  // The entries of a page of (prefix, bucket) pairs in prefix order; false once the walk ends
  // (past r's end, or visit stopped it).
  auto take_page = [&](const std::vector<std::pair<std::uint64_t, std::uint64_t>>& page) {
    // Buckets 16 ahead, and the single entry of the bucket 8 ahead: the dependent misses of a
    // key (bucket, entry) overlap those of the keys after it.
    constexpr std::size_t kBucketAhead = 16, kEntryAhead = 8;
    for (std::size_t i = 0; i < std::min(page.size(), kBucketAhead); ++i)
      __builtin_prefetch(reinterpret_cast<Bucket*>(page[i].second));
    for (std::size_t i = 0; i < page.size(); ++i) {
      auto* b = reinterpret_cast<Bucket*>(page[i].second);
      if (i + kBucketAhead < page.size()) __builtin_prefetch(reinterpret_cast<Bucket*>(page[i + kBucketAhead].second));
      if (i + kEntryAhead < page.size()) {
        auto* ahead = reinterpret_cast<Bucket*>(page[i + kEntryAhead].second);
        if (Entry* e = ahead->only.load(std::memory_order_relaxed)) __builtin_prefetch(e);
      }
      if (Entry* e = b->only.load(std::memory_order_acquire)) {
        // A prefix strictly between the bounds' prefixes orders its key strictly between the
        // bounds (prefixes are the first 8 bytes, zero padded): no byte comparison needed.
        const std::uint64_t p = page[i].first;
        const std::string_view k = e->key();
        const bool after_start = r.start_unbounded || p > pstart ||
                                 (r.start_inclusive ? k.compare(r.start) >= 0 : k.compare(r.start) > 0);
        if (!after_start) continue;
        if (p >= pend && !below_end(k)) return false;
        batch[nb++] = e;
        if (nb == cap && !flush()) return false;
        continue;
      }
      // A collision run: read under the bucket's lock, which is let go while `visit` runs (a
      // run can hold every key of the keyspace, e.g. keys sharing a long prefix), the walk
      // going on after the last key handed over.
      std::shared_lock<std::shared_mutex> lk(b->m);
      auto it = b->keys.begin();
      if (!r.start_unbounded)
        it = r.start_inclusive ? b->keys.lower_bound(r.start) : b->keys.upper_bound(r.start);
      while (it != b->keys.end()) {
        if (!below_end(it->first)) return false;
        batch[nb++] = it->second;
        if (nb == cap) {
          const std::string_view last = it->first;  // the entry's own bytes: stable
          lk.unlock();
          if (!flush()) return false;
          lk.lock();
          it = b->keys.upper_bound(last);
          continue;
        }
        ++it;
      }
    }
    return true;
  };
  std::vector<std::pair<std::uint64_t, std::uint64_t>> page;
  if (lo == hi) {
    // One prefix (e.g. the keys under one 8-byte prefix): its bucket by a point read of the
    // ordered map, where a range read of it cost several times more (SNAPSHOT of many short
    // ranges spent most of its time there).
    if (Bucket* b = bucket_of(lo)) {
      page.emplace_back(lo, reinterpret_cast<std::uint64_t>(b));
      take_page(page);
    }
  } else if (max == 0) {
    walk_wide(lo, hi, &page, take_page);
  } else {
    // Pages of LIT prefixes: a capped walk asks for about what it can use (a limit-2 scan in a
    // long run of keys read and prefetched 256 buckets per call), doubling up to 256 if it goes
    // on. The session is held only while a page is read, never while `visit` runs.
    std::uint64_t cur = lo;
    for (std::size_t page_prefixes = std::clamp<std::size_t>(max + 1, 8, 256);;
         page_prefixes = std::min<std::size_t>(page_prefixes * 2, 256)) {
      page.clear();
      lit::RangePage pg;
      {
        SessionRef s(*this);
        if (!s->range(cur, hi, &page, &pg, page_prefixes).ok()) break;  // bounds are in the universe: cannot fail
      }
      if (!take_page(page) || !pg.more) break;
      cur = pg.resume_key;
    }
  }
  if (!stopped) flush();
}

void Index::walk_wide(std::uint64_t lo, std::uint64_t hi, std::vector<std::pair<std::uint64_t, std::uint64_t>>* page,
                      const std::function<bool(const std::vector<std::pair<std::uint64_t, std::uint64_t>>&)>& take) {
  using u128 = unsigned __int128;
  // Segments of about kSegment prefixes, each cut into kCursors pieces that one range_many
  // call walks at once. The first segment's width comes from the keyspace's mean density
  // between its least and greatest prefix; each later one is scaled by what the last held.
  constexpr std::size_t kCursors = 16, kSegment = 4096;
  const std::uint64_t pmin = min_prefix_.load(std::memory_order_relaxed), pmax = max_prefix_.load(std::memory_order_relaxed);
  lo = std::max(lo, pmin);
  hi = std::min(hi, pmax);
  if (lo > hi) return;
  const std::uint64_t nb = std::max<std::uint64_t>(1, n_buckets_.load(std::memory_order_relaxed));
  const u128 span = static_cast<u128>(pmax) - pmin + 1;
  u128 width = std::max<u128>(kCursors, span * kSegment / nb);
  std::pair<std::uint64_t, std::uint64_t> sub[kCursors];
  std::vector<std::pair<std::uint64_t, std::uint64_t>> outs[kCursors];
  lit::RangePage pages[kCursors];
  for (u128 a = lo; a <= hi;) {
    const u128 b = std::min<u128>(hi, a + width - 1);
    const u128 w = b - a + 1;
    const std::size_t k = static_cast<std::size_t>(std::min<u128>(kCursors, w));
    for (std::size_t i = 0; i < k; ++i) {
      sub[i] = {static_cast<std::uint64_t>(a + w * i / k), static_cast<std::uint64_t>(a + w * (i + 1) / k - 1)};
      outs[i].clear();
    }
    {
      SessionRef s(*this);
      if (!s->range_many(sub, k, outs, pages).ok()) return;  // bounds are in the universe: cannot fail
      for (std::size_t i = 0; i < k; ++i)  // a piece past the map's result cap goes on alone
        for (lit::RangePage pg = pages[i]; pg.more;)
          if (!s->range(pg.resume_key, sub[i].second, &outs[i], &pg).ok()) return;
    }
    page->clear();
    for (std::size_t i = 0; i < k; ++i) page->insert(page->end(), outs[i].begin(), outs[i].end());
    if (!take(*page) || b == hi) return;
    // The next segment: scaled toward kSegment prefixes, at most 4x either way.
    const std::size_t got = page->size();
    if (got < kSegment / 4) width *= 4;
    else if (got > 4 * kSegment) width = std::max<u128>(kCursors, width / 4);
    else width = std::max<u128>(kCursors, width * kSegment / got);
    a = b + 1;
  }
}

void Index::entries_from(std::uint64_t pos, std::size_t count, std::vector<Entry*>* out, std::uint64_t* next) {
  const std::uint64_t n = n_entries_.load(std::memory_order_acquire);
  std::uint64_t i = pos;
  for (; i < n && i < pos + count; ++i) {
    std::atomic<Entry*>* chunk = log_[i / kLogChunk].load(std::memory_order_acquire);
    Entry* e = chunk != nullptr ? chunk[i % kLogChunk].load(std::memory_order_acquire) : nullptr;
    if (e != nullptr) out->push_back(e);  // null: claimed, its entry not yet stored
  }
  *next = i >= n ? 0 : i;
}

// ---------------------------------------------------------------- Core

// One slot more than max_transactions: the collector's, whose commit word stays 0.
#if defined(__x86_64__)
std::uint64_t Core::planted_skew() const { return (thread_ordinal() & 1) ? cfg.faults.tsc_skew_cycles : 0; }
#endif

Core::Core(const TxnConfig& c) : cfg(c), slots(new Slot[std::size_t{c.max_transactions} + 1]) {
  const bool exact = cfg.max_obsolete_versions != 0 || cfg.memory_budget_bytes != 0;
  flush_every = exact ? 1 : std::clamp<std::uint64_t>(cfg.gc_watermark / 64, 1, 256);
  tsc_clock = cfg.clock == TxnClock::kTsc;
  tsc_boundary = !tsc_clock ? 0
                 : cfg.tsc_boundary_cycles == TxnConfig::kMeasureBoundary ? clock::measure_ordo_boundary(nullptr)
                                                                          : cfg.tsc_boundary_cycles;
  if (cfg.background_gc) collector = std::thread([this] { run_collector(); });
}

Core::~Core() {
  {
    std::lock_guard<std::mutex> lk(wake_m);
    stop = true;
  }
  wake.notify_all();
  if (collector.joinable()) collector.join();
}

Status Core::claim(unsigned* slot, std::uint64_t* start) {
  // Each thread starts at its own slot (and keeps the slot it last had).
  thread_local unsigned hint = thread_ordinal();
  const unsigned n = cfg.max_transactions;
  for (unsigned i = 0; i < n; ++i) {
    const unsigned k = (hint + i) % n;
    Slot& s = slots[k];
    std::uint64_t expect = kFreeSlot;
    if (s.start.load(std::memory_order_relaxed) != kFreeSlot) continue;
    // Announce a start no later than the one used, then read the one used: a collection
    // that misses the announcement read the timestamp before this read (docs/txn.md). The
    // announcement is the slot's previous start (the timestamp only grows, so it is no later),
    // which costs no read of the timestamp's line: at 16 threads every access to that line is
    // a transfer between cores, and this was one of three per transaction.
    if (!s.start.compare_exchange_strong(expect, s.last_start.load(std::memory_order_relaxed),
                                         std::memory_order_seq_cst))
      continue;
    s.state.store(0, std::memory_order_relaxed);
    s.commit.store(0, std::memory_order_relaxed);
    if (cfg.max_snapshot_age_ms) s.begin_ns = now_ns();
    // Slots at or above the high-water mark are not scanned: raise it before reading the
    // timestamp, so a scan that misses this slot read the timestamp before this read does.
    for (unsigned h = slot_hwm.load(std::memory_order_seq_cst);
         k >= h && !slot_hwm.compare_exchange_weak(h, k + 1, std::memory_order_seq_cst);) {
    }
    const std::uint64_t g = clock_now();
    // Raise the announcement to the start itself (either value is a safe bound for a
    // collector: both are <= g).
    s.start.store(g, std::memory_order_seq_cst);
    s.last_start.store(g, std::memory_order_relaxed);
    *start = g;
    *slot = k;
    hint = k;
    return Status::Ok();
  }
  return Status::ResourceExhausted("too many open transactions (max_transactions = " +
                                   std::to_string(cfg.max_transactions) + ")");
}

bool Core::add_pending(unsigned slot, std::int64_t obsoleted, std::int64_t bytes_added, std::int64_t* obs) {
  Slot& s = slots[slot];
  // Signed deltas kept in unsigned words (a commit that frees versions inline subtracts).
  const auto o = static_cast<std::int64_t>(s.pending_obsolete.load(std::memory_order_relaxed)) + obsoleted;
  const auto b = static_cast<std::int64_t>(s.pending_bytes.load(std::memory_order_relaxed)) + bytes_added;
  const auto fe = static_cast<std::int64_t>(flush_every);
  if (fe > 1 && o < fe && o > -fe && b < (std::int64_t{1} << 20) && b > -(std::int64_t{1} << 20)) {
    s.pending_obsolete.store(static_cast<std::uint64_t>(o), std::memory_order_relaxed);
    s.pending_bytes.store(static_cast<std::uint64_t>(b), std::memory_order_relaxed);
    return false;
  }
  s.pending_obsolete.store(0, std::memory_order_relaxed);
  s.pending_bytes.store(0, std::memory_order_relaxed);
  if (b) bytes.fetch_add(static_cast<std::uint64_t>(b), std::memory_order_relaxed);
  *obs = o == 0 ? static_cast<std::int64_t>(obsolete.load(std::memory_order_relaxed))
               : static_cast<std::int64_t>(obsolete.fetch_add(static_cast<std::uint64_t>(o), std::memory_order_relaxed) +
                                           static_cast<std::uint64_t>(o));
  return true;
}

void Core::raise_floor(std::uint64_t min) {
  for (std::uint64_t f = gc_floor.load(std::memory_order_relaxed);
       min > f && !gc_floor.compare_exchange_weak(f, min, std::memory_order_release);) {
  }
}

Version* Core::cut_below(Version* from, std::uint64_t floor, unsigned max_steps) {
  Version* v = from;
  for (unsigned i = 0; v != nullptr && v->ts > floor; ++i) {
    if (i == max_steps) return nullptr;  // a long chain above the floor: left to the collector
    v = v->older.load(std::memory_order_acquire);
  }
  return v == nullptr ? nullptr : v->older.exchange(nullptr, std::memory_order_acq_rel);
}

void Core::free_tail(Version* t, std::uint64_t* n, std::uint64_t* b) {
  *n = 0;
  *b = 0;
  while (t != nullptr) {
    Version* o = t->older.load(std::memory_order_relaxed);
    *b += t->bytes();
    ++*n;
    Version::destroy(t);
    t = o;
  }
}

std::uint64_t Core::obsolete_total() const {
  std::uint64_t t = obsolete.load(std::memory_order_relaxed);
  for (unsigned i = 0, n = slot_hwm.load(std::memory_order_relaxed); i < n; ++i) t += slots[i].pending_obsolete.load(std::memory_order_relaxed);
  return t;
}

std::uint64_t Core::bytes_total() const {
  std::uint64_t t = bytes.load(std::memory_order_relaxed);
  for (unsigned i = 0, n = slot_hwm.load(std::memory_order_relaxed); i < n; ++i) t += slots[i].pending_bytes.load(std::memory_order_relaxed);
  return t;
}

void Core::release(unsigned slot) {
  Slot& s = slots[slot];
  // Release, as the commit's own final store: a wait_commits that reads this 0 (the word's
  // newest value) must see what the commit's observer wrote.
  s.commit.store(0, std::memory_order_release);
  s.state.store(0, std::memory_order_relaxed);
  s.start.store(kFreeSlot, std::memory_order_release);
}

Version* Core::read(Entry* e, std::uint64_t start) {
  if (cfg.faults.read_latest) return e->head.load(std::memory_order_acquire);
  // Wait out a committer holding e whose timestamp is <= start (or is being taken): it
  // installs without waiting for anything, so the wait is short.
  for (unsigned spins = 0;; ++spins) {
    const std::uint64_t l = e->lock.load(std::memory_order_seq_cst);
    if (l == 0) break;
    const std::uint64_t w = slots[l - 1].commit.load(std::memory_order_seq_cst);
    if (w == 0) break;                          // still locking: its timestamp will be > start
    if (w != 1 && (w >> 1) > start) break;      // a later timestamp: invisible anyway
    wait_relax(spins);
  }
  Version* v = e->head.load(std::memory_order_acquire);
  while (v != nullptr && v->ts > start) v = v->older.load(std::memory_order_acquire);
  return v;
}

void Core::wait_commits(std::uint64_t ts) {
  // As Core::read, over every slot: a word of 0 read after the caller's timestamp belongs to a
  // commit that has finished or will take a timestamp above ts; 1 is taking one (wait: it may
  // come out <= ts); ts' << 1 waits only while ts' <= ts.
  for (unsigned i = 0, n = slot_hwm.load(std::memory_order_seq_cst); i < n; ++i)
    for (unsigned spins = 0;; ++spins) {
      const std::uint64_t w = slots[i].commit.load(std::memory_order_seq_cst);
      if (w == 0 || (w != 1 && (w >> 1) > ts)) break;
      wait_relax(spins);
    }
}

void Core::enqueue(Entry* e) {
  if (e->queued.load(std::memory_order_relaxed) || e->queued.exchange(true, std::memory_order_acq_rel)) return;
  QueueStripe& q = queue[thread_ordinal() % kQueueStripes];
  Entry* h = q.head.load(std::memory_order_relaxed);
  do {
    e->gc_next = h;
  } while (!q.head.compare_exchange_weak(h, e, std::memory_order_release, std::memory_order_relaxed));
}

void Core::request_gc() {
  if (gc_requested.load(std::memory_order_relaxed) || gc_requested.exchange(true)) return;
  std::lock_guard<std::mutex> lk(wake_m);
  wake.notify_one();
}

std::uint64_t Core::oldest_start(bool exclude_doomed) {
  std::uint64_t m = clock_now();
  for (unsigned i = 0, n = slot_hwm.load(std::memory_order_seq_cst); i < n; ++i) {
    const std::uint64_t s = slots[i].start.load(std::memory_order_seq_cst);
    if (s == kFreeSlot) continue;
    if (exclude_doomed && slots[i].state.load(std::memory_order_seq_cst) == 2) continue;
    m = std::min(m, s);
  }
  return m;
}

void Core::collect(bool background) {
  std::lock_guard<std::mutex> gl(gc_m);
  for (int pass = 0; pass < 4; ++pass) {
    // Versions a transaction may read: for each key, the newest with ts <= min and the ones
    // above it. Everything below that version is unreachable for every reader (a reader's
    // start is >= min, so its walk stops at or above it), and is freed here.
    const std::uint64_t min = oldest_start(true);
    // With min where the last walk left it (a long reader holds it), a walk frees nothing
    // that walk did not: every key it saw is cut below its newest version <= min, and later
    // commits have timestamps > min, except a commit that took its timestamp before min was
    // read and installed after the walk saw its key, whose one obsolete version waits for
    // min to move. Walking anyway re-read every queued key's chain on every wake-up of the
    // collector (a fifth of a 2-thread SNAPSHOT run's samples). Explicit collections walk.
    const bool walk = !background || min != last_walk_min;
    if (walk) {
    last_walk_min = min;
    raise_floor(min);
    collections.fetch_add(1, std::memory_order_relaxed);
    // Walk every taken stack before clearing any entry's `queued`: once cleared, a committer
    // may push the entry again and overwrite its gc_next.
    std::vector<Entry*> work;
    for (QueueStripe& q : queue)
      for (Entry* e = q.head.exchange(nullptr, std::memory_order_acquire); e != nullptr; e = e->gc_next)
        work.push_back(e);
    std::vector<Entry*> again;
    std::uint64_t freed = 0, freed_bytes = 0;
    const std::uint64_t word = collector_lock_word();
    for (Entry* e : work) {
      e->queued.store(false, std::memory_order_release);
      // Cut under the key's lock: committers also cut chains as they install (Txn::commit).
      // A key a committer holds is left for the next pass.
      std::uint64_t free_word = 0;
      if (!e->lock.compare_exchange_strong(free_word, word, std::memory_order_seq_cst)) {
        again.push_back(e);
        continue;
      }
      Version* head = e->head.load(std::memory_order_acquire);
      Version* v = head;
      while (v != nullptr && v->ts > min) v = v->older.load(std::memory_order_acquire);
      Version* t = v != nullptr ? v->older.exchange(nullptr, std::memory_order_acq_rel) : nullptr;
      e->lock.store(0, std::memory_order_release);
      std::uint64_t n = 0, b = 0;
      free_tail(t, &n, &b);
      freed += n;
      freed_bytes += b;
      if (v != head) again.push_back(e);  // versions above min remain: later
    }
    if (freed) {
      versions.add(-static_cast<std::int64_t>(freed));
      obsolete.fetch_sub(freed, std::memory_order_relaxed);
      bytes.fetch_sub(freed_bytes, std::memory_order_relaxed);
      reclaimed.add(static_cast<std::int64_t>(freed));
    }
    for (Entry* e : again) enqueue(e);
    }
    // Bound memory: doom the oldest transaction holding back collection when the budget or
    // the age limit is exceeded, then collect again without it.
    const bool over_budget = cfg.max_obsolete_versions && obsolete.load() > cfg.max_obsolete_versions;
    const std::uint64_t now = cfg.max_snapshot_age_ms ? now_ns() : 0;
    int victim = -1;
    std::uint64_t oldest = kFreeSlot;
    for (unsigned i = 0, n = slot_hwm.load(std::memory_order_seq_cst); i < n; ++i) {
      const std::uint64_t s = slots[i].start.load(std::memory_order_seq_cst);
      if (s == kFreeSlot || slots[i].state.load() == 2) continue;
      const bool aged = cfg.max_snapshot_age_ms && now - slots[i].begin_ns > cfg.max_snapshot_age_ms * 1000000ull;
      if ((over_budget || aged) && s < oldest && s < clock_now()) {
        oldest = s;
        victim = static_cast<int>(i);
      }
    }
    if (victim < 0) return;
    std::uint32_t idle = 0;
    if (!slots[victim].state.compare_exchange_strong(idle, 2)) return;  // in a call: next time
    if (slots[victim].start.load() != oldest) {
      // The slot was released and claimed again meanwhile: undo (the new transaction is young).
      slots[victim].state.store(0);
      return;
    }
  }
}

void Core::run_collector() {
  std::unique_lock<std::mutex> lk(wake_m);
  const auto period = std::chrono::milliseconds(cfg.max_snapshot_age_ms ? std::max<std::uint64_t>(1, cfg.max_snapshot_age_ms / 4) : 100);
  while (!stop) {
    wake.wait_for(lk, period, [this] { return stop || gc_requested.load(); });
    if (stop) break;
    gc_requested.store(false);
    lk.unlock();
    const std::uint64_t before = collections.load(std::memory_order_relaxed);
    if (obsolete_total() > 0) collect(true);
    const bool walked = collections.load(std::memory_order_relaxed) != before;
    lk.lock();
    // Nothing to walk (the oldest start has not moved): wait a while before looking again,
    // rather than at every commit that finds the watermark still exceeded.
    if (!walked) wake.wait_for(lk, std::min<std::chrono::milliseconds>(period, std::chrono::milliseconds(10)), [this] { return stop; });
  }
}

}  // namespace duet::txn
