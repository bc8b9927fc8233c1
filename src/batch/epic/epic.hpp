// Epic: deterministic multi-version epochs (Qian & Goel, OSDI '24), the engine core.
//
// An epoch is a list of transactions in serial order. Each names a stored procedure, its read keys,
// its write keys and its arguments. Planning (Alg. 2-4) turns the declared keys into one exact
// storage location per operation, so execution never searches versions:
//   indexing    keys -> record ids, insert-first (missing write keys get ids from a FIFO free ring)
//   planning    ops packed in 64 bits, stable-sorted by record, exclusive segmented prefix and
//               postfix write counts, op classes, an exclusive global scan over temp writes
//   execution   reads spin only on their one version's eid; writes store data, then the eid
//   end         records whose last version this epoch is invalid are freed (deleted-bit scan)
// Planning has a CPU twin (plan_cpu) and a GPU version (gpu.hpp); their plans are equal bit for bit.
//
// Decisions (docs/epic.md):
//   op word      bits 63-32 global record id, 31-12 txn index (2^20 txns per epoch),
//                bit 11 write flag, 10-0 op index within the txn (2^11 ops per txn)
//   slot word    (eid << 1) | valid, 32 bits; a record's two slot words share one 64-bit word that
//                is read with one load. eid is 31 bits; bulk load writes slot 0 with eid 1, epochs
//                start at 2, so no tie is possible after load.
//   locations    kPrev, kCurr or a scratchpad index; every write also gets a copy-from location
//                (the previous version), used when the procedure leaves the slot unwritten (abort).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cods/hd.hpp"
#include "duet/batch.hpp"

