// The serial-equivalence checker for Epic: replays each epoch serially (serial.hpp: no indexing,
// planning or executor code; it includes none of the engine's headers) in the engine's order,
// reruns included, and compares every record (present or not, and its words), the index's
// bookkeeping, and every txn's tag, attempt, outcome and outputs.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "batch/epic/database.hpp"
#include "batch/epic/epoch_output.hpp"
#include "batch/epic/serial.hpp"
#include "batch/epic/tpcc.hpp"

namespace duet::batch::epic::test {

/// DUET_TEST_SCALE (default 1) scales iteration counts down in sanitizer runs.
inline double test_scale() {
  const char* s = std::getenv("DUET_TEST_SCALE");
  return s ? std::atof(s) : 1.0;
}

/// First difference between the engine's tables and the serial store, or "".
inline std::string compare_state(const Database& db, const SerialStore& s) {
  for (std::uint32_t t = 0; t < db.num_tables(); ++t) {
    const TableStore& ts = db.table(t);
    const std::uint32_t w = ts.spec.record_words;
    std::size_t present = 0;
    std::string diff;
    auto check = [&](std::uint64_t k, const std::uint32_t* want) {
      ++present;
      if (!diff.empty()) return;
      const std::uint32_t* got = db.get(t, k);
      if (!got) {
        diff = "table " + ts.spec.name + " key " + std::to_string(k) + ": missing";
        return;
      }
      for (std::uint32_t i = 0; i < w; ++i)
        if (got[i] != want[i]) {
          diff = "table " + ts.spec.name + " key " + std::to_string(k) + " word " + std::to_string(i) + ": " +
                 std::to_string(got[i]) + " != " + std::to_string(want[i]);
          return;
        }
    };
    s.for_each(t, check);
    if (!diff.empty()) return diff;
    if (ts.spec.indexed) {
      if (ts.index.size() != present)
        return "table " + ts.spec.name + ": index holds " + std::to_string(ts.index.size()) + " keys, serial " +
               std::to_string(present);
      if (ts.index.size() + ts.free_ring.size() != ts.spec.capacity) return "table " + ts.spec.name + ": ids leaked";
    } else {
      std::size_t valid = 0;
      for (std::uint64_t k = 0; k < ts.spec.capacity; ++k) valid += db.get(t, k) != nullptr;
      if (valid != present) return "table " + ts.spec.name + ": extra present records";
    }
  }
  return "";
}

/// Replays one engine epoch serially. `pending` holds the serial side's reruns (updated).
/// Returns the first difference in outcomes or outputs, or "".
template <class Procs>
std::string replay_epoch(SerialStore& s, Batch& pending, const Batch& submitted, const EpochOutput& out) {
  Batch run = pending;
  for (std::size_t t = 0; t < submitted.size(); ++t) run.add_from(submitted, t, submitted.attempt[t]);
  std::vector<std::uint32_t> outcome, outv;
  run_serial<Procs>(s, run, &outcome, &outv);
  if (run.size() != out.tag.size()) return "epoch ran " + std::to_string(out.tag.size()) + " txns, serial " + std::to_string(run.size());
  Batch next;
  for (std::size_t t = 0; t < run.size(); ++t) {
    if (run.tag[t] != out.tag[t] || run.attempt[t] != out.attempt[t]) return "txn " + std::to_string(t) + ": order differs";
    if (outcome[t] != out.results.outcome[t])
      return "txn " + std::to_string(t) + ": outcome " + std::to_string(out.results.outcome[t]) + " != " + std::to_string(outcome[t]);
    for (std::uint32_t k = 0; k < kMaxOut; ++k)
      if (outv[t * kMaxOut + k] != out.results.out[t * kMaxOut + k])
        return "txn " + std::to_string(t) + " (proc " + std::to_string(run.proc[t]) + ", outcome " +
               std::to_string(outcome[t]) + "): output " + std::to_string(k) + " is " +
               std::to_string(out.results.out[t * kMaxOut + k]) + ", serial " + std::to_string(outv[t * kMaxOut + k]);
    if (outcome[t] == kRerun) next.add_from(run, t, run.attempt[t] + 1);
  }
  pending = std::move(next);
  return "";
}

/// Bulk-loads TPC-C's tables (`w` warehouses, `layout`) into `s` and each of `dbs` (Databases).
template <class... Dbs>
void load_tpcc(std::uint32_t w, TpccLayout layout, SerialStore& s, Dbs&... dbs) {
  tpcc_load(
      w,
      [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
        (dbs.load(t, k, d), ...);
        s.put(t, k, d);
      },
      layout);
}

/// Piece splitting's check: `pieces` (Batch::add_piece) is `whole` with its txns split, and
/// `out` is the engine's epoch over `pieces`. Runs `whole` serially (no reruns: pieces never
/// rerun) and compares each txn's outcome and outputs with the pieces' folded ones
/// (fold_pieces). Returns the first difference, or "".
template <class Procs>
std::string replay_pieces(SerialStore& s, const Batch& whole, const Batch& pieces, const EpochOutput& out) {
  if (pieces.txn_count() != whole.size())
    return std::to_string(pieces.txn_count()) + " txns in pieces, " + std::to_string(whole.size()) + " whole";
  if (out.results.outcome.size() != pieces.size()) return "epoch ran " + std::to_string(out.results.outcome.size()) + " entries";
  std::vector<std::uint32_t> outcome, outv, folded, foldedv;
  run_serial<Procs>(s, whole, &outcome, &outv);
  fold_pieces(pieces, out.results.outcome, out.results.out, &folded, &foldedv);
  for (std::size_t t = 0; t < whole.size(); ++t) {
    if (outcome[t] != folded[t])
      return "txn " + std::to_string(t) + ": outcome " + std::to_string(folded[t]) + " != " + std::to_string(outcome[t]);
    for (std::uint32_t k = 0; k < kMaxOut; ++k)
      if (outv[t * kMaxOut + k] != foldedv[t * kMaxOut + k])
        return "txn " + std::to_string(t) + ": output " + std::to_string(k) + " is " +
               std::to_string(foldedv[t * kMaxOut + k]) + ", serial " + std::to_string(outv[t * kMaxOut + k]);
  }
  return "";
}

/// The negative control of piece order: `b` with each txn's pieces that write moved before its
/// pieces that only read, so a read of a record its own txn writes sees the txn's write.
inline Batch writes_first(const Batch& b) {
  Batch r;
  for (std::size_t t0 = 0, t1; t0 < b.size(); t0 = t1) {
    for (t1 = t0 + 1; t1 < b.size() && b.piece[t1]; ++t1) {
    }
    bool first = true;
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t t = t0; t < t1; ++t) {
        const bool writes = b.op_begin[t + 1] - b.op_begin[t] > b.nreads[t];
        if (writes != (pass == 0)) continue;
        r.add_from(b, t, b.attempt[t]);
        r.piece.back() = first ? 0 : 1;
        first = false;
      }
  }
  return r;
}

}  // namespace duet::batch::epic::test
