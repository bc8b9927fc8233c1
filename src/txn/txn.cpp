// SnapKV transactions: BEGIN, READ, WRITE, SCAN, SNAPSHOT (Algorithms 2-4), COMMIT (Algorithm 1).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "duet/txn.hpp"
#include "gpu/device.hpp"
#include "sched/thread_pool.hpp"
#include "txn/core.hpp"

namespace duet {

using txn::Core;
using txn::Entry;
using txn::Version;

namespace {

Status inactive() { return Status::InvalidArgument("transaction is not active"); }

Status check_key(const TxnLimits& l, std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("key is empty");
  if (key.size() > l.max_key_bytes)
    return Status::TooLarge("key of " + std::to_string(key.size()) + " bytes is over the limit of " +
                            std::to_string(l.max_key_bytes));
  return Status::Ok();
}

Status check_range(const TxnLimits& l, const TxnRange& r) {
  if (!r.start_unbounded && r.start.size() > l.max_key_bytes) return Status::TooLarge("range start is over the key limit");
  if (!r.end_unbounded && r.end.size() > l.max_key_bytes) return Status::TooLarge("range end is over the key limit");
  if (!r.start_unbounded && !r.end_unbounded && r.start > r.end)
    return Status::InvalidArgument("inverted range: start is after end");
  return Status::Ok();
}

bool in_range(const TxnRange& r, std::string_view k) {
  if (!r.start_unbounded) {
    const int c = k.compare(r.start);
    if (c < 0 || (c == 0 && !r.start_inclusive)) return false;
  }
  if (!r.end_unbounded) {
    const int c = k.compare(r.end);
    if (c > 0 || (c == 0 && !r.end_inclusive)) return false;
  }
  return true;
}

void yield_n(unsigned n) {
  for (unsigned i = 0; i < n; ++i) std::this_thread::yield();
}

}  // namespace

const char* txn_outcome_name(TxnOutcome o) {
  switch (o) {
    case TxnOutcome::kCommitted: return "committed";
    case TxnOutcome::kConflict: return "conflict";
    case TxnOutcome::kSnapshotTooOld: return "snapshot too old";
  }
  return "unknown";
}

// ---------------------------------------------------------------- Txn

Txn::~Txn() { abort(); }

Status Txn::enter() {
  if (!active_) return inactive();
  std::uint32_t idle = 0;
  if (core_->slots[slot_].state.compare_exchange_strong(idle, 1, std::memory_order_seq_cst)) return Status::Ok();
  // Doomed by the collector to bound memory.
  core_->too_old.fetch_add(1, std::memory_order_relaxed);
  end();
  return Status::ResourceExhausted("snapshot too old: the transaction was aborted to bound memory");
}

void Txn::leave() { core_->slots[slot_].state.store(0, std::memory_order_release); }

void Txn::end() {
  core_->release(slot_);
  active_ = false;  // core_ stays: a Txn reused on its keyspace copies no shared_ptr
  writes_.clear();
  watches_.clear();
}

void Txn::abort() {
  if (active_) end();
}

Status Txn::get(std::string_view key, std::string* value, bool* found) {
  if (!active_) return inactive();
  Status s = check_key(core_->cfg.limits, key);
  if (!s.ok()) return s;
  if (auto it = writes_.find(key); it != writes_.end()) {
    *found = it->second.has_value();
    if (*found) *value = *it->second;
    else value->clear();
    return Status::Ok();
  }
  s = enter();
  if (!s.ok()) return s;
  Entry* e = core_->index.find(key);
  Version* v = e ? core_->read(e, start_) : nullptr;
  *found = v != nullptr && !v->tombstone;
  if (*found) value->assign(v->data(), v->len);
  else value->clear();
  leave();
  return Status::Ok();
}

Status Txn::put(std::string_view key, std::string_view value) {
  if (!active_) return inactive();
  Status s = check_key(core_->cfg.limits, key);
  if (!s.ok()) return s;
  if (value.size() > core_->cfg.limits.max_value_bytes)
    return Status::TooLarge("value of " + std::to_string(value.size()) + " bytes is over the limit of " +
                            std::to_string(core_->cfg.limits.max_value_bytes));
  auto it = writes_.find(key);
  if (it == writes_.end()) writes_.emplace(std::string(key), std::string(value));
  else it->second = std::string(value);
  return Status::Ok();
}

Status Txn::watch(std::string_view key, std::uint64_t since) {
  if (!active_) return inactive();
  Status s = check_key(core_->cfg.limits, key);
  if (!s.ok()) return s;
  auto it = watches_.find(key);
  if (it == watches_.end()) watches_.emplace(std::string(key), since);
  else it->second = std::min(it->second, since);
  return Status::Ok();
}

Status Txn::del(std::string_view key) {
  if (!active_) return inactive();
  Status s = check_key(core_->cfg.limits, key);
  if (!s.ok()) return s;
  auto it = writes_.find(key);
  if (it == writes_.end()) writes_.emplace(std::string(key), std::nullopt);
  else it->second.reset();
  return Status::Ok();
}

namespace {

/// Algorithm 3 as a stream: the index's entries in `r` read at `start`, merged in key order
/// with the transaction's own writes (which replace or delete what the index holds). Calls
/// emit(key, value) for each present pair, at most limit + 1 times (0: no limit); returns
/// whether the limit cut the range (then *resume is the last key emitted within the limit).
template <class Emit>
bool merged_range(Core& c, std::uint64_t start,
                  const std::map<std::string, std::optional<std::string>, std::less<>>& writes, const TxnRange& r,
                  std::size_t limit, Emit&& emit, std::string* resume) {
  auto w = writes.begin();
  if (!r.start_unbounded) w = r.start_inclusive ? writes.lower_bound(r.start) : writes.upper_bound(r.start);
  std::size_t n = 0;
  std::string last;
  auto out = [&](std::string_view k, std::string_view v) {
    if (limit != 0 && n == limit) return false;
    emit(k, v);
    ++n;
    if (limit != 0) last.assign(k);
    return true;
  };
  auto own_before = [&](std::string_view bound, bool all) {
    for (; w != writes.end() && in_range(r, w->first) && (all || w->first < bound); ++w)
      if (w->second && !out(w->first, *w->second)) return false;
    return true;
  };
  const std::size_t chunk = limit ? std::min<std::size_t>(2 * limit + 16, 4096) : 4096;
  TxnRange cur = r;
  std::vector<Entry*> ents;
  for (;;) {
    ents.clear();
    bool truncated = false;
    c.index.collect_range(cur, chunk, &ents, &truncated);
    for (Entry* e : ents) {
      const std::string_view k = e->key();
      if (!own_before(k, false)) goto cut;
      if (w != writes.end() && w->first == k) {
        if (w->second && !out(k, *w->second)) goto cut;
        ++w;
        continue;
      }
      Version* v = c.read(e, start);
      if (v != nullptr && !v->tombstone && !out(k, {v->data(), v->len})) goto cut;
    }
    if (!truncated) break;
    cur.start.assign(ents.back()->key());
    cur.start_inclusive = false;
    cur.start_unbounded = false;
  }
  if (!own_before({}, true)) goto cut;
  return false;
cut:
  if (resume) *resume = last;
  return true;
}

}  // namespace

Status Txn::scan(const TxnRange& range, std::size_t limit, std::vector<std::pair<std::string, std::string>>* out,
                 bool* more, std::string* resume) {
  if (!active_) return inactive();
  Status s = check_range(core_->cfg.limits, range);
  if (!s.ok()) return s;
  s = enter();
  if (!s.ok()) return s;
  const bool cut = merged_range(
      *core_, start_, writes_, range, limit,
      [&](std::string_view k, std::string_view v) { out->emplace_back(std::string(k), std::string(v)); }, resume);
  leave();
  if (more) *more = cut;
  return Status::Ok();
}

void TxnSnapshot::clear() {
  key_bytes.clear();
  value_bytes.clear();
  key_offsets.assign(1, 0);
  value_offsets.assign(1, 0);
  arg_offsets.assign(1, 0);
  present.clear();
  more.clear();
  resume.clear();
}

namespace {

void append_slot(TxnSnapshot* o, std::string_view k, std::string_view v, bool present) {
  o->key_bytes.insert(o->key_bytes.end(), k.begin(), k.end());
  o->value_bytes.insert(o->value_bytes.end(), v.begin(), v.end());
  o->key_offsets.push_back(o->key_bytes.size());
  o->value_offsets.push_back(o->value_bytes.size());
  o->present.push_back(present ? 1 : 0);
}

}  // namespace

/// Pool of threads for large SNAPSHOT ranges, made on first use.
struct SnapshotPool {
  std::once_flag once;
  std::unique_ptr<sched::ThreadPool> pool;
};

namespace {

sched::ThreadPool* snapshot_pool(const TxnConfig& cfg) {
  static SnapshotPool sp;  // shared by every txn keyspace of the process
  std::call_once(sp.once, [&] {
    unsigned n = cfg.snapshot_threads ? cfg.snapshot_threads : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
    sp.pool = std::make_unique<sched::ThreadPool>(n);
  });
  return sp.pool.get();
}

/// Entries of a SNAPSHOT range walked by one thread before the rest is walked in pieces.
constexpr std::size_t kSerialRangeKeys = 4096;

/// Reads the versions of ents[b, e) at `start` into vs (null: absent or deleted). Two stages
/// of prefetch keep several entries and their newest versions in flight: the read of one pair
/// is two dependent cache misses (entry, then version).
void read_versions(Core& c, std::uint64_t start, const std::vector<Entry*>& ents, std::size_t b, std::size_t e,
                   Version** vs) {
  constexpr std::size_t kEntryAhead = 16, kVersionAhead = 8;
  for (std::size_t i = b; i < e; ++i) {
    if (i + kEntryAhead < e) __builtin_prefetch(ents[i + kEntryAhead]);
    if (i + kVersionAhead < e) __builtin_prefetch(ents[i + kVersionAhead]->head.load(std::memory_order_relaxed));
    Version* v = c.read(ents[i], start);
    vs[i] = (v != nullptr && !v->tombstone) ? v : nullptr;
  }
}

/// Appends the present pairs of a range (ents with their versions vs, null: absent) to *o:
/// offsets from one prefix sum, each column resized once, then the bytes copied straight to
/// their offsets (by `pool` when given): no allocation or growth per pair.
void emit_range(const std::vector<Entry*>& ents, const std::vector<Version*>& vs, TxnSnapshot* o,
                sched::ThreadPool* pool) {
  const std::size_t n = ents.size(), s0 = o->present.size();
  std::size_t m = 0;
  std::uint64_t kb = o->key_bytes.size(), vb = o->value_bytes.size();
  o->key_offsets.resize(s0 + 1 + n);
  o->value_offsets.resize(s0 + 1 + n);
  // Compact the present pairs to the front of `live` while laying out their offsets.
  std::vector<std::size_t> live(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (vs[i] == nullptr) continue;
    kb += ents[i]->key_len;
    vb += vs[i]->len;
    o->key_offsets[s0 + 1 + m] = kb;
    o->value_offsets[s0 + 1 + m] = vb;
    live[m++] = i;
  }
  o->key_offsets.resize(s0 + 1 + m);
  o->value_offsets.resize(s0 + 1 + m);
  o->key_bytes.resize(kb);
  o->value_bytes.resize(vb);
  o->present.resize(s0 + m, 1);
  auto copy = [&](std::size_t b, std::size_t e) {
    char* kd = o->key_bytes.data();
    char* vd = o->value_bytes.data();
    for (std::size_t j = b; j < e; ++j) {
      const Entry* en = ents[live[j]];
      Version* v = vs[live[j]];
      std::memcpy(kd + o->key_offsets[s0 + j], en->key().data(), en->key_len);
      if (v->len) std::memcpy(vd + o->value_offsets[s0 + j], v->data(), v->len);
    }
  };
  if (pool != nullptr) pool->parallel_for(m, 4096, [&](std::size_t b, std::size_t e, unsigned) { copy(b, e); });
  else copy(0, m);
}

/// A range with no own writes in it, read by several threads: versions found in slices, then
/// the bytes copied at offsets from a prefix sum.
void parallel_range(Core& c, std::uint64_t start, const std::vector<Entry*>& ents, TxnSnapshot* o) {
  sched::ThreadPool* pool = snapshot_pool(c.cfg);
  std::vector<Version*> vs(ents.size());
  pool->parallel_for(ents.size(), 4096,
                     [&](std::size_t b, std::size_t e, unsigned) { read_versions(c, start, ents, b, e, vs.data()); });
  emit_range(ents, vs, o, pool);
}

/// The same on the calling thread, for ranges under parallel_range_keys.
void serial_range(Core& c, std::uint64_t start, const std::vector<Entry*>& ents, TxnSnapshot* o) {
  std::vector<Version*> vs(ents.size());
  read_versions(c, start, ents, 0, ents.size(), vs.data());
  emit_range(ents, vs, o, nullptr);
}

}  // namespace

Status Txn::snapshot(std::span<const SnapshotArg> args, TxnSnapshot* out) {
  if (!active_) return inactive();
  for (const SnapshotArg& a : args) {
    Status s = a.is_range ? check_range(core_->cfg.limits, a.range) : check_key(core_->cfg.limits, a.key);
    if (!s.ok()) return s;
  }
  Status s = enter();
  if (!s.ok()) return s;
  out->clear();
  Core& c = *core_;
  for (const SnapshotArg& a : args) {
    bool more = false;
    std::string resume;
    if (!a.is_range) {
      // Algorithm 4: own write first, else the version at the start.
      if (auto it = writes_.find(a.key); it != writes_.end()) {
        append_slot(out, a.key, it->second ? std::string_view(*it->second) : std::string_view(), it->second.has_value());
      } else {
        Entry* e = c.index.find(a.key);
        Version* v = e ? c.read(e, start_) : nullptr;
        const bool present = v != nullptr && !v->tombstone;
        append_slot(out, a.key, present ? std::string_view(v->data(), v->len) : std::string_view(), present);
      }
    } else {
      auto w = a.range.start_unbounded ? writes_.begin() : writes_.lower_bound(a.range.start);
      const bool own = w != writes_.end() && in_range(a.range, w->first);
      bool done = false;
      if (a.limit == 0 && !own) {
        // The first entries serially; a range that goes on is walked in pieces at once.
        std::vector<Entry*> ents;
        bool truncated = false;
        c.index.collect_range(a.range, kSerialRangeKeys, &ents, &truncated);
        if (truncated) {
          TxnRange rest = a.range;
          rest.start.assign(ents.back()->key());
          rest.start_inclusive = false;
          rest.start_unbounded = false;
          c.index.collect_range_parallel(rest, snapshot_pool(c.cfg), &ents);
        }
        if (ents.size() >= c.cfg.parallel_range_keys) {
          parallel_range(c, start_, ents, out);
          done = true;
        } else {
          serial_range(c, start_, ents, out);
          done = true;
        }
      }
      if (!done)
        more = merged_range(c, start_, writes_, a.range, a.limit,
                            [&](std::string_view k, std::string_view v) { append_slot(out, k, v, true); }, &resume);
    }
    out->arg_offsets.push_back(out->present.size());
    out->more.push_back(more ? 1 : 0);
    out->resume.push_back(std::move(resume));
  }
  leave();
  return Status::Ok();
}

Status TxnSnapshot::to_fixed(std::vector<std::uint64_t>* keys, std::vector<char>* values, std::size_t* value_width) const {
  std::size_t width = 0;
  bool have = false;
  for (std::size_t i = 0; i < size(); ++i) {
    if (key(i).size() > 8) return Status::InvalidArgument("fixed-width form: key " + std::to_string(i) + " is over 8 bytes");
    if (!present[i]) continue;
    if (have && value(i).size() != width)
      return Status::InvalidArgument("fixed-width form: values differ in size");
    width = value(i).size();
    have = true;
  }
  keys->assign(size(), 0);
  values->assign(size() * width, 0);
  for (std::size_t i = 0; i < size(); ++i) {
    (*keys)[i] = txn::prefix_of(key(i));
    if (present[i] && width) std::memcpy(values->data() + i * width, value(i).data(), width);
  }
  *value_width = width;
  return Status::Ok();
}

// ---------------------------------------------------------------- PackedSnapshot

PackedSnapshot::~PackedSnapshot() {
  if (data_) gpu::free_host(data_);
}
PackedSnapshot::PackedSnapshot(PackedSnapshot&& o) noexcept : data_(o.data_), bytes_(o.bytes_), pinned_(o.pinned_) {
  o.data_ = nullptr;
  o.bytes_ = 0;
}
PackedSnapshot& PackedSnapshot::operator=(PackedSnapshot&& o) noexcept {
  if (this != &o) {
    if (data_) gpu::free_host(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    pinned_ = o.pinned_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}
std::uint64_t PackedSnapshot::slots() const {
  std::uint64_t v = 0;
  if (data_) std::memcpy(&v, data_, 8);
  return v;
}
std::uint64_t PackedSnapshot::args() const {
  std::uint64_t v = 0;
  if (data_) std::memcpy(&v, data_ + 8, 8);
  return v;
}
std::size_t PackedSnapshot::value_bytes_at() const {
  std::uint64_t kb = 0;
  std::memcpy(&kb, data_ + key_offsets_at() + 8 * slots(), 8);
  return (key_bytes_at() + kb + 7) & ~std::size_t{7};
}

Status PackedSnapshot::pack(const TxnSnapshot& s, PackedSnapshot* out) {
  const std::uint64_t n = s.size(), m = s.arg_offsets.size() - 1;
  auto align = [](std::size_t x) { return (x + 7) & ~std::size_t{7}; };
  const std::size_t present_at = 16 + 8 * (n + 1) * 2 + 8 * (m + 1);
  const std::size_t keys_at = align(present_at + n);
  const std::size_t values_at = align(keys_at + s.key_bytes.size());
  const std::size_t total = values_at + s.value_bytes.size();
  char* p = static_cast<char*>(gpu::alloc_host(total));
  if (p == nullptr) return Status::ResourceExhausted("cannot allocate a packed snapshot of " + std::to_string(total) + " bytes");
  std::memset(p, 0, values_at);
  std::memcpy(p, &n, 8);
  std::memcpy(p + 8, &m, 8);
  std::memcpy(p + 16, s.key_offsets.data(), 8 * (n + 1));
  std::memcpy(p + 16 + 8 * (n + 1), s.value_offsets.data(), 8 * (n + 1));
  std::memcpy(p + 16 + 16 * (n + 1), s.arg_offsets.data(), 8 * (m + 1));
  if (n) std::memcpy(p + present_at, s.present.data(), n);
  if (!s.key_bytes.empty()) std::memcpy(p + keys_at, s.key_bytes.data(), s.key_bytes.size());
  if (!s.value_bytes.empty()) std::memcpy(p + values_at, s.value_bytes.data(), s.value_bytes.size());
  *out = PackedSnapshot();
  out->data_ = p;
  out->bytes_ = total;
  out->pinned_ = gpu::device().present;
  return Status::Ok();
}

// ---------------------------------------------------------------- commit (Algorithm 1)

Status Txn::commit(CommitResult* r) {
  if (!active_) return inactive();
  if (r == nullptr) return Status::InvalidArgument("commit: null result");
  *r = CommitResult{};
  Status s = enter();
  if (!s.ok()) {
    r->outcome = TxnOutcome::kSnapshotTooOld;
    return Status::Ok();
  }
  Core& c = *core_;
  if (writes_.empty() && watches_.empty()) {
    c.read_only.add(1);
    r->commit_ts = start_;
    leave();
    end();
    return Status::Ok();
  }
  const TxnFaults& f = c.cfg.faults;
  // New versions are made before any lock is taken, so the locks are held only to validate,
  // take the timestamp and install. `ws` is the commit's key set in key order: written keys
  // (with their new version) and watched ones (version null), each with the bound its newest
  // version must not pass.
  struct Item {
    std::string_view key;
    Entry* e;
    Version* v;
    std::uint64_t bound;
    std::atomic<Version*>* hint;  ///< the point map's prefetch hint for e's newest version
  };
  thread_local std::vector<Item> ws;
  ws.clear();
  auto destroy_versions = [&] {
    for (auto& it : ws)
      if (it.v != nullptr) Version::destroy(it.v);
  };
  std::uint64_t need = 0;
  for (const auto& [k, v] : writes_) need += sizeof(Version) + (v ? v->size() : 0);
  if (c.cfg.memory_budget_bytes && c.bytes.load(std::memory_order_relaxed) + need > c.cfg.memory_budget_bytes) {
    leave();
    end();
    return Status::ResourceExhausted("txn keyspace memory budget exhausted; the transaction was aborted");
  }
  {
    auto w = writes_.begin();
    auto a = watches_.begin();
    while (w != writes_.end() || a != watches_.end()) {
      const bool take_w = a == watches_.end() || (w != writes_.end() && w->first <= a->first);
      const bool take_a = w == writes_.end() || (a != watches_.end() && a->first <= w->first);
      Item it{take_w ? std::string_view(w->first) : std::string_view(a->first), nullptr, nullptr, start_, nullptr};
      if (take_a) it.bound = std::min(it.bound, a->second);
      if (take_w) {
        const auto& v = w->second;
        it.v = Version::make(v ? std::string_view(*v) : std::string_view(), !v.has_value());
        if (it.v == nullptr) {
          destroy_versions();
          leave();
          end();
          return Status::ResourceExhausted("out of memory for a version; the transaction was aborted");
        }
      }
      ws.push_back(it);
      if (take_w) ++w;
      if (take_a) ++a;
    }
  }
  txn::Slot& me = c.slots[slot_];
  const std::uint64_t lock_word = slot_ + 1;
  std::uint64_t t = 0;
  std::uint64_t created_bytes = 0;  // entries this commit created (counted once, at its end)
  auto take_ts = [&] {
    me.commit.store(1, std::memory_order_seq_cst);
    t = c.gts.fetch_add(1, std::memory_order_seq_cst) + 1;
    // Release suffices: a reader that must wait for this commit read gts after the increment,
    // so it sees the "taking" store (seq_cst, before the increment) or this later one.
    me.commit.store(t << 1, std::memory_order_release);
  };
  // A commit that only watches takes no timestamp: holding every lock at once is its moment.
  const bool writes = !writes_.empty();
  if (f.ts_before_locks && writes) {
    take_ts();
    if (f.hook) f.hook("ts", {});
  }
  for (std::size_t i = 0; i < ws.size(); ++i) {
    Item& it = ws[i];
    bool created = false;
    Entry* e = c.index.find_or_insert(it.key, &created, &it.hint);
    if (created) created_bytes += sizeof(Entry) + it.key.size();
    for (unsigned spins = 0;; ++spins) {
      std::uint64_t expect = 0;
      if (e->lock.load(std::memory_order_relaxed) == 0 &&
          e->lock.compare_exchange_weak(expect, lock_word, std::memory_order_seq_cst))
        break;
      if (spins < 64) _mm_pause();
      else std::this_thread::yield();
    }
    it.e = e;
    Version* h = e->head.load(std::memory_order_acquire);
    if (!f.skip_validation && h != nullptr && h->ts > it.bound) {
      // First updater wins: abort, naming the key.
      for (std::size_t j = 0; j <= i; ++j) ws[j].e->lock.store(0, std::memory_order_seq_cst);
      destroy_versions();
      me.commit.store(0, std::memory_order_relaxed);
      if (created_bytes) c.bytes.fetch_add(created_bytes, std::memory_order_relaxed);  // entries stay
      c.conflicts.add(1);
      r->outcome = TxnOutcome::kConflict;
      r->conflict_key = std::string(it.key);
      leave();
      end();
      return Status::Ok();
    }
    yield_n(f.step_yields);
    if (f.hook) f.hook("locked", it.key);
  }
  if (!writes) {
    for (auto& it : ws) it.e->lock.store(0, std::memory_order_seq_cst);
    if (created_bytes) c.bytes.fetch_add(created_bytes, std::memory_order_relaxed);
    c.read_only.add(1);
    r->commit_ts = start_;
    leave();
    end();
    return Status::Ok();
  }
  if (!f.ts_before_locks) {
    take_ts();
    yield_n(f.step_yields);
    if (f.hook) f.hook("ts", {});
  }
  std::int64_t present_delta = 0;
  std::uint64_t added = 0, obsoleted = 0, bytes = 0;
  // Versions below the collection floor are unreachable for every reader now and later; the
  // committer cuts them from each key it installs on (under the key's lock, as the collector
  // does), so they are freed by the thread that allocated them, at once, and the collector
  // rarely has to run. Freed after the locks are released.
  // A planted fault in the read or install protocol lets readers hold versions that no start
  // protects (a read_latest reader, or one that missed a lock taken after its timestamp), so
  // nothing is freed under it: the controls run without the collector for the same reason.
  const bool unprotected_reads = f.read_latest || f.ts_before_locks || f.install_after_unlock;
  const std::uint64_t floor = unprotected_reads ? 0 : c.gc_floor.load(std::memory_order_acquire);
  thread_local std::vector<Version*> tails;
  tails.clear();
  // The last written key, for the drop_version fault.
  std::size_t last_write = 0, n_writes = 0;
  for (std::size_t j = 0; j < ws.size(); ++j)
    if (ws[j].v != nullptr) last_write = j, ++n_writes;
  for (std::size_t j = 0; j < ws.size(); ++j) {
    Entry* e = ws[j].e;
    Version* v = ws[j].v;
    if (v == nullptr) {  // watched only: validated, nothing to install
      e->lock.store(0, std::memory_order_seq_cst);
      continue;
    }
    Version* old = e->head.load(std::memory_order_relaxed);
    v->ts = t;
    v->older.store(old, std::memory_order_relaxed);
    if (f.drop_version && n_writes > 1 && j == last_write) {
      Version::destroy(v);
      e->lock.store(0, std::memory_order_seq_cst);
      continue;
    }
    if (f.install_after_unlock) {
      e->lock.store(0, std::memory_order_seq_cst);
      yield_n(f.step_yields);
      if (f.hook) f.hook("unlocked", e->key());
      e->head.store(v, std::memory_order_release);
    } else {
      e->head.store(v, std::memory_order_release);
      if (old != nullptr && floor != 0)
        // At most 4 versions above the floor are stepped over: on a hot key many commits
        // can land between two raises of the floor, and the walk holds the key's lock.
        if (Version* t = Core::cut_below(old, floor, 4)) tails.push_back(t);
      // Release suffices: a reader that sees the lock free (an acquire) sees the head; one
      // that must wait saw the lock taken, which the seq_cst CAS made visible before the ts.
      e->lock.store(0, std::memory_order_release);
    }
    if (ws[j].hint != nullptr) ws[j].hint->store(v, std::memory_order_relaxed);
    if (f.hook) f.hook("installed", e->key());
    present_delta += (v->tombstone ? 0 : 1) - ((old != nullptr && !old->tombstone) ? 1 : 0);
    ++added;
    bytes += v->bytes();
    if (old != nullptr) {
      ++obsoleted;
      c.enqueue(e);
    }
  }
  me.commit.store(0, std::memory_order_relaxed);
  std::uint64_t freed = 0, freed_bytes = 0;
  for (Version* tail : tails) {
    std::uint64_t n = 0, b = 0;
    Core::free_tail(tail, &n, &b);
    freed += n;
    freed_bytes += b;
  }
  if (freed) c.reclaimed.add(static_cast<std::int64_t>(freed));
  c.versions.add(static_cast<std::int64_t>(added) - static_cast<std::int64_t>(freed));
  if (present_delta != 0) c.present_keys.add(present_delta);
  std::int64_t obs = 0;
  const bool folded = c.add_pending(slot_, static_cast<std::int64_t>(obsoleted) - static_cast<std::int64_t>(freed),
                                    static_cast<std::int64_t>(bytes + created_bytes) - static_cast<std::int64_t>(freed_bytes),
                                    &obs);
  c.commits.add(1);
  r->commit_ts = t;
  leave();
  end();
  // Each fold of this slot's counts (every flush_every obsolete versions) also moves the
  // floor up to the oldest start now, so that later commits free what is below it (a scan
  // of the slots in use, under the high-water mark).
  if (folded) {
    c.raise_floor(c.oldest_start(true));
    if (obs >= static_cast<std::int64_t>(c.cfg.gc_watermark)) c.request_gc();
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- TxnSpace

class TxnSpaceImpl final : public TxnSpace {
 public:
  TxnSpaceImpl(std::string name, std::shared_ptr<Core> core) : name_(std::move(name)), core_(std::move(core)) {}
  KeyspaceKind kind() const override { return KeyspaceKind::kTxn; }
  const std::string& name() const override { return name_; }
  std::uint64_t size() const override { return static_cast<std::uint64_t>(core_->present_keys.sum()); }

  Status scan(std::uint64_t cursor, std::size_t count, std::vector<std::string>* keys, std::uint64_t* next) override {
    // Entries never move in the creation log, so a position is a stable cursor; each key's
    // presence is read in a transaction so collection cannot free what is looked at.
    Txn t;
    Status s = begin(&t);
    if (!s.ok()) return s;
    std::vector<Entry*> ents;
    core_->index.entries_from(cursor, std::max<std::size_t>(count, 1), &ents, next);
    s = t.enter();
    if (!s.ok()) return s;
    for (Entry* e : ents) {
      Version* v = core_->read(e, t.start_);
      if (v != nullptr && !v->tombstone) keys->emplace_back(e->key());
    }
    t.leave();
    t.abort();
    return Status::Ok();
  }

  Status begin(Txn* t) override {
    if (t == nullptr) return Status::InvalidArgument("begin: null transaction");
    t->abort();
    unsigned slot = 0;
    std::uint64_t start = 0;
    Status s = core_->claim(&slot, &start);
    if (!s.ok()) return s;
    // A reused Txn keeps its keyspace's core: copying the shared_ptr for every transaction
    // wrote its control block's count, one line shared by every thread, twice per transaction.
    if (t->core_ != core_) t->core_ = core_;
    t->active_ = true;
    t->slot_ = slot;
    t->start_ = start;
    return Status::Ok();
  }

  void collect() override { core_->collect(); }

  std::uint64_t now() const override { return core_->gts.load(std::memory_order_seq_cst); }

  TxnStats stats() const override {
    TxnStats s;
    Core& c = *core_;
    s.commits = static_cast<std::uint64_t>(c.commits.sum());
    s.conflicts = static_cast<std::uint64_t>(c.conflicts.sum());
    s.too_old = c.too_old.load();
    s.read_only = static_cast<std::uint64_t>(c.read_only.sum());
    s.keys = c.index.entry_count();
    s.versions = static_cast<std::uint64_t>(c.versions.sum());
    s.obsolete_versions = c.obsolete_total();
    s.collections = c.collections.load();
    s.reclaimed = static_cast<std::uint64_t>(c.reclaimed.sum());
    s.bytes = c.bytes_total();
    s.ts = c.gts.load();
    return s;
  }
  const TxnConfig& config() const override { return core_->cfg; }

 private:
  std::string name_;
  std::shared_ptr<Core> core_;
};

Status TxnSpace::open(std::string name, const TxnConfig& c, std::shared_ptr<TxnSpace>* out) {
  if (out == nullptr) return Status::InvalidArgument("open: null output");
  if (c.limits.max_key_bytes == 0 || c.limits.max_key_bytes > 64 * 1024)
    return Status::InvalidArgument("limits.max_key_bytes must be 1 .. 65536");
  if (c.limits.max_value_bytes > (512ull << 20)) return Status::InvalidArgument("limits.max_value_bytes must be at most 512 MiB");
  if (c.max_transactions == 0 || c.max_transactions > (1u << 20))
    return Status::InvalidArgument("max_transactions must be 1 .. 2^20");
  if (c.gc_watermark == 0) return Status::InvalidArgument("gc_watermark must be at least 1");
  if (c.snapshot_threads > 256) return Status::InvalidArgument("snapshot_threads must be at most 256");
  if (c.parallel_range_keys == 0) return Status::InvalidArgument("parallel_range_keys must be at least 1");
  auto core = std::make_shared<Core>(c);
  Status s = core->index.init();
  if (!s.ok()) return s;
  *out = std::make_shared<TxnSpaceImpl>(std::move(name), std::move(core));
  return Status::Ok();
}

}  // namespace duet
