// The RocksDB peer of duet_bench_epic: RocksDB's pessimistic TransactionDB (7.8, Debian's
// librocksdb) executing the same pre-generated batches with the same procedure source as Epic
// and the serial executor, on the same number of threads. A benchmark peer, not product code.
//
// In memory: the database lives in RocksDB's in-memory Env (NewMemEnv), the WAL is off
// (WriteOptions::disableWAL), and the memtable is sized to hold every record, so no flush or
// compaction runs during a measured epoch. Keys are the table byte then the 64-bit key
// big-endian; values are the record's words. The memtable is a hash of small skiplists keyed by
// the whole 9-byte key (HashSkipList with a fixed 9-byte prefix), as every access is a point
// access: a plain skiplist spent about 40% of a read-only YCSB run walking its levels. The plain
// skiplist stays available (open(..., false)); with the hash a full-table iterator is not
// supported.
//
// Isolation: two-phase locking, serializable. A txn that declares writes takes an exclusive lock
// (GetForUpdate) on each read key it also writes and a shared lock on every other read key; its
// writes lock their keys. A read-only txn reads one snapshot without locks. Txns are taken from
// one counter by `threads` threads, so they start in batch order but commit in whatever order
// their locks allow: the final state is that of *some* serial order, not necessarily the batch's
// (unlike Epic's). A lock timeout or a detected deadlock rolls the txn back and retries it
// (counted in RocksStats::retries). A procedure's abort() rolls it back for good. So does its
// rerun() once every earlier txn of the batch has finished; before that, a rerun means an earlier
// txn whose effect the declared keys assume (TPC-C's predicted order id) has not committed yet,
// and the txn is rolled back and retried (counted in RocksStats::order_retries). On one thread
// the peer therefore equals the serial executor, and on many every txn that commits serially
// commits here too.
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/memtablerep.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/utilities/transaction.h>
#include <rocksdb/utilities/transaction_db.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic::peer {

/// What one batch cost the peer: txns retried after a lock timeout or deadlock, and outcomes.
struct RocksStats {
  std::uint64_t retries = 0, order_retries = 0, committed = 0, aborted = 0;
};

/// An in-memory TransactionDB holding tables of `specs` (record_words words per record).
class RocksPeer {
 public:
  /// Opens an empty database; nullptr and *err on failure. `memtable_bytes` bounds the memtable
  /// (it should exceed the loaded data plus what the measured epochs insert).
  /// `hash_memtable`: the hash of skiplists (point access only), else RocksDB's default skiplist.
  static std::unique_ptr<RocksPeer> open(const std::vector<TableSpec>& specs, std::size_t memtable_bytes,
                                         std::string* err, bool hash_memtable = true) {
    std::unique_ptr<RocksPeer> p(new RocksPeer(specs));
    p->env_.reset(rocksdb::NewMemEnv(rocksdb::Env::Default()));
    rocksdb::Options o;
    o.env = p->env_.get();
    o.create_if_missing = true;
    o.write_buffer_size = memtable_bytes;
    o.max_write_buffer_number = 4;
    o.disable_auto_compactions = true;
    o.compression = rocksdb::kNoCompression;
    o.avoid_flush_during_shutdown = true;
    if (hash_memtable) {
      std::uint64_t records = 0;
      for (const TableSpec& t : specs) records += t.capacity;
      o.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(9));
      o.memtable_factory.reset(rocksdb::NewHashSkipListRepFactory(static_cast<std::size_t>(records) + 1024));
      o.allow_concurrent_memtable_write = false;  // only the plain skiplist supports it
    }
    rocksdb::TransactionDBOptions to;
    rocksdb::TransactionDB* db = nullptr;
    const rocksdb::Status s = rocksdb::TransactionDB::Open(o, to, "/duet-epic-peer", &db);
    if (!s.ok()) {
      if (err) *err = "rocksdb open: " + s.ToString();
      return nullptr;
    }
    p->db_.reset(db);
    p->wo_.disableWAL = true;
    return p;
  }
  ~RocksPeer() { db_.reset(); }

  /// Bulk load (outside any txn, WAL off): key becomes `data` (record_words words).
  bool load(std::uint32_t table, std::uint64_t key, const std::uint32_t* data) {
    char k[9];
    encode(table, key, k);
    const rocksdb::Slice v(reinterpret_cast<const char*>(data), specs_[table].record_words * 4u);
    return db_->Put(wo_, rocksdb::Slice(k, 9), v).ok();
  }
  /// The committed record of a key (empty: absent).
  std::vector<std::uint32_t> get(std::uint32_t table, std::uint64_t key) const {
    char k[9];
    encode(table, key, k);
    std::string v;
    if (!db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(k, 9), &v).ok()) return {};
    std::vector<std::uint32_t> r(v.size() / 4);
    std::memcpy(r.data(), v.data(), r.size() * 4);
    return r;
  }
  const std::vector<TableSpec>& specs() const { return specs_; }

  static void encode(std::uint32_t table, std::uint64_t key, char* k) {
    k[0] = static_cast<char>(table);
    for (int i = 0; i < 8; ++i) k[1 + i] = static_cast<char>(key >> (56 - 8 * i));
  }

  /// Runs every txn of `b` on `threads` threads; per txn its outcome and kMaxOut outputs land in
  /// *outcome and *out. False and *err on a storage error other than a lock conflict.
  template <class Procs>
  bool run(const Batch& b, int threads, std::vector<std::uint32_t>* outcome, std::vector<std::uint32_t>* out,
           RocksStats* st, std::string* err);

  rocksdb::TransactionDB* db() { return db_.get(); }
  const rocksdb::WriteOptions& write_options() const { return wo_; }

 private:
  explicit RocksPeer(std::vector<TableSpec> specs) : specs_(std::move(specs)) {}
  std::vector<TableSpec> specs_;
  std::unique_ptr<rocksdb::Env> env_;
  std::unique_ptr<rocksdb::TransactionDB> db_;
  rocksdb::WriteOptions wo_;
};

