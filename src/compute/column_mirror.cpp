// ColumnMirror (column_mirror.hpp): a txn table's rows as versioned integer columns, appended by
// commits, read at a start timestamp.
#include "compute/column_mirror.hpp"

#include "compute/internal.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace duet::compute {

// One chunk: begin, end and prev of kChunkRows rows, then one array per kept column. begin and
// end are written once each (end from kNever to the replacing commit's timestamp) and read
// through atomic_ref by scans running beside the writers; a row's columns and prev are written
// before its begin and read only by readers whose start the row's commit had passed
// (wait_commits ordered them).
struct ColumnMirror::Chunk {
  std::uint64_t* begin;
  std::uint64_t* end;
  std::uint64_t* prev;  ///< previous version's row + 1 (0: none)
  std::int64_t* cols;   ///< column c at cols + c * kChunkRows
  void* mem;

  static Chunk* make(std::size_t ncols) {
    const std::size_t bytes = (3 + ncols) * kChunkRows * sizeof(std::uint64_t);
    void* mem = std::aligned_alloc(64, bytes);
    if (mem == nullptr) return nullptr;
    auto* c = new Chunk;
    c->mem = mem;
    c->begin = static_cast<std::uint64_t*>(mem);
    c->end = c->begin + kChunkRows;
    c->prev = c->end + kChunkRows;
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

namespace {

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

}  // namespace

ColumnMirror::~ColumnMirror() {
  if (chunks_)
    for (std::size_t c = 0; c < kMaxChunks; ++c)
      if (Chunk* p = chunks_[c].load(std::memory_order_relaxed)) Chunk::destroy(p);
  if (end_chunks_)
    for (std::size_t c = 0; c < kMaxChunks; ++c) delete end_chunks_[c].load(std::memory_order_relaxed);
  if (dev_ != nullptr) detail::gpu::mirror_destroy(dev_);
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
  m->chunks_.reset(new std::atomic<Chunk*>[kMaxChunks]);
  for (std::size_t c = 0; c < kMaxChunks; ++c) m->chunks_[c].store(nullptr, std::memory_order_relaxed);
  std::string no_gpu;
  if (m->cfg_.device_copy && detail::gpu::available(&no_gpu)) {
    if (Status s = detail::gpu::mirror_create(m->cfg_.columns.size(), &m->dev_); !s.ok()) return s;
    m->end_chunks_.reset(new std::atomic<EndChunk*>[kMaxChunks]);
    for (std::size_t c = 0; c < kMaxChunks; ++c) m->end_chunks_[c].store(nullptr, std::memory_order_relaxed);
  }

  // Observe first, then snapshot: a commit whose timestamp is above the snapshot's start calls
  // the observer (it took its timestamp after set_commit_observer returned), so nothing is missed;
  // the queue's commits at or below the start are in the snapshot and are dropped.
  if (Status s = space->set_commit_observer(m); !s.ok()) return s;
  Txn t;
  Status s = space->begin(&t);
  if (!s.ok()) {
    (void)space->set_commit_observer(nullptr);  // removing cannot fail
    return s;
  }
  m->built_at_ = t.start_ts();
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
      const std::uint64_t row = m->n_rows_.fetch_add(1, std::memory_order_relaxed);
      m->put_version(id, m->built_at_, vals.data(), row);
    }
    if (!s.ok() || snap.more.empty() || !snap.more[0]) break;
    r.start = snap.resume[0];
    r.start_inclusive = false;
  }
  t.abort();
  if (!s.ok()) {
    (void)space->set_commit_observer(nullptr);  // removing cannot fail
    return s;
  }
  {
    std::lock_guard<std::mutex> lk(m->load_m_);
    std::stable_sort(m->pending_.begin(), m->pending_.end(),
                     [](const Pending& a, const Pending& b) { return a.ts < b.ts; });
    for (const Pending& p : m->pending_)
      if (p.ts > m->built_at_) m->apply(p.ts, p.writes.begin(), p.writes.end());
    m->pending_.clear();
    m->pending_.shrink_to_fit();
    m->loading_ = false;
    m->loaded_.store(true, std::memory_order_release);
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
  apply(ts, it, writes.end());
}

void ColumnMirror::apply(std::uint64_t ts, Writes::const_iterator from, Writes::const_iterator to) {
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
  std::uint64_t row = appended ? n_rows_.fetch_add(appended, std::memory_order_relaxed) : 0;
  if (appended && row + appended > kChunkRows * kMaxChunks) {
    full_.store(true, std::memory_order_relaxed);
    return;
  }
  const std::int64_t* v = vals.data();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (is_row[i]) {
      put_version(ids[i], ts, v, row++);
      v += nc;
    } else {
      put_version(ids[i], ts, nullptr, 0);
    }
  }
}

std::uint64_t* ColumnMirror::Shard::find(std::uint64_t id, bool insert) {
  auto slot_of = [](std::uint64_t x, std::size_t mask) {
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    return static_cast<std::size_t>(x) & mask;
  };
  if (insert && 2 * (used + 1) > slots.size()) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> grown(std::max<std::size_t>(1024, 2 * slots.size()));
    for (const auto& e : slots)
      if (e.second != 0) {
        std::size_t j = slot_of(e.first, grown.size() - 1);
        while (grown[j].second != 0) j = (j + 1) & (grown.size() - 1);
        grown[j] = e;
      }
    slots.swap(grown);
  }
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

