// ColumnMirror (column_mirror.hpp): a txn table's rows as versioned integer columns, appended by
// commits, read at a start timestamp.
#include "compute/column_mirror.hpp"

#include "compute/internal.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <new>
#include <shared_mutex>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace duet::compute {

// One chunk: begin, end, key id and prev of kChunkRows rows, then one array per kept column.
// begin and end are written once each (end from kNever to the replacing commit's timestamp) and
// read through atomic_ref by scans running beside the writers; a row's columns, id and prev are
// written before its begin and read only by readers whose start the row's commit had passed
// (wait_commits ordered them), or by a collection after a pause of the commits.
struct ColumnMirror::Chunk {
  std::uint64_t* begin;
  std::uint64_t* end;
  std::uint64_t* id;    ///< the key's id (Config::key_id)
  std::uint64_t* prev;  ///< previous version's row + 1 (0: none, or left behind by a collection)
  std::int64_t* cols;   ///< column c at cols + c * kChunkRows
  void* mem;

  static std::size_t bytes(std::size_t ncols) { return (4 + ncols) * kChunkRows * sizeof(std::uint64_t); }
  static Chunk* make(std::size_t ncols) {
    void* mem = std::aligned_alloc(64, bytes(ncols));
    if (mem == nullptr) return nullptr;
    auto* c = new (std::nothrow) Chunk;
    if (c == nullptr) {
      std::free(mem);
      return nullptr;
    }
    c->mem = mem;
    c->begin = static_cast<std::uint64_t*>(mem);
    c->end = c->begin + kChunkRows;
    c->id = c->end + kChunkRows;
    c->prev = c->id + kChunkRows;
    c->cols = reinterpret_cast<std::int64_t*>(c->prev + kChunkRows);
    std::memset(c->begin, 0xff, 2 * kChunkRows * sizeof(std::uint64_t));  // begin = end = kNever
    return c;
  }
  static void destroy(Chunk* c) {
    std::free(c->mem);
    delete c;
  }
  std::uint64_t load_begin(std::size_t i) const {
    return std::atomic_ref<std::uint64_t>(begin[i]).load(std::memory_order_relaxed);
  }
  std::uint64_t load_end(std::size_t i) const {
    return std::atomic_ref<std::uint64_t>(end[i]).load(std::memory_order_relaxed);
  }
};

// The log of ends: entries (row, ts), ts written last (0: not yet written).
struct ColumnMirror::EndChunk {
  std::uint64_t row[kChunkRows];
  std::uint64_t ts[kChunkRows];
};

namespace {

constexpr std::size_t kShards = 64;

// The array *slot names, made by make() and published by compare-and-swap when it is still null
// (a loser frees its own with destroy()); null when make() fails.
template <class T, class Make, class Destroy>
T* publish(std::atomic<T*>& slot, Make make, Destroy destroy) {
  T* p = slot.load(std::memory_order_acquire);
  if (p != nullptr) return p;
  T* fresh = make();
  if (fresh == nullptr) return nullptr;
  if (slot.compare_exchange_strong(p, fresh, std::memory_order_acq_rel)) return fresh;
  destroy(fresh);
  return p;
}

template <class T>
std::unique_ptr<std::atomic<T*>[]> null_directory() {
  std::unique_ptr<std::atomic<T*>[]> d(new std::atomic<T*>[ColumnMirror::kMaxChunks]);
  for (std::size_t c = 0; c < ColumnMirror::kMaxChunks; ++c) d[c].store(nullptr, std::memory_order_relaxed);
  return d;
}

void raise_to(std::atomic<std::uint64_t>& a, std::uint64_t v) {
  for (std::uint64_t p = a.load(std::memory_order_relaxed);
       v > p && !a.compare_exchange_weak(p, v, std::memory_order_relaxed);) {
  }
}

std::uint64_t now_us() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

// One stripe of the key map: open addressing over (id, newest row + 1) pairs, linear probing, a
// value of 0 marking an empty slot (entries are never removed), doubled at half full. No
// allocation per key: a node-based map cost every committed row a malloc and a pointer chase.
struct ColumnMirror::Shard {
  std::mutex m;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> slots;
  std::size_t used = 0;
  /// The value slot of `id` (0 when absent); with `insert`, the slot is created (value 0) when
  /// missing. Under m (or before the generation is published).
  std::uint64_t* find(std::uint64_t id, bool insert);
  /// Grows the table to hold `keys` entries without growing again. Under m (or unpublished).
  void reserve(std::size_t keys);
  /// Prefetches the line find(id) starts at (no effect on an empty table). No lock needed: a
  /// prefetch of a stale address is harmless.
  void prefetch(std::uint64_t id) const {
    if (!slots.empty()) __builtin_prefetch(&slots[slot_of(id, slots.size() - 1)]);
  }
  static std::size_t slot_of(std::uint64_t x, std::size_t mask) {
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return static_cast<std::size_t>(x) & mask;
  }
  /// Rehashes into a table of `size` slots (a power of two above twice `used`).
  void rehash(std::size_t size);
};

// The mirror's rows at one time: what commits append to until a collection replaces it, and
// what a reader scans from the moment it takes it until it lets go.
struct ColumnMirror::Generation {
  explicit Generation(std::size_t n)
      : ncols(n), chunks(null_directory<Chunk>()), end_chunks(null_directory<EndChunk>()) {}
  ~Generation() {
    for (std::size_t c = 0; c < kMaxChunks; ++c) {
      if (Chunk* p = chunks[c].load(std::memory_order_relaxed)) Chunk::destroy(p);
      delete end_chunks[c].load(std::memory_order_relaxed);
    }
    if (dev != nullptr) detail::gpu::mirror_destroy(dev);
  }
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  const std::size_t ncols;
  std::uint64_t min_start = 0;  ///< readers need start >= it (set before publication)
  std::uint64_t made_with = 0;  ///< rows it held when it became current
  std::unique_ptr<std::atomic<Chunk*>[]> chunks;
  std::atomic<std::uint64_t> n_rows{0}, n_chunks{0};
  mem::StripedCounter live_keys;  ///< added to by every commit's new keys, on the committer's own line
  Shard shards[kShards];
  /// Ends are logged while a GPU copy is kept or a collection copies this generation (set and
  /// cleared with commits paused).
  std::atomic<bool> log_ends{false};
  std::unique_ptr<std::atomic<EndChunk*>[]> end_chunks;
  std::atomic<std::uint64_t> n_ends{0}, n_end_chunks{0};
  // The GPU copy (null: none).
  detail::gpu::MirrorCopy* dev = nullptr;
  std::mutex dev_m;
  std::uint64_t dev_rows = 0;  ///< rows below it are on the device and were complete (under dev_m)
  std::uint64_t dev_ends = 0;  ///< end-log entries below it applied (under dev_m)
  std::uint64_t dev_n = 0;     ///< rows on the device after the last sync (under dev_m)

