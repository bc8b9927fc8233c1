// SnapKV transactions: BEGIN, READ, WRITE, SCAN, SNAPSHOT (Algorithms 2-4), COMMIT (Algorithm 1).
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "common/ascii.hpp"
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

/// Starts loading v's value lines past the header's line, at most max_lines lines in all
/// (longer values stream in while they are copied).
void prefetch_value(const Version* v, std::size_t max_lines) {
  const char* p = reinterpret_cast<const char*>(v);
  const std::size_t lines = std::min<std::size_t>((sizeof(Version) + v->len + 63) / 64, max_lines);
  for (std::size_t l = 1; l < lines; ++l) __builtin_prefetch(p + 64 * l);
}

/// A read's answer from the version it found: *found and *value (empty when absent; null and
/// tombstones read as absent).
void answer(Version* v, std::string* value, bool* found) {
  *found = v != nullptr && !v->tombstone;
  if (*found) value->assign(v->data(), v->len);
  else value->clear();
}

/// A read's answer from the transaction's own write of `key` (nullopt: its delete); false when
/// it has not written the key.
template <class Writes>
bool answer_own(const Writes& writes, std::string_view key, std::string* value, bool* found) {
  auto it = writes.find(key);
  if (it == writes.end()) return false;
  *found = it->second.has_value();
  if (*found) *value = *it->second;
  else value->clear();
  return true;
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
  if (answer_own(writes_, key, value, found)) return Status::Ok();
  s = enter();
  if (!s.ok()) return s;
  Entry* e = core_->index.find(key);
  answer(e ? core_->read(e, start_) : nullptr, value, found);
  leave();
  return Status::Ok();
}

Status Txn::get_many(const std::string_view* keys, std::size_t n, std::string* values, bool* found) {
  if (!active_) return inactive();
  for (std::size_t i = 0; i < n; ++i)
    if (Status s = check_key(core_->cfg.limits, keys[i]); !s.ok()) return s;
  Status s = enter();
  if (!s.ok()) return s;
  for (std::size_t i = 0; i < n; i += txn::Index::kFindMany) {
    const std::size_t m = std::min(n - i, txn::Index::kFindMany);
    Entry* es[txn::Index::kFindMany];
    Version* vs[txn::Index::kFindMany];
    core_->index.find_many(keys + i, m, es);
    // The versions read, then their values' lines prefetched (rows of up to 8 lines), then
    // the copies.
    for (std::size_t j = 0; j < m; ++j) {
      vs[j] = es[j] ? core_->read(es[j], start_) : nullptr;
      if (vs[j] != nullptr) prefetch_value(vs[j], 8);
    }
    for (std::size_t j = 0; j < m; ++j)
      if (!answer_own(writes_, keys[i + j], &values[i + j], &found[i + j])) answer(vs[j], &values[i + j], &found[i + j]);
  }
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
  bool cut = false;
  c.index.walk(r, limit, [&](Entry* const* ents, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      Entry* e = ents[i];
      const std::string_view k = e->key();
      if (!own_before(k, false)) return !(cut = true);
      if (w != writes.end() && w->first == k) {
        if (w->second && !out(k, *w->second)) return !(cut = true);
        ++w;
        continue;
      }
      Version* v = c.read(e, start);
      if (v != nullptr && !v->tombstone && !out(k, {v->data(), v->len})) return !(cut = true);
    }
    return true;
  });
  if (cut) goto cut;
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

/// Pool of threads for large SNAPSHOT ranges, made on first use, with a scratch output per
/// thread. `use` is held across a parallel read (its walk and its copy), so the scratch of one
/// read is never written by another.
struct SnapshotPool {
  std::once_flag once;
  std::unique_ptr<sched::ThreadPool> pool;
  std::mutex use;
  std::vector<TxnSnapshot> scratch;  ///< one per piece of a parallel read; capacity kept between reads
};

