// The RocksDB peer of the Epic benchmark (bench/batch/epic/rocksdb_peer.hpp). On one thread it
// must equal the serial executor: every txn's outcome and outputs and every record, on YCSB and
// on TPC-C's full mix (inserts, deletes, reads of absent keys). On several threads, TPC-C's NP
// invariants hold: every NewOrder that commits serially commits (none is lost to an out-of-order
// order id), each district's next order id counts its NewOrders, each warehouse's ytd sums its
// payments. A planted fault (a lost write) must be caught by the one-thread comparison.
#include <gtest/gtest.h>

#include <random>

#include "checkers/epic_serial_checker.hpp"
#include "batch/epic/serial.hpp"
#include "batch/epic/tpcc_gen.hpp"
#include "batch/epic/workloads.hpp"
#include "bench/batch/epic/rocksdb_peer.hpp"

namespace duet::batch::epic {
namespace {

using peer::RocksPeer;
using peer::RocksStats;

/// First difference between the peer's records and the serial store's, over every key either
/// holds (the peer's keys found by a scan of each table's prefix), or "".
std::string compare(RocksPeer& p, const SerialStore& s) {
  for (std::uint32_t t = 0; t < s.specs().size(); ++t) {
    std::size_t present = 0;
    std::string diff;
    s.for_each(t, [&](std::uint64_t k, const std::uint32_t* want) {
      ++present;
      if (!diff.empty()) return;
      const std::vector<std::uint32_t> got = p.get(t, k);
      if (got.size() != s.specs()[t].record_words || !std::equal(got.begin(), got.end(), want))
        diff = "table " + s.specs()[t].name + " key " + std::to_string(k) + " differs";
    });
    if (!diff.empty()) return diff;
    rocksdb::ReadOptions ro;
    ro.total_order_seek = true;  // the hash memtable iterates in key order only when asked
    std::unique_ptr<rocksdb::Iterator> it(p.db()->NewIterator(ro));
    const char prefix = static_cast<char>(t);
    std::size_t n = 0;
    for (it->Seek(rocksdb::Slice(&prefix, 1)); it->Valid() && it->key()[0] == prefix; it->Next()) ++n;
    if (n != present) return "table " + s.specs()[t].name + ": peer holds " + std::to_string(n) + ", serial " + std::to_string(present);
  }
  return "";
}

/// Runs `b` on the peer and serially; the first difference in outcomes or outputs, or "".
template <class Procs>
std::string run_both(RocksPeer& p, SerialStore& s, const Batch& b, int threads, RocksStats* st) {
  std::vector<std::uint32_t> po, pout, so, sout;
  std::string err;
  if (!p.run<Procs>(b, threads, &po, &pout, st, &err)) return err;
  run_serial<Procs>(s, b, &so, &sout);
  for (std::size_t t = 0; t < b.size(); ++t) {
    if (po[t] != so[t]) return "txn " + std::to_string(t) + ": outcome " + std::to_string(po[t]) + " != " + std::to_string(so[t]);
    for (std::uint32_t k = 0; k < kMaxOut; ++k)
      if (pout[t * kMaxOut + k] != sout[t * kMaxOut + k]) return "txn " + std::to_string(t) + ": output differs";
  }
  return "";
}

/// The benchmark's configuration (hash memtable), or the plain skiplist, whose full scans (in
/// compare) cost far less.
std::unique_ptr<RocksPeer> open(const std::vector<TableSpec>& specs, bool hash = true) {
  std::string err;
  auto p = RocksPeer::open(specs, std::size_t{256} << 20, &err, hash);
  EXPECT_TRUE(p) << err;
  return p;
}

TEST(EpicRocksPeer, OneThreadEqualsSerialOnYcsb) {
  for (char w : {'A', 'F'})
    for (bool split : {false, true}) {
      YcsbConfig y = YcsbConfig::workload(w, 0.99, split);
      y.records = 2000;
      y.abort_rate = 0.1;
      const TableSpec spec = ycsb_table(y);
      auto p = open({spec});
      ASSERT_TRUE(p);
      SerialStore s({spec});
      std::vector<std::uint32_t> d(spec.record_words);
      for (std::uint64_t k = 0; k < spec.capacity; ++k) {
        for (std::uint32_t i = 0; i < d.size(); ++i) d[i] = ycsb_initial(k, i);
        ASSERT_TRUE(p->load(0, k, d.data()));
        s.put(0, k, d.data());
      }
      YcsbGenerator g(y);
      for (int e = 0; e < 2; ++e) {
        Batch b;
        g.generate(300, &b, e * 300);
        RocksStats st;
        ASSERT_EQ(run_both<YcsbProcs>(*p, s, b, 1, &st), "") << w << split;
        EXPECT_EQ(st.retries, 0u);
        EXPECT_GT(st.aborted, 0u);
      }
      ASSERT_EQ(compare(*p, s), "") << w << split;
    }
}

TEST(EpicRocksPeer, OneThreadEqualsSerialOnTpccFullMix) {
  const auto specs = tpcc_tables(1, 4000, 4000);
  auto p = open(specs, false);
  ASSERT_TRUE(p);
  SerialStore s(specs);
  tpcc_load(1, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
    ASSERT_TRUE(p->load(t, k, d));
    s.put(t, k, d);
  });
  TpccGenerator g(1, 9, TpccMix::kFull);
  ASSERT_EQ(g.error(), "");
  std::size_t committed = 0;
  for (int e = 0; e < 3; ++e) {
    Batch b;
    g.generate(700, &b, e * 700);
    RocksStats st;
    ASSERT_EQ(run_both<TpccProcs>(*p, s, b, 1, &st), "") << "epoch " << e;
    committed += st.committed;
  }
  EXPECT_GT(committed, 2000u);
  ASSERT_EQ(compare(*p, s), "");
  // Negative control: the warehouse's last payment lost on the peer's side is found.
  const std::uint32_t* w = s.get(kWarehouse, 0);
  ASSERT_TRUE(p->load(kWarehouse, 0, std::vector<std::uint32_t>{w[0] - 1, w[1]}.data()));
  EXPECT_NE(compare(*p, s), "");
}

TEST(EpicRocksPeer, ManyThreadsKeepTpccNpInvariants) {
  const std::uint32_t wh = 1;
  const auto specs = tpcc_tables(wh, 8000, 8000);
  auto p = open(specs);
  ASSERT_TRUE(p);
  SerialStore s(specs);
  tpcc_load(wh, [&](std::uint32_t t, std::uint64_t k, const std::uint32_t* d) {
    ASSERT_TRUE(p->load(t, k, d));
    s.put(t, k, d);
  });
  TpccGenerator g(wh, 3, TpccMix::kNp);
  std::vector<std::uint64_t> ytd(wh, 0);
  std::vector<std::uint32_t> orders(wh * 10, 0);
  for (int e = 0; e < 3; ++e) {
    Batch b;
    g.generate(2000, &b, e * 2000);
    std::vector<std::uint32_t> po, pout, so, sout;
    RocksStats st;
    std::string err;
    ASSERT_TRUE(p->run<TpccProcs>(b, 4, &po, &pout, &st, &err)) << err;
    run_serial<TpccProcs>(s, b, &so, &sout);
    for (std::size_t t = 0; t < b.size(); ++t) {
      ASSERT_EQ(po[t], so[t]) << "txn " << t;  // the same txns commit and roll back
      if (po[t] != kCommitted) continue;
      const std::uint32_t w = static_cast<std::uint32_t>(b.keys[b.op_begin[t]].key);
      if (b.proc[t] == TpccProcs::kPaymentProc) ytd[w] += b.args[b.arg_begin[t]];
      if (b.proc[t] == TpccProcs::kNewOrderProc) ++orders[b.keys[b.op_begin[t] + 1].key];
    }
  }
  for (std::uint32_t w = 0; w < wh; ++w) {
    EXPECT_EQ(p->get(kWarehouse, w).at(0), ytd[w]) << w;
    EXPECT_EQ(p->get(kWarehouse, w), std::vector<std::uint32_t>(s.get(kWarehouse, w), s.get(kWarehouse, w) + 2));
    for (std::uint32_t d = 0; d < 10; ++d)
      EXPECT_EQ(p->get(kDistrict, district_key(w, d)).at(0), kFirstOrderId + orders[district_key(w, d)]);
  }
}

}  // namespace
}  // namespace duet::batch::epic