  Shard& shard_of(std::uint64_t id) { return shards[(id * 0x9E3779B97F4A7C15ull) >> 58]; }
  Chunk* chunk_at(std::uint64_t row) const { return chunks[row / kChunkRows].load(std::memory_order_acquire); }
  /// The chunk holding `row`, made when missing; null when memory ran out.
  Chunk* chunk_for(std::uint64_t row) {
    // Counted when made, uncounted when a loser frees its own: n_chunks counts the published.
    return publish(
        chunks[row / kChunkRows],
        [&] {
          Chunk* c = Chunk::make(ncols);
          if (c != nullptr) n_chunks.fetch_add(1, std::memory_order_relaxed);
          return c;
        },
        [&](Chunk* c) {
          n_chunks.fetch_sub(1, std::memory_order_relaxed);
          Chunk::destroy(c);
        });
  }
  /// Appends a row version of `id` at `ts` (values null: a delete, which appends nothing) and
  /// ends its previous live version. False when memory ran out.
  bool put_version(std::uint64_t id, std::uint64_t ts, const std::int64_t* values, std::uint64_t row);
  /// Appends (row, ts) to the end log; false when it is full or memory ran out.
  bool log_end(std::uint64_t row, std::uint64_t ts);
  /// Keys with a live version (exact when no commit is in flight; never below 0).
  std::uint64_t live() const { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, live_keys.sum())); }
  std::uint64_t bytes() const {
    return n_chunks.load(std::memory_order_relaxed) * Chunk::bytes(ncols) +
           n_end_chunks.load(std::memory_order_relaxed) * sizeof(EndChunk);
  }
};

struct ColumnMirror::CollectorControl {
  std::mutex m;
  std::condition_variable cv;
  bool stop = false;  ///< under m
};

ColumnMirror::~ColumnMirror() {
  if (control_) {
    {
      std::lock_guard<std::mutex> lk(control_->m);
      control_->stop = true;
    }
    control_->cv.notify_all();
  }
  if (collector_.joinable()) {
    // The collector holds the mirror while it works; when it held the last reference, the
    // mirror ends on that thread, which must not join itself.
    if (collector_.get_id() == std::this_thread::get_id()) collector_.detach();
    else collector_.join();
  }
}

int ColumnMirror::column_index(std::string_view name) const {
  for (std::size_t i = 0; i < cfg_.columns.size(); ++i)
    if (cfg_.columns[i] == name) return static_cast<int>(i);
  return -1;
}

Status ColumnMirror::attach(std::shared_ptr<TxnSpace> space, Config config, std::shared_ptr<ColumnMirror>* out,
                            std::size_t load_page) {
  if (!space) return Status::InvalidArgument("mirror: no keyspace");
  if (config.lo >= config.hi) return Status::InvalidArgument("mirror: empty key range");
  if (!config.key_id) return Status::InvalidArgument("mirror: no key_id");
  if (config.columns.empty()) return Status::InvalidArgument("mirror: no columns");
  std::shared_ptr<ColumnMirror> m(new ColumnMirror());
  for (const std::string& name : config.columns) {
    const auto& f = config.codec.fields();
    auto it = std::find_if(f.begin(), f.end(), [&](const Field& x) { return x.name == name; });
    if (it == f.end()) return Status::InvalidArgument("mirror: '" + name + "' is not a field of the row");
    if (!is_integer(it->type)) return Status::InvalidArgument("mirror: '" + name + "' is not an integer field");
    if (std::count(config.columns.begin(), config.columns.end(), name) > 1)
      return Status::InvalidArgument("mirror: '" + name + "' named twice");
    m->offsets_.push_back(config.codec.offset(static_cast<std::size_t>(it - f.begin())));
  }
  m->cfg_ = std::move(config);
  m->space_ = space;
  auto g = std::make_shared<Generation>(m->cfg_.columns.size());
  std::string no_gpu;
  if (m->cfg_.device_copy && detail::gpu::available(&no_gpu)) {
    if (Status s = detail::gpu::mirror_create(m->cfg_.columns.size(), &g->dev); !s.ok()) return s;
    g->log_ends.store(true, std::memory_order_relaxed);
    m->device_copy_ = true;
  }
  m->gen_ = g;
  m->cur_ = g.get();

  // Observe first, then snapshot: a commit whose timestamp is above the snapshot's start calls
  // the observer (it took its timestamp after add_commit_observer returned), so nothing is missed;
  // the queue's commits at or below the start are in the snapshot and are dropped.
  if (Status s = space->add_commit_observer(m); !s.ok()) return s;
  Txn t;
  Status s = space->begin(&t);
  if (!s.ok()) {
    (void)space->remove_commit_observer(m.get());  // it was added above: removing cannot fail
    return s;
  }
  m->built_at_ = t.start_ts();
  g->min_start = m->built_at_;
  TxnRange r{m->cfg_.lo, m->cfg_.hi, true, false, false, false};
  TxnSnapshot snap;
  std::vector<std::int64_t> vals(m->cfg_.columns.size());
  for (;;) {
    const SnapshotArg arg = SnapshotArg::of(r, load_page);
    if (s = t.snapshot(std::span<const SnapshotArg>(&arg, 1), &snap); !s.ok()) break;
    for (std::size_t i = 0; i < snap.size(); ++i) {
      std::uint64_t id = 0;
      if (!m->cfg_.key_id(snap.key(i), &id)) continue;
      if (!m->decode(snap.value(i), vals.data())) {
        s = Status::InvalidArgument("mirror: the value of a loaded key is not a row of the codec");
        break;
      }
      const std::uint64_t row = g->n_rows.fetch_add(1, std::memory_order_relaxed);
      if (row >= kChunkRows * kMaxChunks || !g->put_version(id, m->built_at_, vals.data(), row)) {
        s = Status::ResourceExhausted("mirror: out of memory (or 2^32 rows) loading the table");
        break;
      }
    }
    if (!s.ok() || snap.more.empty() || !snap.more[0]) break;
    r.start = snap.resume[0];
    r.start_inclusive = false;
  }
  t.abort();
  if (!s.ok()) {
    (void)space->remove_commit_observer(m.get());  // it was added above: removing cannot fail
    return s;
  }
  {
    std::lock_guard<std::mutex> lk(m->load_m_);
    std::stable_sort(m->pending_.begin(), m->pending_.end(),
                     [](const Pending& a, const Pending& b) { return a.ts < b.ts; });
    for (const Pending& p : m->pending_)
      if (p.ts > m->built_at_) m->apply(*g, p.ts, p.writes.begin(), p.writes.end());
    m->pending_.clear();
    m->pending_.shrink_to_fit();
    g->made_with = g->n_rows.load(std::memory_order_relaxed);
    m->loading_ = false;
    m->loaded_.store(true, std::memory_order_release);
  }
  m->collect_threads_ = m->cfg_.collect_threads > 0
                            ? m->cfg_.collect_threads
                            : std::clamp(std::thread::hardware_concurrency() / 4, 1u, 8u);
  if (m->cfg_.collect_interval_ms > 0) {
    m->control_ = std::make_shared<CollectorControl>();
    m->collector_ = std::thread(run_collector, std::weak_ptr<ColumnMirror>(m), m->control_, m->cfg_.collect_interval_ms);
  }
  *out = std::move(m);
  return Status::Ok();
}