namespace duet::batch::epic {

inline constexpr std::uint32_t kPrev = 0xFFFFFFFFu;     ///< read the version as of the epoch's start
inline constexpr std::uint32_t kCurr = 0xFFFFFFFEu;     ///< the record's epoch-final version
inline constexpr std::uint32_t kInvalid = 0xFFFFFFFFu;  ///< record id of a key that is not present
inline constexpr std::uint32_t kAnyPart = 0xFFFFFFFFu;  ///< a txn submitted without a partition hint
inline constexpr std::uint32_t kMaxTxns = 1u << 20;     ///< txns per epoch (20 bits in the op word)
inline constexpr std::uint32_t kMaxOps = 1u << 11;      ///< ops per txn (11 bits in the op word)
inline constexpr std::uint32_t kMaxWrites = 64;         ///< writes per txn (one 64-bit fill mask)
inline constexpr std::uint32_t kMaxOut = 4;             ///< output words per txn
inline constexpr std::uint32_t kMaxEid = 0x7FFFFFFFu;   ///< 31-bit epoch ids

/// Packs one operation (Alg. 2, step 1). `global` is the record's global id (table base + id).
DUET_HD inline std::uint64_t pack_op(std::uint32_t global, std::uint32_t txn, bool write, std::uint32_t idx) {
  return (static_cast<std::uint64_t>(global) << 32) | (static_cast<std::uint64_t>(txn) << 12) |
         (static_cast<std::uint64_t>(write) << 11) | idx;
}
DUET_HD inline std::uint32_t op_record(std::uint64_t op) { return static_cast<std::uint32_t>(op >> 32); }
DUET_HD inline std::uint32_t op_txn(std::uint64_t op) { return static_cast<std::uint32_t>(op >> 12) & 0xFFFFFu; }
DUET_HD inline bool op_is_write(std::uint64_t op) { return (op >> 11) & 1u; }
DUET_HD inline std::uint32_t op_index(std::uint64_t op) { return static_cast<std::uint32_t>(op) & 0x7FFu; }

/// Op classes (Alg. 3).
enum OpType : std::uint8_t { kPrevRead = 0, kCurrRead = 1, kTempRead = 2, kCurrWrite = 3, kTempWrite = 4 };

/// Alg. 3: the class of an op from its exclusive write counts before and after it in its record.
DUET_HD inline OpType classify(bool write, std::uint32_t writes_before, std::uint32_t writes_after) {
  if (write) return writes_after == 0 ? kCurrWrite : kTempWrite;
  if (writes_before == 0) return kPrevRead;
  return writes_after == 0 ? kCurrRead : kTempRead;
}

/// Alg. 4: the op's location, and for a write the location of the version before it (copy-from).
DUET_HD inline std::uint32_t location(OpType t, std::uint32_t tw_before) {
  switch (t) {
    case kPrevRead: return kPrev;
    case kCurrRead:
    case kCurrWrite: return kCurr;
    case kTempWrite: return tw_before;
    default: return tw_before - 1;  // kTempRead: the nearest preceding temp write of this record
  }
}
DUET_HD inline std::uint32_t copy_location(bool write, std::uint32_t writes_before, std::uint32_t tw_before) {
  if (!write) return kPrev;
  return writes_before == 0 ? kPrev : tw_before - 1;
}

/// Alg. 1: which of a record's two slots is prev and which is curr in epoch `eid`, from the
/// 64-bit word holding both slot words (slot 0 in the low half). Returns the curr slot (0 or 1).
DUET_HD inline int curr_slot(std::uint64_t both, std::uint32_t eid) {
  const std::uint32_t e0 = static_cast<std::uint32_t>(both) >> 1;
  const std::uint32_t e1 = static_cast<std::uint32_t>(both >> 32) >> 1;
  if (e0 == eid) return 0;
  if (e1 == eid) return 1;
  return e0 > e1 ? 1 : 0;
}
DUET_HD inline std::uint32_t slot_word(std::uint64_t both, int slot) {
  return static_cast<std::uint32_t>(slot ? both >> 32 : both);
}
/// The slot holding a record's committed version between epochs (the one with the larger eid;
/// both 0: never written), or -1 when that version is not valid (absent or deleted).
DUET_HD inline int committed_slot(std::uint64_t both) {
  const int s = (slot_word(both, 0) >> 1) >= (slot_word(both, 1) >> 1) ? 0 : 1;
  return (slot_word(both, s) & 1u) ? s : -1;
}
DUET_HD inline std::uint64_t with_slot_word(std::uint64_t both, int slot, std::uint32_t w) {
  return slot ? ((both & 0xFFFFFFFFull) | (static_cast<std::uint64_t>(w) << 32))
              : ((both & ~0xFFFFFFFFull) | w);
}

/// Outcome of one transaction.
enum Outcome : std::uint32_t {
  kCommitted = 0,
  kAborted = 1,       ///< the procedure aborted before its first write; its slots hold copies
  kRerun = 2,         ///< aborted because its declared keys were wrong; runs again next epoch
  kIllegal = 3,       ///< a procedure broke the rules (abort or read after a write, bad index)
  kUnknownProc = 4,   ///< no procedure with that id
};

/// One table: fixed-size records of `record_words` 32-bit words, ids 0..capacity-1. A direct
/// table's keys are its record ids (no index; bulk-loaded); an indexed table maps 64-bit keys to
/// ids through a hash index with a FIFO free ring and back-links, and frees deleted records.
/// The public API's type (duet::EpicTable), so the engine takes a user's tables as they are.
using TableSpec = ::duet::EpicTable;

/// A key as a procedure declares it: a table and a key (duet::EpicKey).
using Key = ::duet::EpicKey;

/// The transactions of one epoch, in serial order, flattened. Reads come before writes in each
/// txn's key list. Build with add().
struct Batch {
  std::vector<std::uint32_t> proc;
  std::vector<std::uint32_t> op_begin{0};   ///< txn t's keys are [op_begin[t], op_begin[t+1])
  std::vector<std::uint16_t> nreads;
  std::vector<Key> keys;
  std::vector<std::uint32_t> arg_begin{0};
  std::vector<std::uint32_t> args;
  std::vector<std::uint32_t> attempt;       ///< 0 on first submission, +1 per rerun
  std::vector<std::uint64_t> tag;           ///< the submitter's id for the txn (results keep it)
  /// The txn's partition (kAnyPart: none given), a hint for CPU execution only: txns of one
  /// partition go to one thread's queue (see deal() in exec_cpu.hpp). TPC-C gives the home
  /// warehouse. Results never depend on it.
  std::vector<std::uint32_t> part;
  /// 1 where the entry is a later piece of the txn before it (add_piece: piece splitting), else
  /// 0. The pieces of one txn sit at consecutive serial positions and are planned and executed
  /// each as a txn of its own, so no piece waits for another's reads; fold_pieces() gives the
  /// txn's outcome and outputs.
  std::vector<std::uint8_t> piece;

