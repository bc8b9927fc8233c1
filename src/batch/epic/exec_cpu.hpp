// Epic's execution on CPU threads (Alg. 5 and Alg. 1): the procedure context and the executor.
//
// Procedures are types with `template <class Ctx> DUET_HD static void run(Ctx& c)`, collected in
// a procedure set: `template <class Ctx> DUET_HD static bool dispatch(std::uint32_t proc, Ctx& c)`
// (false: unknown id). The same procedure source runs here and on the GPU (gpu_exec.cuh). A
// procedure reads, decides (it may abort), then writes; a read after its first write, or an abort
// after it, makes the txn kIllegal. Every declared write the procedure leaves unwritten (all of
// them when it aborts) is filled with a copy of the record's previous version, so no reader waits
// forever and the state equals serial execution in which the txn did not write.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "batch/epic/database.hpp"
#include "batch/epic/pool.hpp"

namespace duet::batch::epic {

/// One table as execution sees it (host or device pointers). Padded to 64 bytes: in the device's
/// array (256-byte aligned) a lane's copy of one touches two sectors of one line, never sectors
/// of two lines, as 40 bytes at a 40-byte stride would. (Padded, not alignas(64): that would
/// align every copy on a thread's stack too, 120 more bytes of the TPC-C kernel's frame.)
struct TableView {
  std::uint64_t* slots = nullptr;
  std::uint32_t* data = nullptr;
  std::uint8_t* deleted = nullptr;
  std::uint32_t words = 0;
  std::uint32_t indexed = 0;
  /// GPU only, one-word tables: per record two words, slot s at [2r + s], each (data << 32) |
  /// slot word, so one 64-bit store publishes a version and one load reads it (slots and data
  /// are then unused).
  std::uint64_t* pairs = nullptr;
  std::uint32_t padding[6] = {};
};
static_assert(sizeof(TableView) == 64, "TableView is one 64-byte piece of a cache line");

/// Everything one epoch's execution reads and writes, as raw pointers (host or device).
struct EpochView {
  const TableView* tables = nullptr;
  const std::uint32_t* proc = nullptr;
  const std::uint32_t* op_begin = nullptr;
  const std::uint16_t* nreads = nullptr;
  const std::uint32_t* arg_begin = nullptr;
  const std::uint32_t* args = nullptr;
  const std::uint32_t* attempt = nullptr;
  const std::uint32_t* part = nullptr;  ///< CPU only, optional: per txn its partition hint or kAnyPart
  const std::uint8_t* op_table = nullptr;
  const std::uint32_t* rid = nullptr;
  const std::uint32_t* loc = nullptr;
  const std::uint32_t* copy = nullptr;
  std::uint32_t* scratch_word = nullptr;
  std::uint32_t* scratch_data = nullptr;
  std::uint32_t slot_words = 0;
  std::uint32_t eid = 0;
  std::uint32_t n = 0;
  std::uint32_t* outcome = nullptr;
  std::uint32_t* out = nullptr;
  std::uint32_t skip_abort_fill = 0;  ///< negative control
  std::uint32_t eid_before_data = 0;  ///< negative control
  /// Watchdog: a wait longer than this (ns; 0: none) stores the waiting txn + 1 in *stuck and
  /// gives up; every later wait gives up at once. The epoch then fails (a planning bug).
  std::uint64_t watchdog_ns = 0;
  std::uint32_t* stuck = nullptr;
  std::uint32_t max_backoff_ns = 4096;  ///< GPU only: the longest sleep between two polls
  /// GPU only: a txn's lanes wait for all its reads at once before its procedure runs (0: lane 0
  /// waits for each read when the procedure asks for it).
  std::uint32_t gather_reads = 1;
  /// CPU only, optional: execute_cpu adds here the nanoseconds its threads spent in long waits
  /// for versions (waits that yielded at least once, timed from their first yield).
  std::uint64_t* waited = nullptr;
  /// GPU only, optional (DUET_EPIC_EXEC_TIMES): four globaltimer stamps (ns) per txn: start,
  /// reads gathered, first write published (0 if none), end.
  std::uint64_t* exec_times = nullptr;
};

inline void cpu_relax(unsigned& spins) {
#if defined(__x86_64__)
  _mm_pause();
#endif
  if (++spins % 256 == 0) std::this_thread::yield();
}

/// One step of a wait: relaxes, and returns false once the watchdog fired (for this or any txn).
inline bool wait_step(const EpochView& v, std::uint32_t t, unsigned& spins,
                      std::chrono::steady_clock::time_point& start) {
  cpu_relax(spins);
  if (spins == 256) start = std::chrono::steady_clock::now();  // a long wait: timed from here
  if (!v.stuck) return true;
  std::atomic_ref<std::uint32_t> st(*v.stuck);
  if (st.load(std::memory_order_relaxed)) return false;
  if (spins % 1024 != 0 || !v.watchdog_ns) return true;
  const auto now = std::chrono::steady_clock::now();
  if (static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count()) < v.watchdog_ns)
    return true;
  std::uint32_t zero = 0;
  st.compare_exchange_strong(zero, t + 1);
  return false;
}