bool ColumnMirror::decode(std::string_view value, std::int64_t* values) const {
  if (value.size() != cfg_.codec.row_bytes()) return false;
  for (std::size_t c = 0; c < offsets_.size(); ++c) std::memcpy(&values[c], value.data() + offsets_[c], 8);
  return true;
}

void ColumnMirror::on_commit(std::uint64_t ts,
                             const std::map<std::string, std::optional<std::string>, std::less<>>& writes) {
  auto it = writes.lower_bound(std::string_view(cfg_.lo));
  if (it == writes.end() || it->first >= cfg_.hi) return;
  if (!loaded_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lk(load_m_);
    if (loading_) {
      Pending p{ts, {}};
      for (; it != writes.end() && it->first < cfg_.hi; ++it) p.writes.emplace(it->first, it->second);
      pending_.push_back(std::move(p));
      return;
    }
  }
  std::shared_lock<sched::StripedSharedMutex> lk(switch_m_);
  apply(*cur_, ts, it, writes.end());
}

void ColumnMirror::apply(Generation& g, std::uint64_t ts, Writes::const_iterator from, Writes::const_iterator to) {
  if (full_.load(std::memory_order_relaxed)) return;
  const std::size_t nc = cfg_.columns.size();
  thread_local std::vector<std::int64_t> vals;
  thread_local std::vector<std::uint64_t> ids;
  thread_local std::vector<bool> is_row;  // false: the key's version only ends (a delete or a bad row)
  ids.clear();
  is_row.clear();
  vals.clear();
  std::uint64_t appended = 0;
  for (auto it = from; it != to && it->first < cfg_.hi; ++it) {
    std::uint64_t id = 0;
    if (!cfg_.key_id(it->first, &id)) continue;
    ids.push_back(id);
    vals.resize(vals.size() + nc);
    const bool row = it->second && decode(*it->second, vals.data() + vals.size() - nc);
    if (!row) {
      vals.resize(vals.size() - nc);
      if (it->second) bad_rows_.fetch_add(1, std::memory_order_relaxed);
    }
    is_row.push_back(row);
    appended += row;
  }
  std::uint64_t row = appended ? g.n_rows.fetch_add(appended, std::memory_order_relaxed) : 0;
  if (appended && row + appended > kChunkRows * kMaxChunks) {
    full_.store(true, std::memory_order_relaxed);
    return;
  }
  const std::int64_t* v = vals.data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    bool ok;
    if (is_row[i]) {
      ok = g.put_version(ids[i], ts, v, row++);
      v += nc;
    } else {
      ok = g.put_version(ids[i], ts, nullptr, 0);
    }
    if (!ok) full_.store(true, std::memory_order_relaxed);
  }
}

void ColumnMirror::Shard::rehash(std::size_t size) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> grown(size);
  for (const auto& e : slots)
    if (e.second != 0) {
      std::size_t j = slot_of(e.first, grown.size() - 1);
      while (grown[j].second != 0) j = (j + 1) & (grown.size() - 1);
      grown[j] = e;
    }
  slots.swap(grown);
}

void ColumnMirror::Shard::reserve(std::size_t keys) {
  std::size_t size = std::max<std::size_t>(1024, slots.size());
  while (size < 2 * keys + 2) size *= 2;
  if (size > slots.size()) rehash(size);
}

std::uint64_t* ColumnMirror::Shard::find(std::uint64_t id, bool insert) {
  if (insert && 2 * (used + 1) > slots.size()) rehash(std::max<std::size_t>(1024, 2 * slots.size()));
  if (slots.empty()) return nullptr;
  const std::size_t mask = slots.size() - 1;
  for (std::size_t j = slot_of(id, mask);; j = (j + 1) & mask) {
    if (slots[j].second == 0) {
      if (!insert) return nullptr;
      slots[j].first = id;
      ++used;
      return &slots[j].second;
    }
    if (slots[j].first == id) return &slots[j].second;
  }
}