  /// Entries (txns and pieces), which is what the engine plans and executes.
  std::size_t size() const { return proc.size(); }
  /// Txns: entries that are not later pieces. Linear in size().
  std::size_t txn_count() const;
  void clear();
  /// Appends one txn (tagged `tg`, on attempt `att`, in partition `partition`: see `part`);
  /// returns false (nothing added) when it exceeds kMaxOps or kMaxWrites, or declares the same
  /// write key twice.
  bool add(std::uint32_t p, std::span<const Key> reads, std::span<const Key> writes, std::span<const std::uint32_t> a,
           std::uint64_t tg = 0, std::uint32_t att = 0, std::uint32_t partition = kAnyPart);
  bool add(std::uint32_t p, const std::vector<Key>& reads, const std::vector<Key>& writes,
           const std::vector<std::uint32_t>& a, std::uint64_t tg = 0, std::uint32_t att = 0,
           std::uint32_t partition = kAnyPart) {
    return add(p, std::span<const Key>(reads), std::span<const Key>(writes), std::span<const std::uint32_t>(a), tg, att,
               partition);
  }
  /// Appends a later piece of the txn added last, with its tag, attempt and partition. Piece
  /// splitting is for a procedure whose txn divides into pieces that are independent: a piece's
  /// writes depend only on its own reads and args, no piece reads what an earlier piece of the
  /// same txn writes (the whole txn's reads see the state before it; put pieces that only read
  /// first), no piece aborts or reruns, and each output word of the txn is the sum (mod 2^32) of
  /// that word over its pieces. Then the result equals the whole txn's, and one piece's chain of
  /// versions never waits on another's (Epic section 4.5). The engine does not check this; it is
  /// the submitter's promise. False (nothing added) as add(), or when the batch is empty.
  bool add_piece(std::uint32_t p, std::span<const Key> reads, std::span<const Key> writes,
                 std::span<const std::uint32_t> a);
  bool add_piece(std::uint32_t p, const std::vector<Key>& reads, const std::vector<Key>& writes,
                 const std::vector<std::uint32_t>& a) {
    return add_piece(p, std::span<const Key>(reads), std::span<const Key>(writes), std::span<const std::uint32_t>(a));
  }
  /// Appends txn t of `other` (a piece stays a piece).
  void add_from(const Batch& other, std::size_t t, std::uint32_t att);
  /// Appends the first n txns of `other` (n <= other.size()), each on attempt `att`: the same as
  /// add_from for t = 0 .. n - 1, at the cost of a copy of each array.
  void append_first(const Batch& other, std::size_t n, std::uint32_t att);
  /// Removes the last txn (no-op on an empty batch).
  void pop_back();
};

/// Per txn of `b` (entries that are not later pieces), its outcome and outputs from the
/// per-entry `outcome` and `out` (kMaxOut words per entry) of an epoch that ran `b`: a txn's
/// outcome is its first piece's outcome other than kCommitted (kCommitted if none), and output
/// word k the sum of its pieces' word k. A batch without pieces comes back as it went in.
void fold_pieces(const Batch& b, const std::vector<std::uint32_t>& outcome, const std::vector<std::uint32_t>& out,
                 std::vector<std::uint32_t>* txn_outcome, std::vector<std::uint32_t>* txn_out);

/// The declared shape of one call: how many read keys, write keys and args it has, the args, and
/// the keys with the tables they name. A procedure set's shape_error() checks it before the call
/// is queued.
struct CallShape {
  std::uint32_t reads = 0, writes = 0;
  std::span<const std::uint32_t> args;
  /// The call's keys, reads first, and the database's tables, which every key names
  /// (Engine::check_txn checks the keys first). Both empty for a check of the counts alone.
  std::span<const Key> keys;
  std::span<const TableSpec> tables;
  std::uint32_t arg(std::size_t i) const { return i < args.size() ? args[i] : 0; }
  /// The table of read i or write j, or nullptr when the shape has no keys.
  const TableSpec* read_table(std::uint32_t i) const { return table_of(i); }
  const TableSpec* write_table(std::uint32_t j) const { return table_of(reads + j); }