/// The CPU procedure context of txn `t`.
class CpuCtx {
 public:
  CpuCtx(const EpochView& v, std::uint32_t t)
      : v_(v), t_(t), ob_(v.op_begin[t]), nr_(v.nreads[t]), nw_(v.op_begin[t + 1] - v.op_begin[t] - v.nreads[t]),
        ab_(v.arg_begin[t]), na_(v.arg_begin[t + 1] - v.arg_begin[t]) {}

  std::uint32_t nreads() const { return nr_; }
  std::uint32_t nwrites() const { return nw_; }
  std::uint32_t nargs() const { return na_; }
  std::uint32_t arg(std::uint32_t i) const { return i < na_ ? v_.args[ab_ + i] : 0; }
  std::uint32_t attempt() const { return v_.attempt[t_]; }
  std::uint32_t read_words(std::uint32_t i) const { return i < nr_ ? v_.tables[v_.op_table[ob_ + i]].words : 0; }
  std::uint32_t write_words(std::uint32_t i) const { return i < nw_ ? v_.tables[v_.op_table[ob_ + nr_ + i]].words : 0; }

  /// Read i's record (record_words words), or nullptr if absent.
  const std::uint32_t* read(std::uint32_t i) {
    if (i >= nr_ || wrote_) return illegal(), nullptr;
    const std::uint32_t op = ob_ + i;
    if (v_.rid[op] == kInvalid) return nullptr;
    bool valid;
    const std::uint32_t* d = resolve(op, v_.loc[op], &valid);
    return valid ? d : nullptr;
  }
  /// Write i: word w of the new record is f(w). Sets valid (an insert or an update).
  template <class F>
  void write(std::uint32_t i, F f) {
    if (!writable(i)) return;
    put(i, 1, f);
  }
  void write_copy(std::uint32_t i, const std::uint32_t* src) {
    write(i, [src](std::uint32_t w) { return src[w]; });
  }
  /// Write i deletes the record (clears valid).
  void remove(std::uint32_t i) {
    if (!writable(i)) return;
    put(i, 0, [](std::uint32_t) { return 0u; });
  }
  void abort(std::uint32_t reason) { stop(kAborted, reason); }
  /// Aborts because the declared keys were wrong: the txn runs again next epoch.
  void rerun() { stop(kRerun, 0); }
  void out(std::uint32_t k, std::uint32_t val) {
    if (k < kMaxOut) v_.out[static_cast<std::size_t>(t_) * kMaxOut + k] = val;
  }
  bool stopped() const { return aborted_; }
  /// Nanoseconds this txn spent in long waits (see EpochView::waited) so far.
  std::uint64_t waited() const { return waited_; }