bool ColumnMirror::Generation::put_version(std::uint64_t id, std::uint64_t ts, const std::int64_t* values,
                                           std::uint64_t row) {
  Chunk* c = nullptr;
  if (values != nullptr) {
    c = chunk_for(row);
    if (c == nullptr) return false;
  }
  const std::size_t i = row % kChunkRows;
  if (values != nullptr) {
    for (std::size_t k = 0; k < ncols; ++k) c->cols[k * kChunkRows + i] = values[k];
    c->id[i] = id;
  }
  Shard& sh = shard_of(id);
  std::uint64_t old = 0;
  {
    std::lock_guard<std::mutex> lk(sh.m);
    if (values != nullptr) {
      std::uint64_t* v = sh.find(id, true);
      old = *v;
      // Linked before the map names the row: contains() may find the row through the map while
      // its begin is still unwritten (a commit after the reader's start) and must step past it.
      c->prev[i] = old;
      *v = row + 1;
    } else if (const std::uint64_t* v = sh.find(id, false)) {
      old = *v;  // stays the newest row: its end marks the delete
    }
  }
  // Only commits of this key (serialized by its lock) write its rows' ends.
  Chunk* oc = old != 0 ? chunk_at(old - 1) : nullptr;
  const bool was_live = oc != nullptr && oc->load_end((old - 1) % kChunkRows) == kNever;
  if (values != nullptr) {
    std::atomic_ref<std::uint64_t>(c->begin[i]).store(ts, std::memory_order_release);
    if (!was_live) live_keys.add(1);
  } else if (was_live) {
    live_keys.add(-1);
  }
  if (was_live) {
    std::atomic_ref<std::uint64_t>(oc->end[(old - 1) % kChunkRows]).store(ts, std::memory_order_release);
    if (log_ends.load(std::memory_order_relaxed)) return log_end(old - 1, ts);
  }
  return true;
}

bool ColumnMirror::Generation::log_end(std::uint64_t row, std::uint64_t ts) {
  const std::uint64_t i = n_ends.fetch_add(1, std::memory_order_relaxed);
  if (i >= kChunkRows * kMaxChunks) return false;
  // ts all 0: not yet written
  EndChunk* e = publish(
      end_chunks[i / kChunkRows],
      [&] {
        auto* x = new (std::nothrow) EndChunk();
        if (x != nullptr) n_end_chunks.fetch_add(1, std::memory_order_relaxed);
        return x;
      },
      [&](EndChunk* x) {
        n_end_chunks.fetch_sub(1, std::memory_order_relaxed);
        delete x;
      });
  if (e == nullptr) return false;
  e->row[i % kChunkRows] = row;
  std::atomic_ref<std::uint64_t>(e->ts[i % kChunkRows]).store(ts, std::memory_order_release);
  return true;
}