namespace {

SnapshotPool& snapshot_pool(const TxnConfig& cfg) {
  static SnapshotPool sp;  // shared by every txn keyspace of the process
  std::call_once(sp.once, [&] {
    unsigned n = cfg.snapshot_threads ? cfg.snapshot_threads : std::min(16u, std::max(1u, std::thread::hardware_concurrency()));
    sp.pool = std::make_unique<sched::ThreadPool>(n);
  });
  return sp;
}

/// Appends to *o the present pairs among ents[0, n) (n <= Index::kWalkBatch) at `start`, in
/// order. The newest versions' lines are prefetched 16 entries ahead (the entries' own lines
/// are loaded: the walk compared their keys), and the value's lines of each version found;
/// then each column is resized once for the batch and the bytes are copied while the batch's
/// lines are still in cache. Returns the pairs appended.
std::size_t append_batch(Core& c, std::uint64_t start, Entry* const* ents, std::size_t n, TxnSnapshot* o) {
  constexpr std::size_t kAhead = 16;
  Entry* es[txn::Index::kWalkBatch];
  Version* vs[txn::Index::kWalkBatch];
  for (std::size_t i = 0; i < std::min(n, kAhead); ++i) __builtin_prefetch(ents[i]->head.load(std::memory_order_relaxed));
  std::size_t m = 0;
  std::uint64_t kadd = 0, vadd = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) __builtin_prefetch(ents[i + kAhead]->head.load(std::memory_order_relaxed));
    Version* v = c.read(ents[i], start);
    if (v == nullptr || v->tombstone) continue;
    prefetch_value(v, 4);
    es[m] = ents[i];
    vs[m++] = v;
    kadd += ents[i]->key_len;
    vadd += v->len;
  }
  if (m == 0) return 0;
  const std::size_t s0 = o->present.size();
  std::uint64_t kb = o->key_bytes.size(), vb = o->value_bytes.size();
  o->key_bytes.resize(kb + kadd);
  o->value_bytes.resize(vb + vadd);
  o->key_offsets.resize(s0 + 1 + m);
  o->value_offsets.resize(s0 + 1 + m);
  o->present.resize(s0 + m, 1);
  char* kd = o->key_bytes.data();
  char* vd = o->value_bytes.data();
  std::uint64_t* ko = o->key_offsets.data() + s0 + 1;
  std::uint64_t* vo = o->value_offsets.data() + s0 + 1;
  for (std::size_t j = 0; j < m; ++j) {
    const std::uint32_t kl = es[j]->key_len;
    const char* kp = reinterpret_cast<const char*>(es[j] + 1);
    if (kl == 8) std::memcpy(kd + kb, kp, 8);  // the common fixed size: one store
    else std::memcpy(kd + kb, kp, kl);
    kb += kl;
    ko[j] = kb;
    const std::uint64_t vl = vs[j]->len;
    if (vl) std::memcpy(vd + vb, vs[j]->data(), vl);
    vb += vl;
    vo[j] = vb;
  }
  return m;
}

/// Appends the points args[0, n) (n <= Index::kFindMany, none of them an own write of the
/// transaction) at `start`, one slot and one argument each: their entries found together
/// (Index::find_many), the versions read and the values' first lines prefetched, then each
/// column resized once and the bytes copied while the lines are in cache.
void append_points(Core& c, std::uint64_t start, const SnapshotArg* args, std::size_t n, TxnSnapshot* o) {
  std::string_view keys[txn::Index::kFindMany];
  Entry* es[txn::Index::kFindMany];
  Version* vs[txn::Index::kFindMany];
  for (std::size_t i = 0; i < n; ++i) keys[i] = args[i].key;
  c.index.find_many(keys, n, es);
  std::uint64_t kadd = 0, vadd = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Version* v = es[i] ? c.read(es[i], start) : nullptr;
    if (v != nullptr && v->tombstone) v = nullptr;
    vs[i] = v;
    kadd += keys[i].size();
    if (v == nullptr) continue;
    prefetch_value(v, 4);
    vadd += v->len;
  }
  const std::size_t s0 = o->present.size();
  std::uint64_t kb = o->key_bytes.size(), vb = o->value_bytes.size();
  o->key_bytes.resize(kb + kadd);
  o->value_bytes.resize(vb + vadd);
  o->key_offsets.resize(s0 + 1 + n);
  o->value_offsets.resize(s0 + 1 + n);
  o->present.resize(s0 + n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!keys[i].empty()) std::memcpy(o->key_bytes.data() + kb, keys[i].data(), keys[i].size());
    kb += keys[i].size();
    o->key_offsets[s0 + 1 + i] = kb;
    if (vs[i] != nullptr && vs[i]->len) std::memcpy(o->value_bytes.data() + vb, vs[i]->data(), vs[i]->len);
    vb += vs[i] != nullptr ? vs[i]->len : 0;
    o->value_offsets[s0 + 1 + i] = vb;
    o->present[s0 + i] = vs[i] != nullptr ? 1 : 0;
    o->arg_offsets.push_back(s0 + 1 + i);
    o->more.push_back(0);
    o->resume.emplace_back();
  }
}

