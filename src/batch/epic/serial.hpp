// The serial executor: single-version tables, txns run one after another in serial order, no
// planning. It is the benchmark's serial peer and the reference the serial-equivalence tests
// compare Epic against. It shares no code with indexing, planning or the executors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

/// Single-version tables: per table a map (indexed) or an array (direct) of {valid, words}.
class SerialStore {
 public:
  explicit SerialStore(const std::vector<TableSpec>& specs) : specs_(specs), tables_(specs.size()) {
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (!specs[i].indexed) {
        tables_[i].valid.assign(specs[i].capacity, 0);
        tables_[i].data.assign(static_cast<std::size_t>(specs[i].capacity) * specs[i].record_words, 0);
      }
  }
  const std::vector<TableSpec>& specs() const { return specs_; }

  /// The record of `key`, or nullptr if absent.
  const std::uint32_t* get(std::uint32_t table, std::uint64_t key) const {
    const T& t = tables_[table];
    if (!specs_[table].indexed) {
      if (key >= specs_[table].capacity || !t.valid[key]) return nullptr;
      return t.data.data() + key * specs_[table].record_words;
    }
    auto it = t.map.find(key);
    return it == t.map.end() ? nullptr : it->second.data();
  }
  /// Sets (valid) or deletes (data == nullptr) a record.
  void put(std::uint32_t table, std::uint64_t key, const std::uint32_t* d) {
    T& t = tables_[table];
    const std::uint32_t w = specs_[table].record_words;
    if (!specs_[table].indexed) {
      t.valid[key] = d != nullptr;
      if (d) std::copy(d, d + w, t.data.begin() + key * w);
      return;
    }
    if (!d) {
      t.map.erase(key);
      return;
    }
    t.map[key].assign(d, d + w);
  }
  /// Calls f(key, record) for every present record of an indexed table (any order).
  template <class F>
  void for_each(std::uint32_t table, F f) const {
    if (specs_[table].indexed) {
      for (auto& [k, v] : tables_[table].map) f(k, v.data());
    } else {
      for (std::uint64_t k = 0; k < specs_[table].capacity; ++k)
        if (tables_[table].valid[k]) f(k, tables_[table].data.data() + k * specs_[table].record_words);
    }
  }

 private:
  struct T {
    std::vector<std::uint8_t> valid;
    std::vector<std::uint32_t> data;
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> map;
  };
  std::vector<TableSpec> specs_;
  std::vector<T> tables_;
};

/// The serial procedure context: the same interface and rules as CpuCtx.
class SerialCtx {
 public:
  SerialCtx(SerialStore& s, const Batch& b, std::size_t t, std::uint32_t* outcome, std::uint32_t* out)
      : s_(s), b_(b), t_(t), ob_(b.op_begin[t]), nr_(b.nreads[t]), nw_(b.op_begin[t + 1] - b.op_begin[t] - b.nreads[t]),
        outcome_(outcome), outv_(out) {
    *outcome_ = kCommitted;
    for (std::uint32_t k = 0; k < kMaxOut; ++k) outv_[k] = 0;
    std::size_t words = 0;
    for (std::uint32_t i = 0; i < nr_; ++i) words += read_words(i);
    static thread_local std::vector<std::uint32_t> arena;
    if (arena.size() < words) arena.resize(words);
    arena_ = arena.data();
  }
  std::uint32_t nreads() const { return nr_; }
  std::uint32_t nwrites() const { return nw_; }
  std::uint32_t nargs() const { return b_.arg_begin[t_ + 1] - b_.arg_begin[t_]; }
  std::uint32_t arg(std::uint32_t i) const { return i < nargs() ? b_.args[b_.arg_begin[t_] + i] : 0; }
  std::uint32_t attempt() const { return b_.attempt[t_]; }
  std::uint32_t read_words(std::uint32_t i) const { return i < nr_ ? s_.specs()[b_.keys[ob_ + i].table].record_words : 0; }
  std::uint32_t write_words(std::uint32_t i) const {
    return i < nw_ ? s_.specs()[b_.keys[ob_ + nr_ + i].table].record_words : 0;
  }
  const std::uint32_t* read(std::uint32_t i) {
    if (i >= nr_ || wrote_) return illegal(), nullptr;
    const Key& k = b_.keys[ob_ + i];
    const std::uint32_t* r = s_.get(k.table, k.key);
    if (!r) return nullptr;
    // A copy, as Epic's reads see the version before this txn's writes even if the procedure
    // dereferences the pointer after writing the same record.
    std::uint32_t* dst = arena_;
    for (std::uint32_t j = 0; j < i; ++j) dst += read_words(j);
    std::copy(r, r + read_words(i), dst);
    return dst;
  }
  template <class F>
  void write(std::uint32_t i, F f) {
    if (!writable(i)) return;
    const Key& k = b_.keys[ob_ + nr_ + i];
    buf_.resize(write_words(i));
    for (std::uint32_t w = 0; w < buf_.size(); ++w) buf_[w] = f(w);
    s_.put(k.table, k.key, buf_.data());
  }
  void write_copy(std::uint32_t i, const std::uint32_t* src) {
    write(i, [src](std::uint32_t w) { return src[w]; });
  }
  void remove(std::uint32_t i) {
    if (!writable(i)) return;
    const Key& k = b_.keys[ob_ + nr_ + i];
    s_.put(k.table, k.key, nullptr);
  }
  void abort(std::uint32_t reason) { stop(kAborted, reason); }
  void rerun() { stop(kRerun, 0); }
  void out(std::uint32_t k, std::uint32_t v) {
    if (k < kMaxOut) outv_[k] = v;
  }
  bool stopped() const { return aborted_; }
  void set_outcome(std::uint32_t o) { *outcome_ = o; aborted_ = true; }

 private:
  void illegal() { *outcome_ = kIllegal; }
  bool writable(std::uint32_t i) {
    if (aborted_ || i >= nw_ || (filled_ >> i & 1u)) return illegal(), false;
    filled_ |= 1ull << i;
    wrote_ = true;
    return true;
  }
  void stop(std::uint32_t o, std::uint32_t reason) {
    if (wrote_) return illegal();
    if (aborted_) return;
    aborted_ = true;
    if (*outcome_ == kIllegal) return;  // a rule broken earlier (a bad index) stays the outcome
    *outcome_ = o;
    out(0, reason);
  }
  SerialStore& s_;
  const Batch& b_;
  std::size_t t_;
  std::uint32_t ob_, nr_, nw_;
  std::uint32_t* outcome_;
  std::uint32_t* outv_;
  std::uint64_t filled_ = 0;
  bool wrote_ = false, aborted_ = false;
  std::vector<std::uint32_t> buf_;
  std::uint32_t* arena_ = nullptr;
};

/// Runs `b` serially on `s`; outcome and out (kMaxOut words per txn) are resized and filled.
template <class Procs>
void run_serial(SerialStore& s, const Batch& b, std::vector<std::uint32_t>* outcome, std::vector<std::uint32_t>* out) {
  outcome->assign(b.size(), 0);
  out->assign(b.size() * kMaxOut, 0);
  for (std::size_t t = 0; t < b.size(); ++t) {
    SerialCtx c(s, b, t, outcome->data() + t, out->data() + t * kMaxOut);
    if (!Procs::dispatch(b.proc[t], c)) c.set_outcome(kUnknownProc);
  }
}

}  // namespace duet::batch::epic