Status ColumnMirror::sync_device(Generation& g) {
  // The log's length before the rows': every logged end names a row reserved before the entry,
  // so each row an entry below `en` names is below `n`, and is on the device before it is ended.
  const std::uint64_t en = g.n_ends.load(std::memory_order_acquire);
  const std::uint64_t n = g.n_rows.load(std::memory_order_acquire);
  // Rows from the first one not known complete: a row still being written (begin ~0) belongs to
  // a commit after every start waited for, and is copied again next time.
  std::uint64_t incomplete = n;
  std::vector<const std::int64_t*> cols(cfg_.columns.size());
  for (std::uint64_t a = g.dev_rows; a < n;) {
    const std::size_t ci = static_cast<std::size_t>(a / kChunkRows), off = static_cast<std::size_t>(a % kChunkRows);
    const std::uint64_t b = std::min<std::uint64_t>(n, (ci + 1) * kChunkRows);
    const Chunk* c = g.chunks[ci].load(std::memory_order_acquire);
    Status s;
    if (c == nullptr) {
      incomplete = std::min(incomplete, a);
      s = detail::gpu::mirror_put(g.dev, a, b - a, nullptr, nullptr, nullptr);
    } else {
      if (incomplete == n)
        for (std::size_t i = off; i < off + (b - a); ++i)
          if (c->load_begin(i) == kNever) {
            incomplete = ci * kChunkRows + i;
            break;
          }
      for (std::size_t k = 0; k < cols.size(); ++k) cols[k] = c->cols + k * kChunkRows + off;
      s = detail::gpu::mirror_put(g.dev, a, b - a, c->begin + off, c->end + off, cols.data());
    }
    if (!s.ok()) return s;
    a = b;
  }
  dev_rows_copied_.fetch_add(n - g.dev_rows, std::memory_order_relaxed);
  g.dev_rows = incomplete;
  g.dev_n = n;
  std::uint64_t eincomplete = en;
  for (std::uint64_t a = g.dev_ends; a < en;) {
    const std::size_t ci = static_cast<std::size_t>(a / kChunkRows), off = static_cast<std::size_t>(a % kChunkRows);
    const std::uint64_t b = std::min<std::uint64_t>(en, (ci + 1) * kChunkRows);
    const EndChunk* e = g.end_chunks[ci].load(std::memory_order_acquire);
    if (e == nullptr) {
      eincomplete = std::min(eincomplete, a);
    } else {
      if (eincomplete == en)
        for (std::size_t i = off; i < off + (b - a); ++i)
          if (std::atomic_ref<const std::uint64_t>(e->ts[i]).load(std::memory_order_acquire) == 0) {
            eincomplete = ci * kChunkRows + i;
            break;
          }
      if (Status s = detail::gpu::mirror_set_ends(g.dev, e->row + off, e->ts + off, b - a); !s.ok()) return s;
    }
    a = b;
  }
  dev_ends_copied_.fetch_add(en - g.dev_ends, std::memory_order_relaxed);
  g.dev_ends = eincomplete;
  dev_syncs_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

namespace {

bool passes(std::int64_t x, const Predicate& p) {
  switch (p.cmp) {
    case Cmp::kLt: return x < p.i;
    case Cmp::kLe: return x <= p.i;
    case Cmp::kEq: return x == p.i;
    case Cmp::kNe: return x != p.i;
    case Cmp::kGe: return x >= p.i;
    case Cmp::kGt: return x > p.i;
    case Cmp::kBetween: return x >= p.i && x <= p.i_hi;
  }
  return false;
}

}  // namespace

Status ColumnMirror::aggregate(std::uint64_t start, const Query& q, Table* out, Device device, unsigned threads,
                               std::size_t* rows_scanned) {
  if (q.where.size() > detail::gpu::kMirrorMaxTerms || q.aggs.size() > detail::gpu::kMirrorMaxTerms)
    return Status::InvalidArgument("mirror: at most 8 predicates and 8 aggregates");
  if (device == Device::kGpu && !device_copy_)
    return Status::Unavailable("mirror: no GPU copy (device_copy off, or no GPU)");
  const bool on_gpu = device_copy_ && device != Device::kCpu;
  struct Pred {
    int col;
    const Predicate* p;
  };
  std::vector<Pred> preds;
  for (const Predicate& p : q.where) {
    const int c = column_index(p.column);
    if (c < 0) return Status::InvalidArgument("mirror: no column '" + p.column + "'");
    preds.push_back({c, &p});
  }
  const int gcol = q.group.empty() ? -1 : column_index(q.group);
  if (!q.group.empty() && gcol < 0) return Status::InvalidArgument("mirror: no column '" + q.group + "'");
  std::vector<int> acols;
  for (const Agg& a : q.aggs) {
    if (a.name.empty()) return Status::InvalidArgument("mirror: an aggregate needs an output name");
    const int c = a.op == Agg::kCount ? -1 : column_index(a.column);
    if (a.op != Agg::kCount && c < 0) return Status::InvalidArgument("mirror: no column '" + a.column + "'");
    acols.push_back(c);
  }
  std::shared_ptr<Generation> gen;
  if (Status s = reader_generation(start, &gen); !s.ok()) return s;
  const std::size_t groups = gcol < 0 ? 1 : static_cast<std::size_t>(kMaxGroups);
  const std::size_t na = q.aggs.size();
  if (on_gpu) {
    std::vector<detail::gpu::MirrorPred> gp;
    for (const Pred& p : preds) gp.push_back({p.col, p.p->cmp, p.p->i, p.p->i_hi});
    std::vector<detail::gpu::MirrorAgg> ga;
    for (std::size_t a = 0; a < na; ++a) ga.push_back({q.aggs[a].op, acols[a]});
    Partial r;
    {
      std::lock_guard<std::mutex> lk(gen->dev_m);
      if (Status s = sync_device(*gen); !s.ok()) return s;
      if (Status s = detail::gpu::mirror_aggregate(gen->dev, gen->dev_n, start, gp, gcol, groups, ga, &r.rows, &r.acc,
                                                   &r.out_of_range);
          !s.ok())
        return s;
      r.scanned = gen->dev_n;
    }
    return finish(q, gcol, groups, r, out, rows_scanned);
  }
  const std::uint64_t n = gen->n_rows.load(std::memory_order_acquire);
  const std::size_t nchunks = static_cast<std::size_t>((n + kChunkRows - 1) / kChunkRows);
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(nchunks, 1))));
  std::vector<Partial> parts(threads);
  auto scan = [&](unsigned p) {
    Partial& r = parts[p];
    r.rows.assign(groups, 0);
    r.acc.assign(groups * na, 0);
    std::vector<bool> seen(groups, false);
    for (std::size_t ci = p; ci < nchunks; ci += threads) {
      const Chunk* c = gen->chunks[ci].load(std::memory_order_acquire);
      if (c == nullptr) continue;  // reserved by commits after start, not yet written
      const std::size_t m = std::min<std::uint64_t>(kChunkRows, n - ci * kChunkRows);
      r.scanned += m;
      for (std::size_t i = 0; i < m; ++i) {
        if (c->load_begin(i) > start || c->load_end(i) <= start) continue;
        bool ok = true;
        for (const Pred& pr : preds)
          if (!passes(c->cols[static_cast<std::size_t>(pr.col) * kChunkRows + i], *pr.p)) {
            ok = false;
            break;
          }
        if (!ok) continue;
        std::size_t g = 0;
        if (gcol >= 0) {
          const std::int64_t gv = c->cols[static_cast<std::size_t>(gcol) * kChunkRows + i];
          if (gv < 0 || gv >= kMaxGroups) {
            r.out_of_range = true;
            return;
          }
          g = static_cast<std::size_t>(gv);
        }
        std::int64_t* acc = &r.acc[g * na];
        const bool first = r.rows[g] == 0;
        ++r.rows[g];
        for (std::size_t a = 0; a < na; ++a) {
          const std::int64_t x = acols[a] < 0 ? 1 : c->cols[static_cast<std::size_t>(acols[a]) * kChunkRows + i];
          switch (q.aggs[a].op) {
            case Agg::kCount: acc[a] += 1; break;
            case Agg::kSum: acc[a] = static_cast<std::int64_t>(static_cast<std::uint64_t>(acc[a]) + static_cast<std::uint64_t>(x)); break;
            case Agg::kMin: acc[a] = first ? x : std::min(acc[a], x); break;
            case Agg::kMax: acc[a] = first ? x : std::max(acc[a], x); break;
          }
        }
      }
    }
  };
  if (threads == 1) {
    scan(0);
  } else {
    std::vector<std::thread> th;
    for (unsigned p = 1; p < threads; ++p) th.emplace_back(scan, p);
    scan(0);
    for (auto& x : th) x.join();
  }
  // Merge in thread order (sums wrap, min/max and counts commute: the result does not depend on
  // the split).
  Partial& r = parts[0];
  for (unsigned p = 1; p < threads; ++p) {
    const Partial& o = parts[p];
    r.out_of_range |= o.out_of_range;
    r.scanned += o.scanned;
    for (std::size_t g = 0; g < groups; ++g) {
      if (o.rows[g] == 0) continue;
      for (std::size_t a = 0; a < na; ++a) {
        std::int64_t& x = r.acc[g * na + a];
        const std::int64_t y = o.acc[g * na + a];
        switch (q.aggs[a].op) {
          case Agg::kCount:
          case Agg::kSum: x = static_cast<std::int64_t>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y)); break;
          case Agg::kMin: x = r.rows[g] ? std::min(x, y) : y; break;
          case Agg::kMax: x = r.rows[g] ? std::max(x, y) : y; break;
        }
      }
      r.rows[g] += o.rows[g];
    }
  }
  return finish(q, gcol, groups, r, out, rows_scanned);
}

Status ColumnMirror::finish(const Query& q, int gcol, std::size_t groups, const Partial& r, Table* out,
                            std::size_t* rows_scanned) const {
  const std::size_t na = q.aggs.size();
  if (r.out_of_range)
    return Status::InvalidArgument("mirror: a value of group column '" + q.group + "' is outside 0.." +
                                   std::to_string(kMaxGroups - 1));
  if (rows_scanned) *rows_scanned = r.scanned;
  std::vector<std::int64_t> gv;
  std::vector<std::vector<std::int64_t>> av(na);
  for (std::size_t g = 0; g < groups; ++g) {
    if (gcol >= 0 && r.rows[g] == 0) continue;
    if (gcol >= 0) gv.push_back(static_cast<std::int64_t>(g));
    for (std::size_t a = 0; a < na; ++a) av[a].push_back(r.acc[g * na + a]);
  }
  Table t;
  if (gcol >= 0)
    if (Status s = t.add(q.group, Column::of_int64(gv)); !s.ok()) return s;
  for (std::size_t a = 0; a < na; ++a)
    if (Status s = t.add(q.aggs[a].name, Column::of_int64(av[a])); !s.ok()) return s;
  *out = std::move(t);
  return Status::Ok();
}

