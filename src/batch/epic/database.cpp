#include "batch/epic/database.hpp"

#include "batch/epic/pool.hpp"

#include <algorithm>
#include <thread>

namespace duet::batch::epic {

std::string shape_mismatch(const char* name, std::uint32_t reads, std::uint32_t writes, std::uint32_t args,
                           const CallShape& got) {
  if (got.reads == reads && got.writes == writes && got.args.size() == args) return "";
  auto n = [](std::uint32_t v, const char* what) { return std::to_string(v) + " " + what + (v == 1 ? "" : "s"); };
  return std::string(name) + " takes " + n(reads, "read") + ", " + n(writes, "write") + " and " + n(args, "arg") +
         " here; the call has " + n(got.reads, "read") + ", " + n(got.writes, "write") + " and " +
         n(static_cast<std::uint32_t>(got.args.size()), "arg");
}

WidthCheck& WidthCheck::read_at_least(std::uint32_t i, std::uint32_t words) {
  const TableSpec* t = call_.read_table(i);
  if (err_.empty() && t && t->record_words < words)
    err_ = std::string(name_) + " reads word " + std::to_string(words - 1) + " of its read " + std::to_string(i) +
           ", but table " + t->name + " has " + std::to_string(t->record_words) + "-word records";
  return *this;
}

WidthCheck& WidthCheck::copies(std::uint32_t j, std::uint32_t i) {
  const TableSpec* from = call_.read_table(i);
  const TableSpec* to = call_.write_table(j);
  if (err_.empty() && from && to && from->record_words < to->record_words)
    err_ = std::string(name_) + " fills its write " + std::to_string(j) + " (table " + to->name + ", " +
           std::to_string(to->record_words) + "-word records) from its read " + std::to_string(i) + " (table " +
           from->name + ", " + std::to_string(from->record_words) + "-word records), which is narrower";
  return *this;
}

void Batch::clear() {
  // Keeps the vectors' capacity: a batch refilled again and again allocates once.
  proc.clear();
  op_begin.assign(1, 0);
  nreads.clear();
  keys.clear();
  arg_begin.assign(1, 0);
  args.clear();
  attempt.clear();
  tag.clear();
  part.clear();
  piece.clear();
}

std::size_t Batch::txn_count() const {
  std::size_t later = 0;
  for (std::uint8_t x : piece) later += x;
  return size() - later;
}

bool Batch::add(std::uint32_t p, std::span<const Key> reads, std::span<const Key> writes, std::span<const std::uint32_t> a,
                std::uint64_t tg, std::uint32_t att, std::uint32_t partition) {
  if (reads.size() + writes.size() > kMaxOps || writes.size() > kMaxWrites || proc.size() >= kMaxTxns) return false;
  for (std::size_t i = 0; i < writes.size(); ++i)
    for (std::size_t j = i + 1; j < writes.size(); ++j)
      if (writes[i].table == writes[j].table && writes[i].key == writes[j].key) return false;
  proc.push_back(p);
  nreads.push_back(static_cast<std::uint16_t>(reads.size()));
  keys.insert(keys.end(), reads.begin(), reads.end());
  keys.insert(keys.end(), writes.begin(), writes.end());
  op_begin.push_back(static_cast<std::uint32_t>(keys.size()));
  args.insert(args.end(), a.begin(), a.end());
  arg_begin.push_back(static_cast<std::uint32_t>(args.size()));
  attempt.push_back(att);
  tag.push_back(tg);
  part.push_back(partition);
  piece.push_back(0);
  return true;
}

bool Batch::add_piece(std::uint32_t p, std::span<const Key> reads, std::span<const Key> writes,
                      std::span<const std::uint32_t> a) {
  if (proc.empty()) return false;
  if (!add(p, reads, writes, a, tag.back(), attempt.back(), part.back())) return false;
  piece.back() = 1;
  return true;
}

void Batch::add_from(const Batch& o, std::size_t t, std::uint32_t att) {
  proc.push_back(o.proc[t]);
  nreads.push_back(o.nreads[t]);
  keys.insert(keys.end(), o.keys.begin() + o.op_begin[t], o.keys.begin() + o.op_begin[t + 1]);
  op_begin.push_back(static_cast<std::uint32_t>(keys.size()));
  args.insert(args.end(), o.args.begin() + o.arg_begin[t], o.args.begin() + o.arg_begin[t + 1]);
  arg_begin.push_back(static_cast<std::uint32_t>(args.size()));
  attempt.push_back(att);
  tag.push_back(o.tag[t]);
  part.push_back(t < o.part.size() ? o.part[t] : kAnyPart);
  piece.push_back(t < o.piece.size() ? o.piece[t] : 0);
}

void Batch::append_first(const Batch& o, std::size_t n, std::uint32_t att) {
  if (n == 0) return;
  const auto first = [n](const auto& v) { return v.begin() + static_cast<std::ptrdiff_t>(n); };
  const std::uint32_t key0 = static_cast<std::uint32_t>(keys.size()), arg0 = static_cast<std::uint32_t>(args.size());
  proc.insert(proc.end(), o.proc.begin(), first(o.proc));
  nreads.insert(nreads.end(), o.nreads.begin(), first(o.nreads));
  keys.insert(keys.end(), o.keys.begin() + o.op_begin[0], o.keys.begin() + o.op_begin[n]);
  args.insert(args.end(), o.args.begin() + o.arg_begin[0], o.args.begin() + o.arg_begin[n]);
  for (std::size_t t = 1; t <= n; ++t) {
    op_begin.push_back(key0 + o.op_begin[t] - o.op_begin[0]);
    arg_begin.push_back(arg0 + o.arg_begin[t] - o.arg_begin[0]);
  }
  attempt.insert(attempt.end(), n, att);
  tag.insert(tag.end(), o.tag.begin(), first(o.tag));
  // part and piece may be shorter than the batch (their defaults): as add_from fills them.
  const std::size_t parts = std::min(n, o.part.size()), pieces = std::min(n, o.piece.size());
  part.insert(part.end(), o.part.begin(), o.part.begin() + static_cast<std::ptrdiff_t>(parts));
  part.insert(part.end(), n - parts, kAnyPart);
  piece.insert(piece.end(), o.piece.begin(), o.piece.begin() + static_cast<std::ptrdiff_t>(pieces));
  piece.insert(piece.end(), n - pieces, 0);
}

void Batch::pop_back() {
  if (proc.empty()) return;
  proc.pop_back();
  nreads.pop_back();
  op_begin.pop_back();
  keys.resize(op_begin.back());
  arg_begin.pop_back();
  args.resize(arg_begin.back());
  attempt.pop_back();
  tag.pop_back();
  part.pop_back();
  if (!piece.empty()) piece.pop_back();
}

void fold_pieces(const Batch& b, const std::vector<std::uint32_t>& outcome, const std::vector<std::uint32_t>& out,
                 std::vector<std::uint32_t>* txn_outcome, std::vector<std::uint32_t>* txn_out) {
  txn_outcome->clear();
  txn_out->clear();
  txn_outcome->reserve(b.txn_count());
  txn_out->reserve(b.txn_count() * kMaxOut);
  for (std::size_t t = 0; t < b.size(); ++t) {
    const bool later = t < b.piece.size() && b.piece[t] && !txn_outcome->empty();
    if (!later) {
      txn_outcome->push_back(outcome[t]);
      txn_out->insert(txn_out->end(), out.begin() + t * kMaxOut, out.begin() + (t + 1) * kMaxOut);
      continue;
    }
    if (txn_outcome->back() == kCommitted) txn_outcome->back() = outcome[t];
    for (std::uint32_t k = 0; k < kMaxOut; ++k) (*txn_out)[txn_out->size() - kMaxOut + k] += out[t * kMaxOut + k];
  }
}

void Scratch::reserve(std::uint32_t temps) {
  if (word.size() < temps) {
    word.resize(temps, 0);
    data.resize(static_cast<std::size_t>(temps) * slot_words, 0);
  }
}

Database::Database(std::vector<TableSpec> specs, bool index_only) {
  std::uint64_t total = 0;
  for (auto& s : specs) total += s.capacity;
  if (total >= kCurr) {
    error_ = "total table capacity exceeds 2^32 - 2 records";
    return;
  }
  std::uint64_t base = 0;
  for (auto& s : specs) {
    if (s.record_words == 0) {
      error_ = "table " + s.name + ": zero-sized record";
      return;
    }
    TableStore t;
    t.spec = s;
    t.base = static_cast<std::uint32_t>(base);
    base += s.capacity;
    if (base >= kCurr) {
      error_ = "total table capacity exceeds 2^32 - 2 records";
      tables_.clear();
      specs_.clear();
      return;
    }
    if (!index_only) {
      t.slots.assign(s.capacity, 0);
      t.data.assign(static_cast<std::size_t>(s.capacity) * 2 * s.record_words, 0);
      t.deleted.assign(s.capacity, 0);
    }
    if (s.indexed) {
      t.backlink.assign(s.capacity, 0);
      for (std::uint32_t i = 0; i < s.capacity; ++i) t.free_ring.push_back(i);
      t.index.reserve(s.capacity);
    }
    max_words_ = std::max(max_words_, s.record_words);
    tables_.push_back(std::move(t));
    specs_.push_back(s);
  }
}

bool Database::load(std::uint32_t table, std::uint64_t key, const std::uint32_t* d) {
  if (table >= tables_.size()) return false;
  TableStore& t = tables_[table];
  const bool index_only = t.slots.size() != t.spec.capacity;  // a shadow: keys only, no records
  std::uint32_t r;
  if (t.spec.indexed) {
    auto it = t.index.find(key);
    if (it != t.index.end()) {
      r = it->second;
    } else {
      if (t.free_ring.empty()) return false;
      r = t.free_ring.front();
      t.free_ring.pop_front();
      t.index.emplace(key, r);
      t.backlink[r] = key;
    }
  } else {
    if (key >= t.spec.capacity) return false;
    r = static_cast<std::uint32_t>(key);
  }
  if (index_only) return true;
  const std::uint32_t w = t.spec.record_words;
  std::copy(d, d + w, t.data.begin() + static_cast<std::size_t>(r) * 2 * w);
  t.slots[r] = (1u << 1) | 1u;  // slot 0: eid 1, valid; slot 1: eid 0, invalid
  return true;
}

bool Database::copy_contents_from(const Database& from) {
  if (from.tables_.size() != tables_.size()) return false;
  for (std::size_t i = 0; i < tables_.size(); ++i) {
    const TableSpec &a = from.tables_[i].spec, &b = tables_[i].spec;
    if (a.record_words != b.record_words || a.capacity != b.capacity || a.indexed != b.indexed) return false;
  }
  for (std::size_t i = 0; i < tables_.size(); ++i) {
    const TableStore& f = from.tables_[i];
    TableStore& t = tables_[i];
    t.slots = f.slots;
    t.data = f.data;
    t.deleted = f.deleted;
    t.index = f.index;
    t.backlink = f.backlink;
    t.free_ring = f.free_ring;
  }
  eid_ = from.eid_;
  return true;
}

std::string Database::check_keys(const Batch& b, std::size_t t) const {
  for (std::uint32_t i = b.op_begin[t]; i < b.op_begin[t + 1]; ++i) {
    const Key& k = b.keys[i];
    if (k.table >= tables_.size()) return "unknown table " + std::to_string(k.table);
    const TableStore& ts = tables_[k.table];
    if (!ts.spec.indexed && k.key >= ts.spec.capacity)
      return "key " + std::to_string(k.key) + " out of range for table " + ts.spec.name;
  }
  return "";
}

std::uint32_t Database::lookup(std::uint32_t table, std::uint64_t key) const {
  const TableStore& t = tables_[table];
  if (!t.spec.indexed) return key < t.spec.capacity ? static_cast<std::uint32_t>(key) : kInvalid;
  auto it = t.index.find(key);
  return it == t.index.end() ? kInvalid : it->second;
}

bool Database::index(const Batch& b, Indexed* out, std::string* err, int threads) {
  const std::size_t n = b.size(), ops = b.keys.size();
  // Lookups only read the index, so `threads` threads share them in contiguous ranges.
  const bool parallel = threads > 1 && ops >= 65536;
  const std::size_t parts = parallel ? 2 * static_cast<std::size_t>(threads) : 1;
  // Pass 1: the missing write keys of each indexed table, in txn order, before changing anything
  // (read-only: each range of txns lists its own, and the lists are taken range by range).
  auto& missing = missing_;  // [range][table]
  missing.resize(parts);
  for (auto& m : missing) {
    m.resize(tables_.size());
    for (auto& keys : m) keys.clear();
  }
  auto scan = [&](std::size_t p) {
    for (std::size_t t = n * p / parts; t < n * (p + 1) / parts; ++t)
      for (std::uint32_t i = b.op_begin[t] + b.nreads[t]; i < b.op_begin[t + 1]; ++i) {
        const Key& k = b.keys[i];
        if (tables_[k.table].spec.indexed && !tables_[k.table].index.count(k.key)) missing[p][k.table].push_back(k.key);
      }
  };
  if (parallel) {
    thread_pool(threads - 1).run(parts, scan);
  } else {
    scan(0);
  }
  for (std::size_t tb = 0; tb < tables_.size(); ++tb) {
    std::size_t need = 0;
    for (const auto& m : missing) need += m[tb].size();
    if (need <= tables_[tb].free_ring.size()) continue;  // fits even counting repeats
    // Count each key once (a key two txns insert takes one id) before calling the table full.
    std::unordered_map<std::uint64_t, char> seen;
    seen.reserve(need);
    for (const auto& m : missing)
      for (auto k : m[tb]) seen.emplace(k, 0);
    if (seen.size() > tables_[tb].free_ring.size()) {
      if (err) *err = "table " + tables_[tb].spec.name + " is full";
      return false;
    }
  }
  // Ids in first-seen order, so they are handed out deterministically; a repeat finds its key
  // already inserted.
  for (std::size_t tb = 0; tb < tables_.size(); ++tb) {
    TableStore& t = tables_[tb];
    for (const auto& m : missing)
      for (auto k : m[tb]) {
        if (!t.index.emplace(k, t.free_ring.front()).second) continue;
        const std::uint32_t r = t.free_ring.front();
        t.free_ring.pop_front();
        t.backlink[r] = k;
      }
  }
  out->table.resize(ops);
  out->rid.resize(ops);
  out->global.resize(ops);
  auto look = [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      const Key& k = b.keys[i];
      const std::uint32_t r = lookup(k.table, k.key);
      out->table[i] = static_cast<std::uint8_t>(k.table);
      out->rid[i] = r;
      out->global[i] = r == kInvalid ? kInvalid : tables_[k.table].base + r;
    }
  };
  if (parallel) {
    thread_pool(threads - 1).run(parts, [&](std::size_t p) { look(ops * p / parts, ops * (p + 1) / parts); });
  } else {
    look(0, ops);
  }
  return true;
}