/// The procedure context over one RocksDB transaction: the interface of CpuCtx and SerialCtx,
/// with the same rules (reads before writes, no abort after a write, each write once).
class RocksCtx {
 public:
  RocksCtx(RocksPeer& p, const Batch& b, std::size_t t, rocksdb::Transaction* txn, std::uint32_t* outcome,
           std::uint32_t* out)
      : p_(p), b_(b), t_(t), txn_(txn), ob_(b.op_begin[t]), nr_(b.nreads[t]),
        nw_(b.op_begin[t + 1] - b.op_begin[t] - b.nreads[t]), outcome_(outcome), outv_(out) {
    *outcome_ = kCommitted;
    for (std::uint32_t k = 0; k < kMaxOut; ++k) outv_[k] = 0;
    thread_local std::vector<std::vector<std::uint32_t>> bufs;
    if (bufs.size() < nr_) bufs.resize(nr_);
    bufs_ = bufs.data();
    if (nw_ == 0) {
      txn_->SetSnapshot();
      ro_.snapshot = txn_->GetSnapshot();
    }
  }
  std::uint32_t nreads() const { return nr_; }
  std::uint32_t nwrites() const { return nw_; }
  std::uint32_t nargs() const { return b_.arg_begin[t_ + 1] - b_.arg_begin[t_]; }
  std::uint32_t arg(std::uint32_t i) const { return i < nargs() ? b_.args[b_.arg_begin[t_] + i] : 0; }
  std::uint32_t attempt() const { return b_.attempt[t_]; }
  std::uint32_t read_words(std::uint32_t i) const { return i < nr_ ? p_.specs()[b_.keys[ob_ + i].table].record_words : 0; }
  std::uint32_t write_words(std::uint32_t i) const {
    return i < nw_ ? p_.specs()[b_.keys[ob_ + nr_ + i].table].record_words : 0;
  }
  const std::uint32_t* read(std::uint32_t i) {
    if (i >= nr_ || wrote_) return illegal(), nullptr;
    if (conflict_) return nullptr;
    const Key& k = b_.keys[ob_ + i];
    char kb[9];
    RocksPeer::encode(k.table, k.key, kb);
    rocksdb::PinnableSlice v;
    rocksdb::Status s;
    if (nw_ == 0) {
      s = txn_->Get(ro_, rocksdb::Slice(kb, 9), &v);
    } else {
      bool written = false;
      for (std::uint32_t j = 0; j < nw_ && !written; ++j) {
        const Key& w = b_.keys[ob_ + nr_ + j];
        written = w.table == k.table && w.key == k.key;
      }
      s = txn_->GetForUpdate(ro_, p_.db()->DefaultColumnFamily(), rocksdb::Slice(kb, 9), &v, /*exclusive=*/written);
    }
    if (s.IsNotFound()) return nullptr;
    if (!s.ok()) return fail(s), nullptr;
    std::vector<std::uint32_t>& d = bufs_[i];
    d.resize(v.size() / 4);
    std::memcpy(d.data(), v.data(), d.size() * 4);
    return d.data();
  }
  template <class F>
  void write(std::uint32_t i, F f) {
    if (!writable(i) || conflict_) return;
    const Key& k = b_.keys[ob_ + nr_ + i];
    buf_.resize(write_words(i));
    for (std::uint32_t w = 0; w < buf_.size(); ++w) buf_[w] = f(w);
    char kb[9];
    RocksPeer::encode(k.table, k.key, kb);
    const rocksdb::Status s =
        txn_->Put(rocksdb::Slice(kb, 9), rocksdb::Slice(reinterpret_cast<const char*>(buf_.data()), buf_.size() * 4));
    if (!s.ok()) fail(s);
  }
  void write_copy(std::uint32_t i, const std::uint32_t* src) {
    write(i, [src](std::uint32_t w) { return src[w]; });
  }
  void remove(std::uint32_t i) {
    if (!writable(i) || conflict_) return;
    const Key& k = b_.keys[ob_ + nr_ + i];
    char kb[9];
    RocksPeer::encode(k.table, k.key, kb);
    const rocksdb::Status s = txn_->Delete(rocksdb::Slice(kb, 9));
    if (!s.ok()) fail(s);
  }
  void abort(std::uint32_t reason) { stop(kAborted, reason); }
  void rerun() { stop(kRerun, 0); }
  void out(std::uint32_t k, std::uint32_t v) {
    if (k < kMaxOut) outv_[k] = v;
  }
  bool stopped() const { return aborted_; }
  void set_outcome(std::uint32_t o) { *outcome_ = o; aborted_ = true; }
  /// A lock timeout or deadlock happened: the txn must be rolled back and retried.
  bool conflict() const { return conflict_; }
  /// Another storage error (the run fails), or "".
  const std::string& error() const { return error_; }