 private:
  const TableSpec* table_of(std::uint32_t op) const {
    return op < keys.size() && keys[op].table < tables.size() ? &tables[keys[op].table] : nullptr;
  }
};

/// "" if `got` has `reads` reads, `writes` writes and `args` args, else the reason naming the
/// procedure `name` and both shapes (for a procedure set's shape_error()).
std::string shape_mismatch(const char* name, std::uint32_t reads, std::uint32_t writes, std::uint32_t args,
                           const CallShape& got);

/// The record widths a procedure relies on, checked against the tables a call names, so that a
/// procedure indexing fixed words of its records never reads past one: a read it indexes up to
/// some word, and a write it fills word by word from a read (a copy-update). error() is the
/// first rule the call breaks, naming the procedure, the op and both tables, or "" (also when
/// the shape has no keys). For a procedure set's shape_error(); costs a few compares per rule.
class WidthCheck {
 public:
  WidthCheck(const char* name, const CallShape& call) : name_(name), call_(call) {}
  /// Read i's records have at least `words` words (the procedure reads word words - 1).
  WidthCheck& read_at_least(std::uint32_t i, std::uint32_t words);
  /// Write j is filled word by word from read i: read i's records are at least as wide as write j's.
  WidthCheck& copies(std::uint32_t j, std::uint32_t i);
  const std::string& error() const { return err_; }

 private:
  const char* name_;
  const CallShape& call_;
  std::string err_;
};

/// The indexed form of a batch: per op its table and record id (kInvalid for a missing read key)
/// and its global id (table base + id; kInvalid stays kInvalid), which planning sorts by.
struct Indexed {
  std::vector<std::uint8_t> table;
  std::vector<std::uint32_t> rid;
  std::vector<std::uint32_t> global;
};

/// A plan: per op its location and (writes) copy-from location, and the scratchpad size.
struct Plan {
  std::vector<std::uint32_t> loc;
  std::vector<std::uint32_t> copy;
  std::uint32_t temp_count = 0;
  bool operator==(const Plan& o) const { return loc == o.loc && copy == o.copy && temp_count == o.temp_count; }
};

/// Planted bugs for the negative controls (every field false in production).
struct Faults {
  bool inclusive_scan = false;      ///< writes_before counted inclusively
  bool write_before_read = false;   ///< a txn's writes submitted before its reads
  bool skip_abort_fill = false;     ///< aborted txns leave their slots unfilled
  bool eid_before_data = false;     ///< writers publish the eid, then store the data
  bool reversed_queues = false;     ///< each dealt CPU queue runs its txns last first
};

/// Alg. 2-4 on the CPU: the plan for `n` txns whose ops are `global` (op_begin/nreads from the
/// batch). Deterministic; the GPU planner's output equals it. Batches of 65536 ops or more plan on
/// `threads` threads, with the same result.
void plan_cpu(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, const Faults& f = {},
              int threads = 1);

}  // namespace duet::batch::epic