Status ColumnMirror::reader_generation(std::uint64_t start, std::shared_ptr<Generation>* out) {
  if (start < built_at_)
    return Status::InvalidArgument("mirror: start " + std::to_string(start) + " is before the mirror was built (" +
                                   std::to_string(built_at_) + ")");
  std::shared_ptr<TxnSpace> space = space_.lock();
  if (!space) return Status::Unavailable("mirror: its keyspace is gone");
  space->wait_commits(start);
  if (full_.load(std::memory_order_relaxed))
    return Status::ResourceExhausted("mirror: full (2^32 row versions or out of memory); rebuild it");
  // Taken after the wait: every commit <= start applied to this generation or to one a
  // collection copied into it before making it current.
  {
    std::lock_guard<std::mutex> lk(gen_m_);
    *out = gen_;
  }
  if (start < (*out)->min_start)
    return Status::ResourceExhausted("mirror: snapshot too old: start " + std::to_string(start) +
                                     " is below the oldest start the mirror keeps versions for (" +
                                     std::to_string((*out)->min_start) + ")");
  return Status::Ok();
}

Status ColumnMirror::contains(std::string_view key, std::uint64_t start, bool* yes) {
  std::uint64_t id = 0;
  if (key < cfg_.lo || key >= cfg_.hi || !cfg_.key_id(key, &id))
    return Status::InvalidArgument("mirror: the key is not one the mirror holds");
  std::shared_ptr<Generation> gen;
  if (Status s = reader_generation(start, &gen); !s.ok()) return s;
  *yes = false;
  Shard& sh = gen->shard_of(id);
  std::uint64_t r = 0;
  {
    std::lock_guard<std::mutex> lk(sh.m);
    if (const std::uint64_t* v = sh.find(id, false)) r = *v;
  }
  while (r != 0) {
    const Chunk* c = gen->chunk_at(r - 1);
    const std::size_t i = (r - 1) % kChunkRows;
    if (c->load_begin(i) <= start && c->load_end(i) > start) return *yes = true, Status::Ok();
    r = c->prev[i];
  }
  return Status::Ok();
}

Status ColumnMirror::collect() {
  std::shared_ptr<TxnSpace> space = space_.lock();
  if (!space) return Status::Unavailable("mirror: its keyspace is gone");
  return collect_below(space->oldest_start());
}