 private:
  void fail(const rocksdb::Status& s) {
    conflict_ = true;
    if (!s.IsBusy() && !s.IsTimedOut() && !s.IsTryAgain()) error_ = s.ToString();
  }
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
    *outcome_ = o;
    out(0, reason);
  }
  RocksPeer& p_;
  const Batch& b_;
  std::size_t t_;
  rocksdb::Transaction* txn_;
  rocksdb::ReadOptions ro_;
  std::uint32_t ob_, nr_, nw_;
  std::uint32_t* outcome_;
  std::uint32_t* outv_;
  std::uint64_t filled_ = 0;
  bool wrote_ = false, aborted_ = false, conflict_ = false;
  std::string error_;
  std::vector<std::uint32_t> buf_;
  std::vector<std::uint32_t>* bufs_ = nullptr;
};

template <class Procs>
bool RocksPeer::run(const Batch& b, int threads, std::vector<std::uint32_t>* outcome, std::vector<std::uint32_t>* out,
                    RocksStats* st, std::string* err) {
  outcome->assign(b.size(), 0);
  out->assign(b.size() * kMaxOut, 0);
  std::atomic<std::uint32_t> next{0};
  std::atomic<std::uint64_t> retries{0}, order_retries{0}, committed{0}, aborted{0};
  // done[t]: txn t finished for good; `low`: every txn below it is done (advanced lazily).
  std::vector<std::atomic<std::uint8_t>> done(b.size());
  std::atomic<std::uint32_t> low{0};
  auto all_before_done = [&](std::uint32_t t) {
    for (;;) {
      std::uint32_t w = low.load(std::memory_order_acquire);
      if (w >= t) return true;
      if (!done[w].load(std::memory_order_acquire)) return false;
      low.compare_exchange_strong(w, w + 1, std::memory_order_acq_rel);
    }
  };
  std::atomic<bool> failed{false};
  std::string first_error;
  std::atomic_flag error_set = ATOMIC_FLAG_INIT;
  auto work = [&] {
    rocksdb::TransactionOptions to;
    to.deadlock_detect = true;
    to.lock_timeout = 1000;  // ms; a timeout retries the txn
    rocksdb::Transaction* txn = nullptr;
    std::uint64_t my_retries = 0, my_order_retries = 0, my_committed = 0, my_aborted = 0;
    for (;;) {
      const std::uint32_t t = next.fetch_add(1, std::memory_order_relaxed);
      if (t >= b.size() || failed.load(std::memory_order_relaxed)) break;
      for (;;) {
        txn = db_->BeginTransaction(wo_, to, txn);
        RocksCtx c(*this, b, t, txn, outcome->data() + t, out->data() + static_cast<std::size_t>(t) * kMaxOut);
        if (!Procs::dispatch(b.proc[t], c)) c.set_outcome(kUnknownProc);
        if (!c.error().empty()) {
          txn->Rollback();
          if (!error_set.test_and_set()) first_error = "txn " + std::to_string(t) + ": " + c.error();
          failed = true;
          break;
        }
        if (c.conflict()) {
          txn->Rollback();
          ++my_retries;
          continue;
        }
        if ((*outcome)[t] == kRerun && !all_before_done(t)) {
          txn->Rollback();
          ++my_order_retries;
          std::this_thread::yield();
          continue;
        }
        if ((*outcome)[t] != kCommitted) {
          txn->Rollback();
          ++my_aborted;
          break;
        }
        const rocksdb::Status s = txn->Commit();
        if (s.ok()) {
          ++my_committed;
          break;
        }
        txn->Rollback();
        if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) {
          ++my_retries;
          continue;
        }
        if (!error_set.test_and_set()) first_error = "txn " + std::to_string(t) + " commit: " + s.ToString();
        failed = true;
        break;
      }
      done[t].store(1, std::memory_order_release);
    }
    delete txn;
    retries += my_retries, order_retries += my_order_retries, committed += my_committed, aborted += my_aborted;
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int i = 1; i < threads; ++i) pool.emplace_back(work);
    work();
    for (auto& th : pool) th.join();
  }
  if (st) st->retries = retries, st->order_retries = order_retries, st->committed = committed, st->aborted = aborted;
  if (failed) {
    if (err) *err = first_error;
    return false;
  }
  return true;
}

}  // namespace duet::batch::epic::peer
