// Epic's host tables: two-slot records, the per-record deleted bit, the key index with its FIFO
// free ring and back-links (insert-first indexing), bulk load, committed reads and end-of-epoch GC.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

/// One table's storage. `slots[r]` holds record r's two slot words (slot 0 low); `data` holds
/// slot s of record r at ((r * 2 + s) * record_words).
struct TableStore {
  TableSpec spec;
  std::uint32_t base = 0;                      ///< first global id of this table
  std::vector<std::uint64_t> slots;
  std::vector<std::uint32_t> data;
  std::vector<std::uint8_t> deleted;           ///< 1: the record ends this epoch invalid
  std::unordered_map<std::uint64_t, std::uint32_t> index;  ///< indexed tables only
  std::vector<std::uint64_t> backlink;         ///< record id -> key (indexed tables)
  std::deque<std::uint32_t> free_ring;         ///< free record ids, FIFO

  /// Host bytes one record of a table takes as Database allocates it: its two data slots, slot
  /// word and deleted flag, and, indexed, its back-link, free-ring entry and index entry (about
  /// 48 bytes with the hash map's node). What the memory budget is charged per record.
  static std::uint64_t bytes_per_record(std::uint32_t record_words, bool indexed) {
    return 2ull * record_words * sizeof(std::uint32_t) + sizeof(std::uint64_t) + sizeof(std::uint8_t) +
           (indexed ? 48 : 0);
  }
};

/// The scratchpad: one {slot word, data} version per temp write, sized to the largest record.
/// Reused each epoch without clearing (stale slot words carry older eids).
struct Scratch {
  std::uint32_t slot_words = 0;
  std::vector<std::uint32_t> word;
  std::vector<std::uint32_t> data;
  void reserve(std::uint32_t temps);
};

/// Per-txn results of an epoch: outcome (Outcome) and kMaxOut output words.
struct Results {
  std::vector<std::uint32_t> outcome;
  std::vector<std::uint32_t> out;
  void resize(std::size_t n) {
    outcome.assign(n, kCommitted);
    out.assign(n * kMaxOut, 0);
  }
};

/// The host database. Not thread-safe between epochs; an epoch's execution touches it from many
/// threads through the executor only.
class Database {
 public:
  /// Tables in order; table ids are their positions. Fails (error()) on a total capacity over
  /// 2^32 - 2 or a zero-sized record.
  explicit Database(std::vector<TableSpec> specs) : Database(std::move(specs), false) {}
  /// With `index_only`, no record storage is allocated (slots, data and deleted stay empty): a
  /// shadow of another database's index, for a planner that indexes apart from the tables
  /// (HostPlanner). Only load() (which then records the key alone), index(), lookup(), release()
  /// and the index fields may then be used.
  Database(std::vector<TableSpec> specs, bool index_only);
  const std::string& error() const { return error_; }

  std::size_t num_tables() const { return tables_.size(); }
  /// The tables' specs, in table order.
  std::span<const TableSpec> specs() const { return specs_; }
  TableStore& table(std::uint32_t t) { return tables_[t]; }
  const TableStore& table(std::uint32_t t) const { return tables_[t]; }
  std::uint32_t max_words() const { return max_words_; }
  /// The eid the next epoch runs with (starts at 2; bulk load writes eid 1).
  std::uint32_t eid() const { return eid_; }

  /// Bulk load before the first epoch: record `key` becomes valid with `data` (record_words
  /// words). Returns false (nothing changed) on an unknown table, a direct key out of range or a
  /// full indexed table.
  bool load(std::uint32_t table, std::uint64_t key, const std::uint32_t* data);

  /// Checks a txn's keys: known tables, direct keys in range. Returns "" or the reason.
  std::string check_keys(const Batch& b, std::size_t t) const;

  /// Insert-first indexing: missing write keys of indexed tables get ids from the free ring (in
  /// op order, so deterministically), then every key is looked up; a missing read key gets
  /// kInvalid. Returns false (nothing inserted) when an indexed table runs out of ids. The
  /// lookups run on `threads` threads (inserts on the calling one); the result does not depend on it.
  bool index(const Batch& b, Indexed* out, std::string* err, int threads = 1);

  /// The committed value of a key after the last finished epoch, or nullptr if absent.
  const std::uint32_t* get(std::uint32_t table, std::uint64_t key) const;
  /// The committed value of record id `r` after the last finished epoch, or nullptr if absent
  /// (or `r` is kInvalid or out of the table). For callers whose index lives elsewhere.
  const std::uint32_t* get_at(std::uint32_t table, std::uint32_t r) const;
  /// The record id a key maps to, or kInvalid.
  std::uint32_t lookup(std::uint32_t table, std::uint64_t key) const;

  /// Ends the epoch: records whose deleted bit is set are freed (ids back to the ring in id
  /// order, index entries removed through the back-link); the eid advances.
  void end_epoch();
  /// Frees ids given by a device deleted-bit scan (GPU placement), then advances the eid.
  void end_epoch_with(const std::vector<std::vector<std::uint32_t>>& freed);
  /// Ends the epoch when the index lives elsewhere (Epic-CPU with device indexing): collects, per
  /// table, the ids whose deleted bit is set, in id order, into *freed and clears the bits; the
  /// index, ring and back-links are left alone (the index's owner frees the ids); the eid advances.
  void end_epoch_collect(std::vector<std::vector<std::uint32_t>>* freed);
  /// Makes this database's records, index and eid equal `from`'s, whose tables must have the
  /// same specs (false, nothing changed, otherwise). The specs are not written, so threads that
  /// check keys against them (submitters) may run meanwhile. Costs a copy of every table.
  bool copy_contents_from(const Database& from);
  /// Frees ids in the index only: per table, in the given order, the key is erased through the
  /// back-link and the id appended to the ring. The eid does not change.
  void release(const std::vector<std::vector<std::uint32_t>>& freed);

 private:
  std::vector<TableStore> tables_;
  std::vector<TableSpec> specs_;
  /// index(): per range of txns, per table, the missing write keys (kept: reused every epoch).
  std::vector<std::vector<std::vector<std::uint64_t>>> missing_;
  std::uint32_t max_words_ = 0;
  std::uint32_t eid_ = 2;
  std::string error_;
};

}  // namespace duet::batch::epic