namespace {

// Writes row i of chunk c as row j of chunk d: begin and end as given, the key's id, the
// previous version's new row (through remap: new row + 1, 0 for none) and the columns.
template <class Chunk>
void copy_row(const Chunk& c, std::size_t i, Chunk* d, std::size_t j, std::uint64_t begin, std::uint64_t end,
              std::size_t ncols, const std::vector<std::uint64_t>& remap) {
  constexpr std::size_t kRows = ColumnMirror::kChunkRows;
  d->begin[j] = begin;
  d->end[j] = end;
  d->id[j] = c.id[i];
  d->prev[j] = c.prev[i] != 0 ? remap[c.prev[i] - 1] : 0;
  for (std::size_t k = 0; k < ncols; ++k) d->cols[k * kRows + j] = c.cols[k * kRows + i];
}

// Copies rows [a, b) of `from` whose end is above `floor` to the end of `to` (not yet
// published: no locks), relinking each to its previous version's new row and pointing the key
// map at it; (*remap)[r] gets row r's new row + 1 (0: left behind). Rows of one key come in
// append order, so the map ends at each key's newest kept row, and a version's previous one is
// remapped before it. With `complete_only` (commits running), it stops at the first row still
// being written (its begin not yet stored). *done: the first row not copied. False when memory
// ran out (or, without complete_only, a row has no chunk: the mirror is full).
template <class Gen, class Chunk>
bool copy_rows(const Gen& from, Gen& to, std::uint64_t a, std::uint64_t b, std::uint64_t floor, bool complete_only,
               std::vector<std::uint64_t>* remap, std::uint64_t* done) {
  constexpr std::size_t kRows = ColumnMirror::kChunkRows;
  constexpr std::uint64_t kNever = ~std::uint64_t{0};
  if (remap->size() < b) remap->resize(b);
  std::uint64_t nr = to.n_rows.load(std::memory_order_relaxed);
  *done = a;
  // The key map's slot of each row 16 ahead is prefetched: the inserts are random accesses into
  // a table of every live key, and one at a time they were most of a collection's time.
  constexpr std::uint64_t kAhead = 16;
  for (std::uint64_t r = a; r < b; ++r) {
    if (r + kAhead < b)
      if (const Chunk* f = from.chunk_at(r + kAhead);
          f != nullptr && std::atomic_ref<const std::uint64_t>(f->begin[(r + kAhead) % kRows])
                                  .load(std::memory_order_acquire) != kNever) {  // a complete row's id
        const std::uint64_t id = f->id[(r + kAhead) % kRows];
        to.shard_of(id).prefetch(id);
      }
    const Chunk* c = from.chunk_at(r);
    if (c == nullptr) return complete_only;
    const std::size_t i = r % kRows;
    // Acquire: a stored begin publishes the row's other fields (Generation::put_version).
    const std::uint64_t begin = std::atomic_ref<const std::uint64_t>(c->begin[i]).load(std::memory_order_acquire);
    if (begin == kNever && complete_only) return true;
    const std::uint64_t end = c->load_end(i);
    if (end <= floor) {
      (*remap)[r] = 0;
      *done = r + 1;
      continue;
    }
    Chunk* d = to.chunk_for(nr);
    if (d == nullptr) return false;
    const std::size_t j = nr % kRows;
    copy_row(*c, i, d, j, begin, end, from.ncols, *remap);
    *to.shard_of(c->id[i]).find(c->id[i], true) = nr + 1;
    (*remap)[r] = ++nr;
    to.n_rows.store(nr, std::memory_order_relaxed);
    *done = r + 1;
  }
  return true;
}

// Runs fn(p) for p in [0, threads) on threads - 1 new threads and the calling one.
template <class Fn>
void on_threads(unsigned threads, Fn fn) {
  std::vector<std::thread> th;
  th.reserve(threads - 1);
  for (unsigned p = 1; p < threads; ++p) th.emplace_back(fn, p);
  fn(0u);
  for (std::thread& t : th) t.join();
}

// copy_rows with complete_only, on `threads` threads: each takes a piece of [a, b), finds its
// first row still being written and decides which of its rows to keep (end above floor); the
// pieces' counts place them (the copy stops at the first incomplete row of any piece); each
// thread numbers its kept rows, then, once every row has its number (a previous version may
// lie in another piece), copies them; the key map takes per key the greatest new row, under
// its stripe's lock. Below 4,096 rows, or on one thread, it is copy_rows. *done: the first row
// not copied. False when memory ran out.
template <class Gen, class Chunk>
bool copy_rows_parallel(const Gen& from, Gen& to, std::uint64_t a, std::uint64_t b, std::uint64_t floor,
                        unsigned threads, std::vector<std::uint64_t>* remap, std::uint64_t* done) {
  constexpr std::size_t kRows = ColumnMirror::kChunkRows;
  constexpr std::uint64_t kNever = ~std::uint64_t{0};
  if (threads <= 1 || b - a < 4096) return copy_rows<Gen, Chunk>(from, to, a, b, floor, true, remap, done);
  if (remap->size() < b) remap->resize(b);
  std::vector<std::uint8_t> keep(b - a);
  std::vector<std::uint64_t> lo(threads), hi(threads), count(threads, 0), base(threads);
  for (unsigned p = 0; p < threads; ++p) {
    lo[p] = a + (b - a) * p / threads;
    hi[p] = a + (b - a) * (p + 1) / threads;
  }
  // 1. Each piece: its complete prefix, and which rows to keep.
  on_threads(threads, [&](unsigned p) {
    for (std::uint64_t r = lo[p]; r < hi[p]; ++r) {
      const Chunk* c = from.chunk_at(r);
      if (c == nullptr ||
          std::atomic_ref<const std::uint64_t>(c->begin[r % kRows]).load(std::memory_order_acquire) == kNever) {
        hi[p] = r;
        break;
      }
      keep[r - a] = c->load_end(r % kRows) > floor;
      count[p] += keep[r - a];
    }
  });
  std::uint64_t end = b;  // the first incomplete row of any piece
  for (unsigned p = 0; p < threads; ++p)
    if (hi[p] < (p + 1 < threads ? lo[p + 1] : b)) {
      end = hi[p];
      for (unsigned q = p + 1; q < threads; ++q) hi[q] = lo[q], count[q] = 0;
      break;
    }
  std::uint64_t nr = to.n_rows.load(std::memory_order_relaxed);
  for (unsigned p = 0; p < threads; ++p) base[p] = nr, nr += count[p];
  // The new rows' chunks, made before the threads write into them.
  for (std::uint64_t x = base[0]; x < nr; x = (x / kRows + 1) * kRows)
    if (to.chunk_for(x) == nullptr) return false;
  // 2. Each piece numbers its kept rows.
  on_threads(threads, [&](unsigned p) {
    std::uint64_t n = base[p];
    for (std::uint64_t r = lo[p]; r < hi[p]; ++r) (*remap)[r] = keep[r - a] ? ++n : 0;
  });
  // 3. Each piece copies its kept rows.
  on_threads(threads, [&](unsigned p) {
    constexpr std::uint64_t kAhead = 16;
    for (std::uint64_t r = lo[p]; r < hi[p]; ++r) {
      if (r + kAhead < hi[p] && keep[r + kAhead - a]) {
        const std::uint64_t id = from.chunk_at(r + kAhead)->id[(r + kAhead) % kRows];
        to.shard_of(id).prefetch(id);
      }
      if (!keep[r - a]) continue;
      const Chunk* c = from.chunk_at(r);
      const std::size_t i = r % kRows;
      const std::uint64_t nrow = (*remap)[r] - 1;
      Chunk* d = to.chunk_at(nrow);
      const std::size_t j = nrow % kRows;
      copy_row(*c, i, d, j, c->load_begin(i), c->load_end(i), from.ncols, *remap);
      auto& sh = to.shard_of(c->id[i]);
      std::lock_guard<std::mutex> lk(sh.m);
      std::uint64_t* v = sh.find(c->id[i], true);
      *v = std::max(*v, nrow + 1);
    }
  });
  to.n_rows.store(nr, std::memory_order_relaxed);
  *done = end;
  return true;
}

// Replays entries [a, b) of `from`'s end log onto the copies of rows below `rows_done`; an
// entry for a row not yet copied is skipped (the row's end was stored before its entry, so the
// copy reads it). With `complete_only`, it stops at the first entry still being written.
// *done: the first entry not replayed. False when an entry is missing (memory ran out).
template <class Gen, class EndChunk>
bool replay_ends(const Gen& from, Gen& to, std::uint64_t a, std::uint64_t b, std::uint64_t rows_done,
                 bool complete_only, const std::vector<std::uint64_t>& remap, std::uint64_t* done) {
  constexpr std::size_t kRows = ColumnMirror::kChunkRows;
  *done = a;
  for (std::uint64_t e = a; e < b; ++e) {
    const EndChunk* ec = from.end_chunks[e / kRows].load(std::memory_order_acquire);
    const std::uint64_t ts =
        ec != nullptr ? std::atomic_ref<const std::uint64_t>(ec->ts[e % kRows]).load(std::memory_order_acquire) : 0;
    if (ts == 0) return complete_only;
    const std::uint64_t r = ec->row[e % kRows];
    if (r < rows_done && remap[r] != 0) {
      const std::uint64_t nr = remap[r] - 1;
      to.chunk_at(nr)->end[nr % kRows] = ts;
    }
    *done = e + 1;
  }
  return true;
}

}  // namespace

