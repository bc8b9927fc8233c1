#include "kv/hot_cache.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <shared_mutex>

#include "common/check.hpp"
#include "cods/atomic.hpp"
#include "sched/thread_name.hpp"

namespace duet::kv {

namespace {

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
}  // namespace

HotCache::Node::Node() {
  for (unsigned i = 0; i < 8; ++i) {
    keys[i] = kEmpty;
    handles[i] = 0;
    flags[i] = 0;
  }
}

/// Exclusive hold of a bucket: the lock word is a version whose low bit marks a writer.
/// Taking it sets the bit; releasing it clears the bit and advances the version, so
/// optimistic readers (get) see that something changed.
class HotCache::WriteLock {
 public:
  explicit WriteLock(const Bucket& b) : l_(b.lock) {
    for (;;) {
      std::uint32_t v = l_.load(std::memory_order_relaxed);
      if (!(v & 1) && l_.compare_exchange_weak(v, v | 1, std::memory_order_acquire)) {
        std::atomic_thread_fence(std::memory_order_release);  // version change before the data writes
        return;
      }
      cods::spin_pause();
    }
  }
  ~WriteLock() { l_.fetch_add(1, std::memory_order_release); }  // odd + 1: even, next version

 private:
  std::atomic<std::uint32_t>& l_;
};

/// A consistent read of a bucket without locking, validated by its version (a sequence lock).
/// `read` runs until it sees a version no writer held or changed meanwhile; returns that version.
template <class Read>
static std::uint32_t read_validated(const std::atomic<std::uint32_t>& lock, Read read) {
  for (;;) {
    const std::uint32_t v1 = lock.load(std::memory_order_acquire);
    if (v1 & 1) {
      cods::spin_pause();
      continue;
    }
    read();
    std::atomic_thread_fence(std::memory_order_acquire);
    if (lock.load(std::memory_order_relaxed) == v1) return v1;
  }
}

template <class T>
static T racy_load(const T& x) {
  return std::atomic_ref<T>(const_cast<T&>(x)).load(std::memory_order_relaxed);
}
template <class T>
static void racy_store(T& x, T v) {
  std::atomic_ref<T>(x).store(v, std::memory_order_relaxed);
}
/// Chain links (Node::next), followed without the bucket lock: a link is stored with release
/// after its node is written and loaded with acquire, so a reader that follows a link just
/// made sees the node initialized, never as the allocator left it.
template <class T>
static T* load_link(T* const& link) {
  return std::atomic_ref<T*>(const_cast<T*&>(link)).load(std::memory_order_acquire);
}
template <class T>
static void store_link(T*& link, T* node) {
  std::atomic_ref<T*>(link).store(node, std::memory_order_release);
}

HotCache::Table::Table(std::uint64_t n) : mask(n - 1), buckets(std::make_unique<Bucket[]>(n)) {}

HotCache::Table::~Table() {
  for (std::uint64_t i = 0; i <= mask; ++i) {
    Node* n = buckets[i].head.next;
    while (n) {
      Node* next = n->next;
      delete n;
      n = next;
    }
  }
}

HotCache::Bucket& HotCache::Table::bucket(std::uint64_t ikey) const { return buckets[mix(ikey) & mask]; }

namespace {
std::uint64_t initial_buckets(std::uint64_t expected_entries) {
  return std::bit_ceil(std::max<std::uint64_t>(expected_entries / 4, 64));
}
}  // namespace

HotCache::HotCache(std::uint64_t expected_entries) : table_(new Table(initial_buckets(expected_entries))) {}

std::uint64_t HotCache::initial_bytes(std::uint64_t expected_entries) {
  return initial_buckets(expected_entries) * sizeof(Bucket);
}

HotCache::~HotCache() {
  wait_for_grow();
  delete table_.load();
}

bool HotCache::find(const Bucket& b, std::uint64_t ikey, Node** node, unsigned* slot) {
  for (Node* n = const_cast<Node*>(&b.head); n; n = n->next) {
    for (unsigned i = 0; i < 8; ++i) {
      if (n->keys[i] == ikey) {
        *node = n;
        *slot = i;
        return true;
      }
    }
  }
  return false;
}

HotCache::Found HotCache::get(std::uint64_t ikey, std::uint64_t* handle) const {
  Found found;
  for (;;) {
    const Table* t = table_.load(std::memory_order_acquire);
    const Bucket& b = t->bucket(ikey);
    read_validated(b.lock, [&] {
    found = Found::kMiss;
    for (const Node* n = &b.head; n; n = load_link(n->next)) {
      for (unsigned i = 0; i < 8; ++i) {
        if (racy_load(n->keys[i]) == ikey) {
          const std::uint8_t f = racy_load(n->flags[i]);
          *handle = racy_load(n->handles[i]);
          found = (f & kPresent) ? Found::kValue : Found::kTombstone;
          return;
        }
      }
    }
    });
    // A grown table may have taken writes since: read again there.
    if (table_.load(std::memory_order_acquire) == t) return found;
  }
}

void HotCache::prefetch(std::uint64_t ikey) const {
  // Acquire, as get(): a table just grown must be seen whole (the caller's pin keeps it).
  const Bucket& b = table_.load(std::memory_order_acquire)->bucket(ikey);
  const char* p = reinterpret_cast<const char*>(&b);
  __builtin_prefetch(p);
  __builtin_prefetch(p + 64);
  __builtin_prefetch(p + 128);
}

HotCache::Found HotCache::update(std::uint64_t ikey, bool erase, std::uint64_t handle, std::uint64_t* prev,
                                 bool* prev_owned) {
  bool log = false;
  Found was;
  {
    std::shared_lock<sched::StripedSharedMutex> rl(resize_);
    Bucket& b = table_.load(std::memory_order_relaxed)->bucket(ikey);
    WriteLock lk(b);
    Node* n;
    unsigned i;
    if (!find(b, ikey, &n, &i)) return Found::kMiss;
    const std::uint8_t f = n->flags[i];
    was = (f & kPresent) ? Found::kValue : Found::kTombstone;
    *prev = n->handles[i];
    *prev_owned = (f & kDirty) && (f & kPresent);
    racy_store(n->handles[i], erase ? std::uint64_t(0) : handle);
    racy_store(n->flags[i], static_cast<std::uint8_t>((erase ? 0 : kPresent) | kDirty | kLogged));
    log = !(f & kLogged);
  }
  if (log) append_log(ikey);
  return was;
}

bool HotCache::populate(std::uint64_t ikey, bool present, std::uint64_t handle,
                        const std::atomic<std::uint64_t>& epoch, std::uint64_t expected,
                        mem::EpochManager::Participant* part) {
  bool crowded;
  {
    std::shared_lock<sched::StripedSharedMutex> rl(resize_);
    const Table* t = table_.load(std::memory_order_relaxed);
    Bucket& b = t->bucket(ikey);
    WriteLock lk(b);
    if (epoch.load(std::memory_order_seq_cst) != expected) return false;
    Node* n;
    unsigned i;
    if (find(b, ikey, &n, &i)) return false;
    insert(b, ikey, present ? handle : 0, present ? kPresent : 0);
    crowded = size_.fetch_add(1, std::memory_order_relaxed) + 1 > 4 * (t->mask + 1);
  }
  if (crowded) start_grow(part->manager());
  return true;
}

void HotCache::start_grow(mem::EpochManager* epochs) {
  // One is starting or running: a shared read first, so the inserts a long grow meets do not
  // all write one line.
  if (growing_.load(std::memory_order_relaxed) || growing_.exchange(true, std::memory_order_acq_rel)) return;
  std::lock_guard<std::mutex> lk(grower_m_);
  if (grower_.joinable()) grower_.join();  // the last grow's thread, done (it cleared growing_)
  grower_ = std::thread([this, epochs] {
    sched::name_this_thread("duet-hot-grow");
    {
      auto part = epochs->join();
      grow(part.get());
      // Free the old table here once its readers are gone, rather than leave it to whichever
      // I/O thread collects next: its destructor walks and unmaps the whole table (tens of ms
      // at a million buckets). Bounded: what is left goes to the manager's orphans.
      for (int i = 0; i < 500 && part->pending() != 0; ++i) {
        part->collect();
        if (part->pending() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    growing_.store(false, std::memory_order_release);
  });
}

void HotCache::wait_for_grow() {
  std::lock_guard<std::mutex> lk(grower_m_);
  if (grower_.joinable()) grower_.join();
}

void HotCache::insert(Bucket& b, std::uint64_t ikey, std::uint64_t handle, std::uint8_t flags) {
  Node* last = &b.head;
  for (Node* m = &b.head; m; m = m->next) {
    last = m;
    for (unsigned j = 0; j < 8; ++j) {
      if (m->keys[j] == kEmpty) {
        racy_store(m->handles[j], handle);
        racy_store(m->flags[j], flags);
        racy_store(m->keys[j], ikey);
        return;
      }
    }
  }
  Node* fresh = new Node();
  fresh->keys[0] = ikey;
  fresh->handles[0] = handle;
  fresh->flags[0] = flags;
  store_link(last->next, fresh);  // after fresh is written: readers follow links without the lock
}

void HotCache::clear_bucket(Bucket& b) {
  Node* n = b.head.next;
  while (n) {
    Node* next = n->next;
    delete n;
    n = next;
  }
  b.head = Node();
}

void HotCache::grow(mem::EpochManager::Participant* part) {
  // Only the grower thread calls this, one grow at a time (growing_), so the first pass may run
  // without resize_.
  Table* old = table_.load(std::memory_order_relaxed);
  if (size_.load(std::memory_order_relaxed) <= 4 * (old->mask + 1)) return;  // no longer crowded (an eviction or a grow since the insert that asked)
  const std::uint64_t n = old->mask + 1;
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto* fresh = new Table(n * 4);
  // Old bucket bi's keys land in new buckets bi, bi + n, bi + 2n and bi + 3n (the hash's low
  // bits select both), and only its keys do.
  auto copy = [&](const Node* from) {
    for (const Node* m = from; m; m = m->next)
      for (unsigned i = 0; i < 8; ++i)
        if (m->keys[i] != kEmpty) insert(fresh->bucket(m->keys[i]), m->keys[i], m->handles[i], m->flags[i]);
  };
  // Pass 1, writers running: copy each bucket as of a version no writer held, and remember it.
  std::vector<std::uint32_t> copied(n);
  Node snap;
  std::vector<Node> overflow;
  for (std::uint64_t bi = 0; bi < n; ++bi) {
    const Bucket& b = old->buckets[bi];
    copied[bi] = read_validated(b.lock, [&] {
      overflow.clear();
      for (unsigned i = 0; i < 8; ++i) {
        snap.keys[i] = racy_load(b.head.keys[i]);
        snap.handles[i] = racy_load(b.head.handles[i]);
        snap.flags[i] = racy_load(b.head.flags[i]);
      }
      for (const Node* m = load_link(b.head.next); m; m = load_link(m->next)) {
        Node& c = overflow.emplace_back();
        for (unsigned i = 0; i < 8; ++i) {
          c.keys[i] = racy_load(m->keys[i]);
          c.handles[i] = racy_load(m->handles[i]);
          c.flags[i] = racy_load(m->flags[i]);
        }
      }
    });
    snap.next = nullptr;
    copy(&snap);
    for (const Node& c : overflow) copy(&c);
  }
  if (grow_pause_for_tests_) grow_pause_for_tests_();
  // Pass 2, writers held off: copy again each bucket written since pass 1 read it (its version
  // moved on). Under the exclusive hold no writer holds a bucket lock, so the reads are exact.
  const auto t1 = Clock::now();
  std::unique_lock<sched::StripedSharedMutex> wl(resize_);
  const auto t2 = Clock::now();
  std::uint64_t recopied = 0;
  for (std::uint64_t bi = 0; bi < n; ++bi) {
    const Bucket& b = old->buckets[bi];
    if (b.lock.load(std::memory_order_relaxed) == copied[bi]) continue;
    for (std::uint64_t q = 0; q < 4; ++q) clear_bucket(fresh->buckets[bi + q * n]);
    copy(&b.head);
    ++recopied;
  }
  grow_recopied_.fetch_add(recopied, std::memory_order_relaxed);
  grows_.fetch_add(1, std::memory_order_relaxed);
  table_.store(fresh, std::memory_order_release);
  wl.unlock();
  part->retire(old);  // readers may still be in it
  auto us = [](Clock::duration d) { return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count()); };
  const GrowTimes t{n * 4, size_.load(std::memory_order_relaxed), us(t1 - t0), us(Clock::now() - t2), recopied};
  std::lock_guard<std::mutex> lk(grow_times_m_);
  last_grow_ = t;
  longest_grow_blocked_us_ = std::max(longest_grow_blocked_us_, t.blocked_us);
}

HotCache::GrowTimes HotCache::last_grow() const {
  std::lock_guard<std::mutex> lk(grow_times_m_);
  return last_grow_;
}

std::uint64_t HotCache::longest_grow_blocked_us() const {
  std::lock_guard<std::mutex> lk(grow_times_m_);
  return longest_grow_blocked_us_;
}

void HotCache::append_log(std::uint64_t ikey) {
  std::lock_guard<std::mutex> lk(log_mutex_);
  log_.push_back(ikey);
}

bool HotCache::read_logged(std::uint64_t k, bool take, LogRecord* rec) {
  std::shared_lock<sched::StripedSharedMutex> rl(resize_);
  Bucket& b = table_.load(std::memory_order_relaxed)->bucket(k);
  WriteLock lk(b);
  Node* n;
  unsigned i;
  const bool resident = find(b, k, &n, &i);
  const bool logged = resident && (n->flags[i] & kLogged);
  DUET_CHECK(logged, "update log holds key " + std::to_string(k) +
                         (resident ? ", whose entry is not marked logged" : ", which is no longer in the cache"));
  if (!logged) return false;
  *rec = {k, (n->flags[i] & kPresent) != 0, n->handles[i]};
  if (take) racy_store(n->flags[i], static_cast<std::uint8_t>(n->flags[i] & kPresent));  // clean, unlogged
  return true;
}

std::vector<HotCache::LogRecord> HotCache::log_snapshot() {
  std::lock_guard<std::mutex> lg(log_mutex_);
  // Every logged key appears once and is resident with its kLogged flag set: update() appends
  // a key only when it sets the flag, and only mark_replayed() clears the flag, dropping the key
  // from the log at the same time; no dirty entry is evicted. A key that broke this would make
  // a replay hand the store a stale block, or retire a block the store holds. Builds with
  // DUET_CHECKS abort on it; release builds drop such keys from the log.
  std::sort(log_.begin(), log_.end());
  const auto dup = std::adjacent_find(log_.begin(), log_.end());
  DUET_CHECK(dup == log_.end(), "update log holds key " + std::to_string(dup == log_.end() ? 0 : *dup) + " twice");
  log_.erase(std::unique(log_.begin(), log_.end()), log_.end());
  std::vector<LogRecord> out;
  out.reserve(log_.size());
  std::size_t kept = 0;
  for (std::uint64_t k : log_) {
    LogRecord rec;
    if (!read_logged(k, false, &rec)) continue;
    out.push_back(rec);
    log_[kept++] = k;
  }
  log_.resize(kept);
  return out;
}

std::vector<HotCache::LogRecord> HotCache::take_log() {
  std::vector<std::uint64_t> keys;
  {
    std::lock_guard<std::mutex> lg(log_mutex_);
    keys.swap(log_);
  }
  // From here an update of one of these keys either comes before read_logged takes it (it
  // finds the entry still logged, appends nothing, and read_logged records its value) or after
  // (it finds the entry clean and unlogged and appends the key to the new log).
  std::sort(keys.begin(), keys.end());  // bucket order is random anyway; sorted, the store's
                                        // batch and a later settle see each key once
  std::vector<LogRecord> out;
  out.reserve(keys.size());
  for (std::uint64_t k : keys) {
    LogRecord rec;
    if (read_logged(k, true, &rec)) out.push_back(rec);
  }
  return out;
}

void HotCache::settle_unapplied(const std::vector<LogRecord>& records, const std::vector<std::uint8_t>& applied,
                                std::vector<std::uint64_t>* orphans) {
  for (std::size_t j = 0; j < records.size(); ++j) {
    if (applied[j]) continue;
    const LogRecord& r = records[j];
    bool relog = false;
    {
      std::shared_lock<sched::StripedSharedMutex> rl(resize_);
      Bucket& b = table_.load(std::memory_order_relaxed)->bucket(r.ikey);
      WriteLock lk(b);
      Node* n;
      unsigned i;
      // No eviction runs (the caller holds the switch lock), so the entry is resident.
      const bool resident = find(b, r.ikey, &n, &i);
      DUET_CHECK(resident, "key " + std::to_string(r.ikey) + " left the cache during an early replay");
      if (resident && !(n->flags[i] & kDirty)) {
        // Unchanged since take_log (every update sets kDirty): the cache owns its value again.
        racy_store(n->flags[i], static_cast<std::uint8_t>(n->flags[i] | kDirty | kLogged));
        relog = true;
      } else if (r.present) {
        orphans->push_back(r.handle);  // replaced meanwhile, never reached the store
      }
    }
    if (relog) append_log(r.ikey);
  }
}

void HotCache::mark_replayed(const std::vector<std::uint64_t>& keys) {
  {
    std::lock_guard<std::mutex> lk(log_mutex_);
    if (keys.size() == log_.size()) {
      log_.clear();
    } else {
      std::vector<std::uint64_t> sorted = keys;
      std::sort(sorted.begin(), sorted.end());
      std::erase_if(log_, [&](std::uint64_t k) { return std::binary_search(sorted.begin(), sorted.end(), k); });
    }
  }
  for (std::uint64_t k : keys) {
    std::shared_lock<sched::StripedSharedMutex> rl(resize_);
    Bucket& b = table_.load(std::memory_order_relaxed)->bucket(k);
    WriteLock lk(b);
    Node* n;
    unsigned i;
    if (find(b, k, &n, &i)) racy_store(n->flags[i], static_cast<std::uint8_t>(n->flags[i] & kPresent));
  }
}

std::uint64_t HotCache::evict_if(const std::function<bool(std::uint64_t)>& cold) {
  std::uint64_t evicted = 0;
  std::shared_lock<sched::StripedSharedMutex> rl(resize_);
  const Table* t = table_.load(std::memory_order_relaxed);
  for (std::uint64_t bi = 0; bi <= t->mask; ++bi) {
    Bucket& b = t->buckets[bi];
    WriteLock lk(b);
    for (Node* n = &b.head; n; n = n->next) {
      for (unsigned i = 0; i < 8; ++i) {
        if (n->keys[i] != kEmpty && cold(n->keys[i])) {
          DUET_CHECK(!(n->flags[i] & (kDirty | kLogged)),
                     "evicting key " + std::to_string(n->keys[i]) + " whose update is not replayed (flags " +
                         std::to_string(n->flags[i]) + ")");
          racy_store(n->keys[i], kEmpty);
          racy_store(n->handles[i], std::uint64_t(0));
          racy_store(n->flags[i], std::uint8_t(0));
          ++evicted;
        }
      }
    }
  }
  size_.fetch_sub(evicted, std::memory_order_relaxed);
  return evicted;
}

}  // namespace duet::kv