const std::uint32_t* Database::get(std::uint32_t table, std::uint64_t key) const {
  if (table >= tables_.size()) return nullptr;
  return get_at(table, lookup(table, key));
}

const std::uint32_t* Database::get_at(std::uint32_t table, std::uint32_t r) const {
  if (table >= tables_.size() || r == kInvalid || r >= tables_[table].spec.capacity) return nullptr;
  const TableStore& t = tables_[table];
  const int s = committed_slot(t.slots[r]);
  if (s < 0) return nullptr;
  return t.data.data() + (static_cast<std::size_t>(r) * 2 + s) * t.spec.record_words;
}

void Database::end_epoch() {
  for (auto& t : tables_) {
    if (!t.spec.indexed) continue;  // executors set the bit on indexed tables only
    for (std::uint32_t r = 0; r < t.spec.capacity; ++r) {
      if (!t.deleted[r]) continue;
      t.deleted[r] = 0;
      t.index.erase(t.backlink[r]);
      t.free_ring.push_back(r);
    }
  }
  ++eid_;
}

void Database::end_epoch_with(const std::vector<std::vector<std::uint32_t>>& freed) {
  for (std::size_t tb = 0; tb < tables_.size() && tb < freed.size(); ++tb) {
    TableStore& t = tables_[tb];
    for (auto r : freed[tb]) {
      if (r < t.deleted.size()) t.deleted[r] = 0;
      if (!t.spec.indexed) continue;
      t.index.erase(t.backlink[r]);
      t.free_ring.push_back(r);
    }
  }
  ++eid_;
}

void Database::end_epoch_collect(std::vector<std::vector<std::uint32_t>>* freed) {
  freed->resize(tables_.size());
  for (std::size_t tb = 0; tb < tables_.size(); ++tb) {
    TableStore& t = tables_[tb];
    auto& f = (*freed)[tb];
    f.clear();
    if (!t.spec.indexed) continue;  // executors set the bit on indexed tables only
    for (std::uint32_t r = 0; r < t.deleted.size(); ++r)
      if (t.deleted[r]) {
        t.deleted[r] = 0;
        f.push_back(r);
      }
  }
  ++eid_;
}

void Database::release(const std::vector<std::vector<std::uint32_t>>& freed) {
  for (std::size_t tb = 0; tb < tables_.size() && tb < freed.size(); ++tb) {
    TableStore& t = tables_[tb];
    if (!t.spec.indexed) continue;
    for (auto r : freed[tb]) {
      t.index.erase(t.backlink[r]);
      t.free_ring.push_back(r);
    }
  }
}

}  // namespace duet::batch::epic