Status ColumnMirror::collect_below(std::uint64_t floor) {
  std::lock_guard<std::mutex> one(collect_m_);
  const Status oom = Status::ResourceExhausted("mirror: out of memory for a collection (the current generation stays)");
  if (full_.load(std::memory_order_relaxed))
    return Status::ResourceExhausted("mirror: full (2^32 row versions or out of memory); rebuild it");
  std::shared_ptr<Generation> old;  // cur_ changes only under collect_m_
  {
    std::lock_guard<std::mutex> lk(gen_m_);
    old = gen_;
  }
  floor = std::max(floor, old->min_start);
  const std::uint64_t began_us = now_us();
  auto fresh = std::make_shared<Generation>(cfg_.columns.size());
  if (device_copy_) {
    if (Status s = detail::gpu::mirror_create(cfg_.columns.size(), &fresh->dev); !s.ok()) return s;
    fresh->log_ends.store(true, std::memory_order_relaxed);
  }
  // The key map sized once for the live keys and a quarter more (it grows past that if need be).
  const std::uint64_t live = old->live();
  for (Shard& sh : fresh->shards) sh.reserve((live + live / 4) / kShards + 16);
  // 1. With commits paused for a moment, start logging ends: every end set from here on is in
  //    the log from e0, and every end set before is in the rows.
  std::uint64_t e0;
  {
    std::unique_lock<sched::StripedSharedMutex> lk(switch_m_);
    old->log_ends.store(true, std::memory_order_relaxed);
    e0 = old->n_ends.load(std::memory_order_relaxed);
  }
  auto stop_logging = [&] {
    std::unique_lock<sched::StripedSharedMutex> lk(switch_m_);
    old->log_ends.store(old->dev != nullptr, std::memory_order_relaxed);
  };
  // 2. While commits go on, copy the complete rows and replay the complete log entries, in
  //    passes, until what is left is small.
  constexpr std::uint64_t kLeftForThePause = 4096;
  std::vector<std::uint64_t> remap;
  std::uint64_t rows_done = 0, ends_done = e0;
  for (int pass = 0; pass < 16; ++pass) {
    const std::uint64_t n = old->n_rows.load(std::memory_order_acquire);
    const std::uint64_t en = old->n_ends.load(std::memory_order_acquire);
    if (!copy_rows_parallel<Generation, Chunk>(*old, *fresh, rows_done, n, floor, collect_threads_, &remap,
                                               &rows_done) ||
        !replay_ends<Generation, EndChunk>(*old, *fresh, ends_done, en, rows_done, true, remap, &ends_done)) {
      stop_logging();
      return oom;
    }
    if (old->n_rows.load(std::memory_order_relaxed) - rows_done <= kLeftForThePause &&
        old->n_ends.load(std::memory_order_relaxed) - ends_done <= kLeftForThePause)
      break;
  }
  // 3. Commits paused (every row and entry complete): the rest, then the switch.
  std::shared_ptr<Generation> retired;  // freed after the pause
  std::uint64_t pause_us = 0, kept = 0, r1 = 0;
  {
    std::unique_lock<sched::StripedSharedMutex> lk(switch_m_);
    const std::uint64_t t0 = now_us();
    r1 = old->n_rows.load(std::memory_order_relaxed);
    const std::uint64_t e1 = old->n_ends.load(std::memory_order_relaxed);
    std::uint64_t done = 0;
    if (full_.load(std::memory_order_relaxed) ||
        !copy_rows<Generation, Chunk>(*old, *fresh, rows_done, r1, floor, false, &remap, &done) ||
        !replay_ends<Generation, EndChunk>(*old, *fresh, ends_done, e1, r1, false, remap, &done)) {
      old->log_ends.store(old->dev != nullptr, std::memory_order_relaxed);
      return oom;
    }
    fresh->live_keys.add(old->live_keys.sum());  // exact: no commit is in flight
    fresh->min_start = floor;
    kept = fresh->made_with = fresh->n_rows.load(std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> gl(gen_m_);
      retired = std::exchange(gen_, fresh);
    }
    cur_ = fresh.get();
    pause_us = now_us() - t0;
  }
  collections_.fetch_add(1, std::memory_order_relaxed);
  versions_collected_.fetch_add(r1 - kept, std::memory_order_relaxed);
  raise_to(longest_pause_us_, pause_us);
  raise_to(longest_collection_us_, now_us() - began_us);
  return Status::Ok();
}

bool ColumnMirror::collection_due() const {
  std::shared_ptr<Generation> g;
  {
    std::lock_guard<std::mutex> lk(gen_m_);
    g = gen_;
  }
  const std::uint64_t rows = g->n_rows.load(std::memory_order_relaxed);
  const std::uint64_t live = g->live();
  const std::uint64_t ended = rows > live ? rows - live : 0;  // versions ended, some still visible to readers
  const std::uint64_t grown = rows > g->made_with ? rows - g->made_with : 0;
  return ended >= cfg_.collect_min_versions && grown >= std::max(g->made_with, cfg_.collect_min_versions);
}

void ColumnMirror::run_collector(std::weak_ptr<ColumnMirror> self, std::shared_ptr<CollectorControl> control,
                                 unsigned interval_ms) {
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(control->m);
      control->cv.wait_for(lk, std::chrono::milliseconds(interval_ms), [&] { return control->stop; });
      if (control->stop) return;
    }
    std::shared_ptr<ColumnMirror> m = self.lock();
    if (!m) return;
    if (m->collection_due()) (void)m->collect();
    // m's reference ends here; when it was the last, the mirror ends on this thread (its
    // destructor sets stop and detaches this thread) and the next pass returns.
  }
}

MirrorStats ColumnMirror::stats() const {
  std::shared_ptr<Generation> g;
  {
    std::lock_guard<std::mutex> lk(gen_m_);
    g = gen_;
  }
  MirrorStats s;
  s.rows = g->n_rows.load(std::memory_order_relaxed);
  s.keys = static_cast<std::uint64_t>(g->live_keys.sum());
  s.bad_rows = bad_rows_.load(std::memory_order_relaxed);
  s.bytes = g->bytes();
  s.built_at = built_at_;
  s.min_start = g->min_start;
  s.collections = collections_.load(std::memory_order_relaxed);
  s.versions_collected = versions_collected_.load(std::memory_order_relaxed);
  s.longest_pause_us = longest_pause_us_.load(std::memory_order_relaxed);
  s.longest_collection_us = longest_collection_us_.load(std::memory_order_relaxed);
  s.on_device = device_copy_;
  s.device_syncs = dev_syncs_.load(std::memory_order_relaxed);
  s.device_rows_copied = dev_rows_copied_.load(std::memory_order_relaxed);
  s.device_ends_copied = dev_ends_copied_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace duet::compute