/// Reads the present pairs of r (prefixes [plo, phi] when `between`) at `start` into *o, on the
/// calling thread. Stops after the batch that reaches `stop_after` entries (0: never); returns
/// whether it stopped so, with *last the last entry read (the walk then goes on after it).
bool read_range_serial(Core& c, std::uint64_t start, const TxnRange& r, std::size_t stop_after, TxnSnapshot* o,
                       Entry** last) {
  std::size_t seen = 0;
  bool stopped = false;
  c.index.walk(r, 0, [&](Entry* const* ents, std::size_t n) {
    append_batch(c, start, ents, n, o);
    seen += n;
    if (stop_after != 0 && seen >= stop_after) {
      *last = ents[n - 1];
      stopped = true;
      return false;
    }
    return true;
  });
  return stopped;
}

/// Runs f(i) for every i in [0, n) on all of the pool's threads (the calling thread among
/// them), each thread taking the next i as it finishes one, so uneven pieces even out.
template <class F>
void take_pieces(sched::ThreadPool& pool, std::size_t n, F&& f) {
  std::atomic<std::size_t> next{0};
  pool.parallel_for(pool.threads(), 1, [&](std::size_t, std::size_t, unsigned) {
    for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) f(i);
  });
}

/// Reads the present pairs of r at `start` into *o with the snapshot pool's threads: the
/// range is cut into pieces by prefix value (8 per thread), which the threads take one at a
/// time (so that clustered keys even out), each piece read into its own scratch output. Once
/// every piece is read, the output's columns grow once to their final sizes (without a fill:
/// SnapshotColumn) and the threads copy the pieces to their places, pieces again taken one at
/// a time, so no byte is copied by one thread alone.
void read_range_parallel(Core& c, std::uint64_t start, const TxnRange& r, SnapshotPool& sp, TxnSnapshot* o) {
  sched::ThreadPool& pool = *sp.pool;
  std::lock_guard<std::mutex> lk(sp.use);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> parts;
  c.index.split(r, std::size_t{pool.threads()} * 8, &parts);
  if (parts.empty()) return;
  const std::size_t np = parts.size();
  if (sp.scratch.size() < np) sp.scratch.resize(np);
  for (std::size_t p = 0; p < np; ++p) sp.scratch[p].clear();
  take_pieces(pool, np, [&](std::size_t p) {
    TxnSnapshot& s = sp.scratch[p];
    c.index.walk_between(r, parts[p].first, parts[p].second, 0, [&](Entry* const* ents, std::size_t n) {
      append_batch(c, start, ents, n, &s);
      return true;
    });
  });
  // Where each piece lands: its first slot, key byte and value byte in the output.
  struct Place {
    std::size_t slot;
    std::uint64_t key, value;
  };
  std::vector<Place> at(np + 1);
  at[0] = {o->present.size(), o->key_bytes.size(), o->value_bytes.size()};
  for (std::size_t p = 0; p < np; ++p) {
    const TxnSnapshot& s = sp.scratch[p];
    at[p + 1] = {at[p].slot + s.present.size(), at[p].key + s.key_bytes.size(), at[p].value + s.value_bytes.size()};
  }
  o->key_bytes.resize(at[np].key);
  o->value_bytes.resize(at[np].value);
  o->key_offsets.resize(at[np].slot + 1);
  o->value_offsets.resize(at[np].slot + 1);
  o->present.resize(at[np].slot);
  take_pieces(pool, np, [&](std::size_t p) {
    const TxnSnapshot& s = sp.scratch[p];
    const std::size_t m = s.present.size();
    if (m == 0) return;
    const Place& a = at[p];
    if (!s.key_bytes.empty()) std::memcpy(o->key_bytes.data() + a.key, s.key_bytes.data(), s.key_bytes.size());
    if (!s.value_bytes.empty()) std::memcpy(o->value_bytes.data() + a.value, s.value_bytes.data(), s.value_bytes.size());
    std::memset(o->present.data() + a.slot, 1, m);
    std::uint64_t* ko = o->key_offsets.data() + a.slot + 1;
    std::uint64_t* vo = o->value_offsets.data() + a.slot + 1;
    for (std::size_t j = 0; j < m; ++j) {
      ko[j] = s.key_offsets[j + 1] + a.key;
      vo[j] = s.value_offsets[j + 1] + a.value;
    }
  });
  // Scratch far larger than this read needed (a one-off large range) is given back.
  for (TxnSnapshot& s : sp.scratch)
    if (s.value_bytes.capacity() > 4 * s.value_bytes.size() + (std::size_t{1} << 20)) s = TxnSnapshot();
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
  auto own_write = [&](const SnapshotArg& a) { return !writes_.empty() && writes_.find(a.key) != writes_.end(); };
  for (std::size_t i = 0; i < args.size();) {
    const SnapshotArg& a = args[i];
    if (!a.is_range && !own_write(a)) {  // a run of points not written by the transaction: together
      std::size_t j = i + 1;
      while (j < args.size() && j - i < txn::Index::kFindMany && !args[j].is_range && !own_write(args[j])) ++j;
      append_points(c, start_, args.data() + i, j - i, out);
      i = j;
      continue;
    }
    ++i;
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
        // The first parallel_range_keys entries on the calling thread; a range that goes on
        // is read in pieces by the snapshot pool (when it has more than one thread).
        SnapshotPool& sp = snapshot_pool(c.cfg);
        Entry* last = nullptr;
        const bool split = sp.pool->threads() > 1;
        if (read_range_serial(c, start_, a.range, split ? c.cfg.parallel_range_keys : 0, out, &last)) {
          TxnRange rest = a.range;
          rest.start.assign(last->key());
          rest.start_inclusive = false;
          rest.start_unbounded = false;
          read_range_parallel(c, start_, rest, sp, out);
        }
        done = true;
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
PackedSnapshot::PackedSnapshot(PackedSnapshot&& o) noexcept
    : data_(o.data_), bytes_(o.bytes_), capacity_(o.capacity_), pinned_(o.pinned_) {
  o.data_ = nullptr;
  o.bytes_ = o.capacity_ = 0;
}
PackedSnapshot& PackedSnapshot::operator=(PackedSnapshot&& o) noexcept {
  if (this != &o) {
    if (data_) gpu::free_host(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    capacity_ = o.capacity_;
    pinned_ = o.pinned_;
    o.data_ = nullptr;
    o.bytes_ = o.capacity_ = 0;
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

Status PackedSnapshot::pack(const TxnSnapshot& s, PackedSnapshot* out, unsigned threads) {
  const std::uint64_t n = s.size(), m = s.arg_offsets.size() - 1;
  auto align = [](std::size_t x) { return (x + 7) & ~std::size_t{7}; };
  const std::size_t present_at = 16 + 8 * (n + 1) * 2 + 8 * (m + 1);
  const std::size_t keys_at = align(present_at + n);
  const std::size_t values_at = align(keys_at + s.key_bytes.size());
  const std::size_t total = values_at + s.value_bytes.size();
  // *out's buffer is reused when it holds enough: a pinned allocation (and its first touch)
  // costs more than the copy.
  char* p = out->data_ != nullptr && out->capacity_ >= total ? out->data_ : nullptr;
  if (p == nullptr) {
    *out = PackedSnapshot();
    p = static_cast<char*>(gpu::alloc_host(total));
    if (p == nullptr)
      return Status::ResourceExhausted("cannot allocate a packed snapshot of " + std::to_string(total) + " bytes");
    out->data_ = p;
    out->capacity_ = total;
    out->pinned_ = gpu::device().present;
  }
  out->bytes_ = 0;  // until it is complete
  std::memcpy(p, &n, 8);
  std::memcpy(p + 8, &m, 8);
  // The padding after the presence flags and after the key bytes (at most 7 bytes each).
  std::memset(p + present_at + n, 0, keys_at - present_at - n);
  std::memset(p + keys_at + s.key_bytes.size(), 0, values_at - keys_at - s.key_bytes.size());
  struct Section {
    char* to;
    const char* from;
    std::size_t bytes;
  };
  const Section sections[] = {
      {p + 16, reinterpret_cast<const char*>(s.key_offsets.data()), 8 * (n + 1)},
      {p + 16 + 8 * (n + 1), reinterpret_cast<const char*>(s.value_offsets.data()), 8 * (n + 1)},
      {p + 16 + 16 * (n + 1), reinterpret_cast<const char*>(s.arg_offsets.data()), 8 * (m + 1)},
      {p + present_at, reinterpret_cast<const char*>(s.present.data()), n},
      {p + keys_at, s.key_bytes.data(), s.key_bytes.size()},
      {p + values_at, s.value_bytes.data(), s.value_bytes.size()},
  };
  constexpr std::size_t kPiece = std::size_t{1} << 20, kParallelBytes = std::size_t{4} << 20;
  if (threads == 1 || total < kParallelBytes) {
    for (const Section& c : sections)
      if (c.bytes) std::memcpy(c.to, c.from, c.bytes);
  } else {
    // Pieces of 1 MiB over every section, taken one at a time by the pool's threads.
    std::vector<Section> pieces;
    for (const Section& c : sections)
      for (std::size_t off = 0; off < c.bytes; off += kPiece)
        pieces.push_back({c.to + off, c.from + off, std::min(kPiece, c.bytes - off)});
    take_pieces(*snapshot_pool(TxnConfig{}).pool, pieces.size(),
                [&](std::size_t i) { std::memcpy(pieces[i].to, pieces[i].from, pieces[i].bytes); });
  }
  out->bytes_ = total;
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
  std::uint64_t above = 0;  // the newest version's ts among the locked keys (the TSC clock's floor)
  auto take_ts = [&] {
    me.commit.store(1, std::memory_order_seq_cst);
    t = c.take_commit_ts(above);
    // Release suffices: a reader that must wait for this commit read its start after this
    // timestamp was taken, so it sees the "taking" store (seq_cst, before it) or this later one.
    me.commit.store(t << 1, std::memory_order_release);
  };
  // A commit that only watches takes no timestamp: holding every lock at once is its moment.
  const bool writes = !writes_.empty();
  if (f.ts_before_locks && writes) {
    take_ts();
    if (f.hook) f.hook("ts", {});
  }
  // The keys' entries are looked up together, their misses overlapped (Index::find_many),
  // before the locks are taken one by one: a lookup one key at a time paid each key's
  // dependent misses in turn, and the locks were held meanwhile. A key with no entry yet gets
  // one here too, before any lock is held (an entry with no version is invisible): inserting
  // it into the index can block (the ordered index's and the point map's growth), and a lock
  // held meanwhile kept every other committer of that key waiting.
  for (std::size_t i = 0; i < ws.size(); i += txn::Index::kFindMany) {
    const std::size_t n = std::min(ws.size() - i, txn::Index::kFindMany);
    std::string_view keys[txn::Index::kFindMany];
    Entry* es[txn::Index::kFindMany];
    std::atomic<Version*>* hints[txn::Index::kFindMany];
    for (std::size_t j = 0; j < n; ++j) keys[j] = ws[i + j].key;
    c.index.find_many(keys, n, es, hints);
    for (std::size_t j = 0; j < n; ++j) {
      Item& it = ws[i + j];
      it.e = es[j];
      it.hint = hints[j];
      if (it.e != nullptr) continue;
      bool created = false;
      it.e = c.index.find_or_insert(it.key, &created, &it.hint);
      if (created) created_bytes += sizeof(Entry) + it.key.size();
    }
  }
  for (std::size_t i = 0; i < ws.size(); ++i) {
    Item& it = ws[i];
    Entry* const e = it.e;
    for (unsigned spins = 0;; ++spins) {
      std::uint64_t expect = 0;
      const std::uint64_t held = e->lock.load(std::memory_order_relaxed);
      if (held == 0 && e->lock.compare_exchange_weak(expect, lock_word, std::memory_order_seq_cst)) break;
      if (spins == 0) ((held == 0 ? expect : held) == c.collector_lock_word() ? c.lock_waits_collector : c.lock_waits).add(1);
      if (spins >= 64) c.lock_wait_backoffs.add(1);
      txn::wait_relax(spins);
    }
    Version* h = e->head.load(std::memory_order_acquire);
    if (h != nullptr) above = std::max(above, h->ts);
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
  // The TSC clock's commit wait, with every lock held: nothing of this commit becomes visible
  // before every core's clock reads past t, so a transaction that begins after any reader saw
  // it (or after this commit returned) starts at or above t (docs/txn.md, "Timestamp source").
  // Nothing to do for the counter.
  c.commit_wait(t);
  // Every key is locked and the timestamp taken: the observer sees write sets of one key in
  // timestamp order, and a reader waits for it through this slot's commit word (wait_commits).
  if (const Core::ObserverList* l = c.observers.load(std::memory_order_seq_cst))
    for (TxnCommitObserver* o : l->list) o->on_commit(t, writes_);
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
  // Release: a wait_commits that reads 0 here sees what the observer wrote.
  me.commit.store(0, std::memory_order_release);
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

  std::uint64_t oldest_start() const override { return core_->oldest_start(false); }
  Status add_commit_observer(std::shared_ptr<TxnCommitObserver> o) override {
    if (!o) return Status::InvalidArgument("txn: a null commit observer");
    std::lock_guard<std::mutex> lk(core_->observers_m);
    const Core::ObserverList* cur = core_->observers.load(std::memory_order_relaxed);
    auto next = std::make_unique<Core::ObserverList>();
    if (cur) next->list = cur->list;
    if (std::find(next->list.begin(), next->list.end(), o.get()) != next->list.end())
      return Status::InvalidArgument("txn: that commit observer is already added");
    if (next->list.size() >= kMaxCommitObservers)
      return Status::InvalidArgument("txn: a keyspace takes at most " + std::to_string(kMaxCommitObservers) +
                                     " commit observers");
    next->list.push_back(o.get());
    publish_observers(std::move(next));
    core_->observers_kept.push_back(std::move(o));
    return Status::Ok();
  }

  Status remove_commit_observer(const TxnCommitObserver* o) override {
    std::lock_guard<std::mutex> lk(core_->observers_m);
    const Core::ObserverList* cur = core_->observers.load(std::memory_order_relaxed);
    if (!cur || std::find(cur->list.begin(), cur->list.end(), o) == cur->list.end())
      return Status::NotFound("txn: not a commit observer of this keyspace");
    auto next = std::make_unique<Core::ObserverList>();
    for (TxnCommitObserver* x : cur->list)
      if (x != o) next->list.push_back(x);
    publish_observers(next->list.empty() ? nullptr : std::move(next));
    return Status::Ok();
  }

  void wait_commits(std::uint64_t ts) override { core_->wait_commits(ts); }

  std::uint64_t now() const override { return core_->clock_now(); }

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
    s.ts = c.clock_now();
    s.clock = c.cfg.clock;
    s.lock_waits = static_cast<std::uint64_t>(c.lock_waits.sum());
    s.lock_waits_collector = static_cast<std::uint64_t>(c.lock_waits_collector.sum());
    s.lock_wait_backoffs = static_cast<std::uint64_t>(c.lock_wait_backoffs.sum());
    s.tsc_boundary_cycles = c.tsc_boundary;
    return s;
  }
  const TxnConfig& config() const override { return core_->cfg; }

 private:
  /// Makes `next` (null: no observers) the list commits read, keeping it alive with every list
  /// before it (under observers_m). Seq_cst, as the commit's load: a commit that takes its
  /// timestamp after this store reads this list or a later one.
  void publish_observers(std::unique_ptr<Core::ObserverList> next) {
    core_->observers.store(next.get(), std::memory_order_seq_cst);
    if (next) core_->observer_lists.push_back(std::move(next));
  }

  std::string name_;
  std::shared_ptr<Core> core_;
};

Status parse_txn_clock(std::string_view text, TxnClock* out) {
  if (iequals(text, "counter")) *out = TxnClock::kCounter;
  else if (iequals(text, "tsc")) *out = TxnClock::kTsc;
  else return Status::InvalidArgument("txn clock must be counter or tsc, got '" + std::string(text) + "'");
  return Status::Ok();
}

const char* txn_clock_name(TxnClock c) { return c == TxnClock::kTsc ? "tsc" : "counter"; }

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
  if (c.clock == TxnClock::kTsc) {
    if (c.tsc_boundary_cycles != TxnConfig::kMeasureBoundary && c.tsc_boundary_cycles > (std::uint64_t{1} << 20))
      return Status::InvalidArgument("tsc_boundary_cycles must be at most 2^20");
    if (Status u = clock::tsc_clock_usable(); !u.ok()) return u;
  }
  auto core = std::make_shared<Core>(c);
  Status s = core->index.init();
  if (!s.ok()) return s;
  *out = std::make_shared<TxnSpaceImpl>(std::move(name), std::move(core));
  return Status::Ok();
}

}  // namespace duet