  /// After the procedure: fills every unwritten slot from its copy-from location.
  void finish() {
    if (!v_.skip_abort_fill || !aborted_)
      for (std::uint32_t i = 0; i < nw_; ++i) {
        if (filled_ >> i & 1u) continue;
        const std::uint32_t op = ob_ + nr_ + i;
        bool valid;
        const std::uint32_t* src = resolve(op, v_.copy[op], &valid);
        put(i, valid ? 1u : 0u, [src](std::uint32_t w) { return src[w]; });
      }
    v_.outcome[t_] = outcome_;
  }
  void set_outcome(std::uint32_t o) { outcome_ = o; aborted_ = true; }

 private:
  void illegal() { outcome_ = kIllegal; }
  bool writable(std::uint32_t i) {
    if (aborted_ || i >= nw_ || (filled_ >> i & 1u)) return illegal(), false;
    wrote_ = true;
    return true;
  }
  void stop(std::uint32_t o, std::uint32_t reason) {
    if (wrote_) return illegal();
    if (aborted_) return;
    aborted_ = true;
    if (outcome_ == kIllegal) return;  // a rule broken earlier (a bad index) stays the outcome
    outcome_ = o;
    out(0, reason);
  }
  void count_wait(std::chrono::steady_clock::time_point start) {
    waited_ += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  }
  // The version at `loc` of op's record; waits for it unless loc is kPrev.
  const std::uint32_t* resolve(std::uint32_t op, std::uint32_t loc, bool* valid) {
    const TableView& tb = v_.tables[v_.op_table[op]];
    const std::uint32_t r = v_.rid[op];
    unsigned spins = 0;
    std::chrono::steady_clock::time_point start;
    if (loc != kPrev && loc != kCurr) {
      std::atomic_ref<std::uint32_t> w(v_.scratch_word[loc]);
      std::uint32_t x;
      while (((x = w.load(std::memory_order_acquire)) >> 1) != v_.eid)
        if (!wait_step(v_, t_, spins, start)) break;
      if (spins >= 256) count_wait(start);
      *valid = x & 1u;
      return v_.scratch_data + static_cast<std::size_t>(loc) * v_.slot_words;
    }
    std::atomic_ref<std::uint64_t> sw(tb.slots[r]);
    std::uint64_t both = sw.load(std::memory_order_acquire);
    const int cs = curr_slot(both, v_.eid);
    const int s = loc == kPrev ? 1 - cs : cs;
    if (loc == kCurr)
      while ((slot_word(both, s) >> 1) != v_.eid) {
        if (!wait_step(v_, t_, spins, start)) break;
        both = sw.load(std::memory_order_acquire);
      }
    if (spins >= 256) count_wait(start);
    *valid = slot_word(both, s) & 1u;
    return tb.data + (static_cast<std::size_t>(r) * 2 + s) * tb.words;
  }
  template <class F>
  void put(std::uint32_t i, std::uint32_t valid, F f) {
    const std::uint32_t op = ob_ + nr_ + i;
    const TableView& tb = v_.tables[v_.op_table[op]];
    const std::uint32_t r = v_.rid[op], loc = v_.loc[op], word = (v_.eid << 1) | valid;
    filled_ |= 1ull << i;
    if (loc == kCurr) {
      std::atomic_ref<std::uint64_t> sw(tb.slots[r]);
      const std::uint64_t both = sw.load(std::memory_order_relaxed);
      const int cs = curr_slot(both, v_.eid);
      std::uint32_t* dst = tb.data + (static_cast<std::size_t>(r) * 2 + cs) * tb.words;
      if (tb.indexed) tb.deleted[r] = valid ? 0 : 1;
      if (v_.eid_before_data) {  // planted: the eid first, and a pause that widens the window
        sw.store(with_slot_word(both, cs, word), std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      if (valid)
        for (std::uint32_t w = 0; w < tb.words; ++w) dst[w] = f(w);
      if (!v_.eid_before_data) sw.store(with_slot_word(both, cs, word), std::memory_order_release);
      return;
    }
    std::uint32_t* dst = v_.scratch_data + static_cast<std::size_t>(loc) * v_.slot_words;
    std::atomic_ref<std::uint32_t> sw(v_.scratch_word[loc]);
    if (v_.eid_before_data) {
      sw.store(word, std::memory_order_release);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (valid)
      for (std::uint32_t w = 0; w < tb.words; ++w) dst[w] = f(w);
    if (!v_.eid_before_data) sw.store(word, std::memory_order_release);
  }

  const EpochView& v_;
  std::uint32_t t_, ob_, nr_, nw_, ab_, na_;
  std::uint64_t filled_ = 0;
  std::uint64_t waited_ = 0;
  bool wrote_ = false, aborted_ = false;
  std::uint32_t outcome_ = kCommitted;
};

/// Runs one txn on the calling thread; returns the nanoseconds it spent in long waits.
template <class Procs>
std::uint64_t run_txn_cpu(const EpochView& v, std::uint32_t t) {
  CpuCtx c(v, t);
  if (!Procs::dispatch(v.proc[t], c)) c.set_outcome(kUnknownProc);
  c.finish();
  return c.waited();
}

/// How execute_cpu hands an epoch's txns to its threads: the public EpicExecOrder (kSerial: one
/// counter, in serial order; kPartitioned: one queue per thread, see deal; kAuto: kPartitioned
/// where the queues are even and few version reads cross them, else kSerial).
using ExecOrder = EpicExecOrder;

/// One queue of txns per thread, each in serial order, and what the dealing measured.
struct ExecQueues {
  std::vector<std::uint32_t> begin;  ///< threads + 1 offsets into txn (empty: serial order)
  std::vector<std::uint32_t> txn;
  double cross_share = 0;  ///< kAuto: sampled reads of temp versions whose writer is in another queue
  std::vector<std::uint8_t> queue_of, slot_queue;  // scratch, kept for the next epoch
  bool used() const { return !begin.empty(); }
};

/// Deals the epoch's txns into one queue per thread: txn t goes to queue part % threads, where
/// part is its partition hint (Batch::part) or, without one, the record of its first declared
/// key (t when that key names no record, or the txn has none). Txns of one partition (TPC-C: of
/// one home warehouse) then keep their chains of versions on one thread. For kAuto it also
/// measures, over the first 8192 txns, the share of reads of temp versions (scratchpad slots)
/// whose writer went to another queue, and deals only if the queues are within 1.25x of their
/// mean and that share is at most half of what serial order gives ((threads - 1) / threads).
/// Returns whether it dealt (q->used()); costs one pass over the txns and one over the sample's
/// ops. Below 256 txns per thread it never deals.
inline bool deal(const EpochView& v, std::uint32_t temp_count, int threads, ExecOrder order, ExecQueues* q) {
  q->begin.clear();
  q->cross_share = 0;
  if (order == ExecOrder::kSerial || threads < 2 || threads > 255 || v.n < 256u * static_cast<std::uint32_t>(threads))
    return false;
  const auto nt = static_cast<std::uint32_t>(threads);
  q->queue_of.resize(v.n);
  std::vector<std::uint32_t> count(nt + 1, 0);
  for (std::uint32_t t = 0; t < v.n; ++t) {
    std::uint32_t part = v.part ? v.part[t] : kAnyPart;
    if (part == kAnyPart) {
      const std::uint32_t ob = v.op_begin[t];
      part = ob < v.op_begin[t + 1] && v.rid[ob] != kInvalid ? v.rid[ob] : t;
    }
    const auto k = static_cast<std::uint8_t>(part % nt);
    q->queue_of[t] = k;
    ++count[k + 1];
  }
  const std::uint32_t longest = *std::max_element(count.begin() + 1, count.end());
  const double max_over_mean = static_cast<double>(longest) * nt / v.n;
  if (order == ExecOrder::kAuto) {
    const std::uint32_t sample = std::min<std::uint32_t>(v.n, 8192);
    q->slot_queue.assign(temp_count, 0);
    std::uint64_t reads = 0, cross = 0;
    for (std::uint32_t t = 0; t < sample; ++t) {
      const std::uint8_t mine = static_cast<std::uint8_t>(q->queue_of[t] + 1);
      const std::uint32_t ob = v.op_begin[t], mid = ob + v.nreads[t], oe = v.op_begin[t + 1];
      for (std::uint32_t op = ob; op < mid; ++op) {  // a txn reads before it writes
        const std::uint32_t loc = v.loc[op];
        if (loc == kPrev || loc == kCurr || loc >= temp_count) continue;
        ++reads;
        cross += q->slot_queue[loc] != mine;
      }
      for (std::uint32_t op = mid; op < oe; ++op)
        if (v.loc[op] < temp_count) q->slot_queue[v.loc[op]] = mine;
    }
    q->cross_share = reads ? static_cast<double>(cross) / static_cast<double>(reads) : 0.0;
    const double serial_share = static_cast<double>(nt - 1) / nt;
    if (max_over_mean > 1.25 || reads < 64 || q->cross_share > 0.5 * serial_share) return false;
  }
  for (std::uint32_t k = 0; k < nt; ++k) count[k + 1] += count[k];
  q->begin = count;
  q->txn.resize(v.n);
  for (std::uint32_t t = 0; t < v.n; ++t) q->txn[count[q->queue_of[t]]++] = t;
  return true;
}

/// Runs the epoch on `threads` CPU threads (the caller and the workers of its WorkPool).
/// Without queues (or !q->used()), txns are handed out in serial order from one counter: a txn
/// waits only for an earlier one, which a thread already holds. With them, each queue is a chunk
/// of the pool's job, run whole and in order by the thread that claims it (the caller claims the
/// next unclaimed queue when it finishes one; a txn waiting for one in a queue nobody has claimed
/// yet waits until the worker wakes and claims it). A txn then waits for an earlier one that is
/// held, or is next in a queue whose thread runs in order up to it: progress is guaranteed
/// either way. A thread that finishes its queue
/// does not take txns from a queue another thread holds: on a loaded machine, where that thread
/// may be descheduled, every txn taken from it would wait on the one before it, which is how
/// the counter's epochs collapse.
template <class Procs>
void execute_cpu(const EpochView& v, int threads, const ExecQueues* q = nullptr) {
  std::atomic<std::uint64_t> waited{0};
  if (threads <= 1 || v.n < 2) {
    std::uint64_t w = 0;
    for (std::uint32_t t = 0; t < v.n; ++t) w += run_txn_cpu<Procs>(v, t);
    waited = w;
  } else if (!q || !q->used()) {
    std::atomic<std::uint32_t> next{0};
    thread_pool(threads - 1).run(static_cast<std::size_t>(threads), [&](std::size_t) {
      std::uint64_t w = 0;
      for (std::uint32_t t; (t = next.fetch_add(1, std::memory_order_relaxed)) < v.n;) w += run_txn_cpu<Procs>(v, t);
      waited.fetch_add(w, std::memory_order_relaxed);
    });
  } else {
    thread_pool(threads - 1).run(static_cast<std::size_t>(threads), [&](std::size_t j) {
      std::uint64_t w = 0;
      for (std::uint32_t i = q->begin[j]; i < q->begin[j + 1]; ++i) w += run_txn_cpu<Procs>(v, q->txn[i]);
      waited.fetch_add(w, std::memory_order_relaxed);
    });
  }
  if (v.waited) std::atomic_ref<std::uint64_t>(*v.waited).fetch_add(waited.load(), std::memory_order_relaxed);
}

}  // namespace duet::batch::epic