ColumnMirror::Chunk* ColumnMirror::chunk_for(std::uint64_t row) {
  // Counted when made, uncounted when a loser frees its own: n_chunks_ counts the published.
  return publish(
      chunks_[row / kChunkRows],
      [&] {
        Chunk* c = Chunk::make(cfg_.columns.size());
        if (c != nullptr) n_chunks_.fetch_add(1, std::memory_order_relaxed);
        return c;
      },
      [&](Chunk* c) {
        n_chunks_.fetch_sub(1, std::memory_order_relaxed);
        Chunk::destroy(c);
      });
}

void ColumnMirror::put_version(std::uint64_t id, std::uint64_t ts, const std::int64_t* values, std::uint64_t row) {
  Chunk* c = nullptr;
  if (values != nullptr) {
    c = chunk_for(row);
    if (c == nullptr) {
      full_.store(true, std::memory_order_relaxed);
      return;
    }
  }
  const std::size_t i = row % kChunkRows;
  if (values != nullptr)
    for (std::size_t k = 0; k < cfg_.columns.size(); ++k) c->cols[k * kChunkRows + i] = values[k];
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
  Chunk* oc = old != 0 ? chunks_[(old - 1) / kChunkRows].load(std::memory_order_acquire) : nullptr;
  const bool was_live = oc != nullptr && oc->load_end((old - 1) % kChunkRows) == kNever;
  if (values != nullptr) {
    std::atomic_ref<std::uint64_t>(c->begin[i]).store(ts, std::memory_order_release);
    if (!was_live) live_keys_.add(1);
  } else if (was_live) {
    live_keys_.add(-1);
  }
  if (was_live) {
    std::atomic_ref<std::uint64_t>(oc->end[(old - 1) % kChunkRows]).store(ts, std::memory_order_release);
    if (dev_ != nullptr) log_end(old - 1, ts);
  }
}

void ColumnMirror::log_end(std::uint64_t row, std::uint64_t ts) {
  const std::uint64_t i = n_ends_.fetch_add(1, std::memory_order_relaxed);
  if (i >= kChunkRows * kMaxChunks) {
    full_.store(true, std::memory_order_relaxed);
    return;
  }
  // ts all 0: not yet written
  EndChunk* e = publish(end_chunks_[i / kChunkRows], [] { return new (std::nothrow) EndChunk(); },
                        [](EndChunk* x) { delete x; });
  if (e == nullptr) {
    full_.store(true, std::memory_order_relaxed);
    return;
  }
  e->row[i % kChunkRows] = row;
  std::atomic_ref<std::uint64_t>(e->ts[i % kChunkRows]).store(ts, std::memory_order_release);
}

