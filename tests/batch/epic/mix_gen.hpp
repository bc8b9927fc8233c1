// The Mix workload of Epic's tests: three tables (two direct, one indexed), random contended
// txns of MixProcs (read-modify-writes, deletes, partial writes; injected aborts, reruns and rule
// breaking), and the bulk load both the engine and the serial store start from. Shared by the CPU
// and GPU suites, so both draw the same txns from the same seed.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "batch/epic/database.hpp"
#include "batch/epic/serial.hpp"
#include "batch/epic/workloads.hpp"

namespace duet::batch::epic::test {

/// small (direct, 64 x 1 word), wide (direct, 200 x 4 words), indexed (400 ids x 3 words).
inline std::vector<TableSpec> mix_tables() {
  return {{"small", 1, 64, false}, {"wide", 4, 200, false}, {"indexed", 3, 400, true}};
}

/// One drawn txn, as submitted.
struct MixTxn {
  std::uint32_t proc = 0;
  std::vector<Key> reads, writes;
  std::vector<std::uint32_t> args;
};

/// Random Mix txns: a third of them on 4 hot keys per table; arg 1 is the abort mode (10%
/// abort, 5% rerun on the first attempt, 2% write then abort, 2% a read past the declared reads
/// then an abort).
struct MixGen {
  std::mt19937_64 rng;
  explicit MixGen(std::uint64_t seed) : rng(seed) {}
  std::uint64_t key(std::uint32_t table, bool hot) {
    const std::uint64_t range = table == 0 ? 64 : table == 1 ? 200 : 300;
    return hot ? rng() % 4 : rng() % range;
  }
  MixTxn draw() {
    MixTxn x;
    const bool hot = rng() % 3 == 0;
    const int nr = static_cast<int>(rng() % 7), nw = static_cast<int>(rng() % 6);
    for (int i = 0; i < nr; ++i) {
      const auto t = static_cast<std::uint32_t>(rng() % 3);
      x.reads.push_back({t, key(t, hot)});
    }
    for (int i = 0; i < nw; ++i) {
      const auto t = static_cast<std::uint32_t>(rng() % 3);
      Key k{t, key(t, hot)};
      bool dup = false;
      for (auto& w : x.writes) dup |= w.table == k.table && w.key == k.key;
      if (!dup) x.writes.push_back(k);
    }
    const std::uint32_t r = static_cast<std::uint32_t>(rng() % 100);
    x.proc = r < 70 ? MixProcs::kRmw : r < 85 ? MixProcs::kDelete : MixProcs::kPartial;
    const std::uint32_t a = static_cast<std::uint32_t>(rng() % 100);
    const std::uint32_t mode = a < 10 ? 1 : a < 15 ? 2 : a < 17 ? 3 : a < 19 ? 5 : 0;
    x.args = {static_cast<std::uint32_t>(rng()), mode};
    return x;
  }
  /// Draws one txn into `b` with tag `tag`; false if the batch refused it (never for Mix txns).
  bool txn(Batch* b, std::uint64_t tag) {
    const MixTxn x = draw();
    return b->add(x.proc, x.reads, x.writes, x.args, tag);
  }
};

/// Loads every direct record and every other indexed key below 300 into `db` and `s`; false if
/// the database refused one.
inline bool load_mix(Database& db, SerialStore& s) {
  bool ok = true;
  for (std::uint32_t t = 0; t < 3; ++t) {
    const std::uint32_t w = db.table(t).spec.record_words;
    const std::uint64_t n = t == 2 ? 300 : db.table(t).spec.capacity;
    for (std::uint64_t k = 0; k < n; k += t == 2 ? 2 : 1) {
      std::vector<std::uint32_t> d(w);
      for (std::uint32_t i = 0; i < w; ++i) d[i] = static_cast<std::uint32_t>(k * 100 + i + t);
      ok &= db.load(t, k, d.data());
      s.put(t, k, d.data());
    }
  }
  return ok;
}

}  // namespace duet::batch::epic::test