Status ColumnMirror::sync_device() {
  // The log's length before the rows': every logged end names a row reserved before the entry,
  // so each row an entry below `en` names is below `n`, and is on the device before it is ended.
  const std::uint64_t en = n_ends_.load(std::memory_order_acquire);
  const std::uint64_t n = n_rows_.load(std::memory_order_acquire);
  // Rows from the first one not known complete: a row still being written (begin ~0) belongs to
  // a commit after every start waited for, and is copied again next time.
  std::uint64_t incomplete = n;
  std::vector<const std::int64_t*> cols(cfg_.columns.size());
  for (std::uint64_t a = dev_rows_; a < n;) {
    const std::size_t ci = static_cast<std::size_t>(a / kChunkRows), off = static_cast<std::size_t>(a % kChunkRows);
    const std::uint64_t b = std::min<std::uint64_t>(n, (ci + 1) * kChunkRows);
    const Chunk* c = chunks_[ci].load(std::memory_order_acquire);
    Status s;
    if (c == nullptr) {
      incomplete = std::min(incomplete, a);
      s = detail::gpu::mirror_put(dev_, a, b - a, nullptr, nullptr, nullptr);
    } else {
      if (incomplete == n)
        for (std::size_t i = off; i < off + (b - a); ++i)
          if (c->load_begin(i) == kNever) {
            incomplete = ci * kChunkRows + i;
            break;
          }
      for (std::size_t k = 0; k < cols.size(); ++k) cols[k] = c->cols + k * kChunkRows + off;
      s = detail::gpu::mirror_put(dev_, a, b - a, c->begin + off, c->end + off, cols.data());
    }
    if (!s.ok()) return s;
    a = b;
  }
  dev_rows_copied_ += n - dev_rows_;
  dev_rows_ = incomplete;
  dev_n_ = n;
  std::uint64_t eincomplete = en;
  for (std::uint64_t a = dev_ends_; a < en;) {
    const std::size_t ci = static_cast<std::size_t>(a / kChunkRows), off = static_cast<std::size_t>(a % kChunkRows);
    const std::uint64_t b = std::min<std::uint64_t>(en, (ci + 1) * kChunkRows);
    const EndChunk* e = end_chunks_[ci].load(std::memory_order_acquire);
    if (e == nullptr) {
      eincomplete = std::min(eincomplete, a);
    } else {
      if (eincomplete == en)
        for (std::size_t i = off; i < off + (b - a); ++i)
          if (std::atomic_ref<const std::uint64_t>(e->ts[i]).load(std::memory_order_acquire) == 0) {
            eincomplete = ci * kChunkRows + i;
            break;
          }
      if (Status s = detail::gpu::mirror_set_ends(dev_, e->row + off, e->ts + off, b - a); !s.ok()) return s;
    }
    a = b;
  }
  dev_ends_copied_ += en - dev_ends_;
  dev_ends_ = eincomplete;
  ++dev_syncs_;
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
  if (device == Device::kGpu && dev_ == nullptr)
    return Status::Unavailable("mirror: no GPU copy (device_copy off, or no GPU)");
  const bool on_gpu = dev_ != nullptr && device != Device::kCpu;
  if (start < built_at_)
    return Status::InvalidArgument("mirror: start " + std::to_string(start) + " is before the mirror was built (" +
                                   std::to_string(built_at_) + ")");
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
  std::shared_ptr<TxnSpace> space = space_.lock();
  if (!space) return Status::Unavailable("mirror: its keyspace is gone");
  space->wait_commits(start);
  if (full_.load(std::memory_order_relaxed))
    return Status::ResourceExhausted("mirror: full (2^32 row versions or out of memory); rebuild it");

  const std::size_t groups = gcol < 0 ? 1 : static_cast<std::size_t>(kMaxGroups);
  const std::size_t na = q.aggs.size();
  if (on_gpu) {
    std::vector<detail::gpu::MirrorPred> gp;
    for (const Pred& p : preds) gp.push_back({p.col, p.p->cmp, p.p->i, p.p->i_hi});
    std::vector<detail::gpu::MirrorAgg> ga;
    for (std::size_t a = 0; a < na; ++a) ga.push_back({q.aggs[a].op, acols[a]});
    Partial r;
    {
      std::lock_guard<std::mutex> lk(dev_m_);
      if (Status s = sync_device(); !s.ok()) return s;
      if (Status s = detail::gpu::mirror_aggregate(dev_, dev_n_, start, gp, gcol, groups, ga, &r.rows, &r.acc,
                                                   &r.out_of_range);
          !s.ok())
        return s;
      r.scanned = dev_n_;
    }
    return finish(q, gcol, groups, r, out, rows_scanned);
  }
  const std::uint64_t n = n_rows_.load(std::memory_order_acquire);
  const std::size_t nchunks = static_cast<std::size_t>((n + kChunkRows - 1) / kChunkRows);
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::max<std::size_t>(nchunks, 1))));
  std::vector<Partial> parts(threads);
  auto scan = [&](unsigned p) {
    Partial& r = parts[p];
    r.rows.assign(groups, 0);
    r.acc.assign(groups * na, 0);
    std::vector<bool> seen(groups, false);
    for (std::size_t ci = p; ci < nchunks; ci += threads) {
      const Chunk* c = chunks_[ci].load(std::memory_order_acquire);
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

Status ColumnMirror::contains(std::string_view key, std::uint64_t start, bool* yes) {
  std::uint64_t id = 0;
  if (key < cfg_.lo || key >= cfg_.hi || !cfg_.key_id(key, &id))
    return Status::InvalidArgument("mirror: the key is not one the mirror holds");
  if (start < built_at_) return Status::InvalidArgument("mirror: start is before the mirror was built");
  std::shared_ptr<TxnSpace> space = space_.lock();
  if (!space) return Status::Unavailable("mirror: its keyspace is gone");
  space->wait_commits(start);
  *yes = false;
  Shard& sh = shard_of(id);
  std::uint64_t r = 0;
  {
    std::lock_guard<std::mutex> lk(sh.m);
    if (const std::uint64_t* v = sh.find(id, false)) r = *v;
  }
  while (r != 0) {
    const Chunk* c = chunks_[(r - 1) / kChunkRows].load(std::memory_order_acquire);
    const std::size_t i = (r - 1) % kChunkRows;
    if (c->load_begin(i) <= start && c->load_end(i) > start) return *yes = true, Status::Ok();
    r = c->prev[i];
  }
  return Status::Ok();
}

MirrorStats ColumnMirror::stats() const {
  MirrorStats s;
  s.rows = n_rows_.load(std::memory_order_relaxed);
  s.keys = static_cast<std::uint64_t>(live_keys_.sum());
  s.bad_rows = bad_rows_.load(std::memory_order_relaxed);
  s.bytes = n_chunks_.load(std::memory_order_relaxed) * (3 + cfg_.columns.size()) * kChunkRows * sizeof(std::uint64_t);
  s.built_at = built_at_;
  s.on_device = dev_ != nullptr;
  if (dev_ != nullptr) {
    std::lock_guard<std::mutex> lk(dev_m_);
    s.device_syncs = dev_syncs_;
    s.device_rows_copied = dev_rows_copied_;
    s.device_ends_copied = dev_ends_copied_;
  }
  return s;
}

}  // namespace duet::compute
