// Where an epoch executes under placement gpu-exec (src/batch/epic/exec_side.hpp): the estimate
// of an epoch's longest chain of writes to one record, the cost model that compares the two
// sides and its calibration, and an engine whose device is the CPU twin (HostExecutor) sending a
// hot-chain epoch to its CPU threads and a spread one to the device, with serial results.
#include <gtest/gtest.h>

#include <vector>

#include "batch/epic/engine.hpp"
#include "batch/epic/exec_side.hpp"
#include "batch/epic/host_executor.hpp"
#include "batch/epic/serial.hpp"
#include "batch/epic/workloads.hpp"

namespace duet::batch::epic {
namespace {

/// n Mix read-modify-writes: txn t on key keys(t) of table 0.
template <class KeyOf>
Batch rmw_batch(std::size_t n, KeyOf keys) {
  Batch b;
  for (std::size_t t = 0; t < n; ++t) {
    const std::vector<Key> k = {Key{0, static_cast<std::uint64_t>(keys(t))}};
    const std::vector<std::uint32_t> args = {static_cast<std::uint32_t>(t + 1), 0};
    EXPECT_TRUE(b.add(0, k, k, args, t));
  }
  return b;
}

TEST(EpicExecSide, LongestWriteChainCountsWritesToOneRecord) {
  // 1,000 txns: every 4th writes key 7, the others keys of their own; reads never count.
  Batch b;
  for (std::uint64_t t = 0; t < 1000; ++t) {
    const std::vector<Key> r = {Key{0, 7}, Key{1, 7}};
    const std::vector<Key> w = {Key{0, t % 4 == 0 ? 7 : 1000 + t}};
    ASSERT_TRUE(b.add(0, r, w, std::vector<std::uint32_t>{1, 0}, t));
  }
  EXPECT_EQ(longest_write_chain(b, 1), 250u);
  EXPECT_EQ(longest_write_chain(b, 0), 250u) << "stride 0 counts as 1";
  EXPECT_EQ(longest_write_chain(b, 4), 1000u) << "every sampled txn writes key 7: 250 samples times 4";
  const std::uint64_t est = longest_write_chain(b, 8);
  EXPECT_GE(est, 200u);
  EXPECT_LE(est, 1000u);
  EXPECT_EQ(longest_write_chain(rmw_batch(1000, [](std::size_t t) { return t; }), 1), 1u);
  EXPECT_EQ(longest_write_chain(rmw_batch(1000, [](std::size_t) { return 3; }), 64), 1024u);
  EXPECT_EQ(longest_write_chain(Batch{}, 64), 0u);
}

/// An ExecSide whose two sides have run their warm-up epochs (which set nothing).
ExecSide warmed(double move_ms) {
  ExecSide side(move_ms);
  side.ran(false, ExecSide::Epoch{1, 0}, 1e6);
  side.ran(true, ExecSide::Epoch{1, 0}, 1e6);
  return side;
}

TEST(EpicExecSide, ModelSendsLongChainsToTheCpuAndCalibrates) {
  ExecSide side = warmed(0);
  const ExecSide::Epoch spread{100000, 64}, hot{100000, 50000};
  EXPECT_TRUE(side.device(spread, true));
  EXPECT_FALSE(side.device(hot, true)) << "50,000 links at 4.4 us against 100,000 txns at 400 ns";
  EXPECT_TRUE(side.device(spread, false)) << "no move cost: the tables go at once";
  // The device measured 20x slower per txn than assumed: spread epochs go to the CPU next.
  side.ran(true, spread, 100.0);
  EXPECT_NEAR(side.device_ms(spread), 100.0, 1e-9);
  EXPECT_FALSE(side.device(spread, true));
  // The CPU measured slower still: back to the device.
  side.ran(false, spread, 200.0);
  EXPECT_NEAR(side.host_ms(spread), 200.0, 1e-9);
  EXPECT_TRUE(side.device(spread, true));
  // A chain-bound device epoch sets the link cost, not the per-txn one.
  ExecSide chains = warmed(0);
  chains.ran(true, hot, 50.0);  // 1 us a link measured
  EXPECT_NEAR(chains.device_ms(hot), 50.0, 1e-9);
  EXPECT_NEAR(chains.device_ms(ExecSide::Epoch{100000, 0}), 5.0, 1e-9) << "per-txn cost untouched";
  // Terms close together (a chain of 64 at 1 us against 5,000 txns at 50 ns: 64 us and 250 us,
  // under 4x apart): the epoch measures the per-txn cost, not the link.
  chains.ran(true, ExecSide::Epoch{5000, 64}, 1.0);
  EXPECT_NEAR(chains.device_ms(hot), 50.0, 1e-9) << "link cost untouched";
  EXPECT_NEAR(chains.device_txn_ns(), 200.0, 1e-9) << "1 ms over 5,000 txns";
  chains.ran(true, ExecSide::Epoch{0, 5}, 1.0);  // no txns: ignored
  chains.ran(false, hot, 0);                     // no time: ignored
  EXPECT_NEAR(chains.host_ms(hot), 40.0, 1e-9);
}

// A side's first epoch pays one-time costs: it sets nothing. Here a first CPU epoch far slower
// than the next (as the GPU runner's start makes it) would have sent a hot chain to the device
// for good; it is ignored, and the second sets it.
TEST(EpicExecSide, EachSidesFirstEpochIsAWarmUp) {
  ExecSide side(0);
  const ExecSide::Epoch hot{21000, 21000};  // device 92 ms, host 8.4 ms
  side.ran(false, hot, 500.0);
  EXPECT_NEAR(side.host_ms(hot), 8.4, 1e-9) << "the warm-up set the host's cost";
  EXPECT_FALSE(side.device(hot, false));
  side.ran(false, hot, 60.0);
  EXPECT_NEAR(side.host_ms(hot), 60.0, 1e-9);
  EXPECT_FALSE(side.device(hot, false));
  side.ran(true, hot, 1000.0);  // the device's warm-up: ignored too
  EXPECT_NEAR(side.device_ms(hot), 21000 * 4400 / 1e6, 1e-9);
}

// RecentMedian: the default until a value comes; the median of the last five (the lower middle
// one of an even count); one outlier among three moves it not at all.
TEST(EpicExecSide, RecentMedianIgnoresOneOutlier) {
  RecentMedian m(7);
  EXPECT_EQ(m.value(), 7);
  m.push(10);
  EXPECT_EQ(m.value(), 10);
  m.push(1000);
  EXPECT_EQ(m.value(), 10) << "the lower of the two";
  m.push(12);
  EXPECT_EQ(m.value(), 12);
  m.push(11), m.push(13);
  EXPECT_EQ(m.value(), 12) << "10 11 12 13 1000";
  for (int i = 0; i < 3; ++i) m.push(500);  // a shift that lasts: three of the last five
  EXPECT_EQ(m.value(), 500) << "11 13 500 500 500";
  for (int i = 0; i < 5; ++i) m.push(1);
  EXPECT_EQ(m.value(), 1) << "only the last five count";
}

// A hot chain whose CPU epochs mostly cost 40 ms and now and then 640 ms (as a hot workload's
// calls waited through the server: p50 39 ms, p99 646 ms) stays on the CPU threads: the device,
// at 92 ms an epoch, never looks cheaper. When each epoch replaced the figure, every slow epoch
// added 548 ms of credit and the tables moved after the first (a move of 100 ms here).
TEST(EpicExecSide, OccasionalSlowEpochsDoNotMoveTheTables) {
  ExecSide side = warmed(100);
  const ExecSide::Epoch hot{21000, 21000};  // device 92.4 ms at the default link cost
  bool ever_moved = false;
  for (int i = 0; i < 40; ++i) {
    const bool dev = side.device(hot, false);
    ever_moved |= dev;
    side.ran(false, hot, i % 5 == 4 ? 640.0 : 40.0);
  }
  EXPECT_FALSE(ever_moved);
  EXPECT_NEAR(side.host_ms(hot), 40.0, 1e-9);
  // When the CPU epochs turn slow for good, the model follows within the window and the savings
  // then pay for the move.
  int epochs_until_moved = 0;
  for (bool dev = false; !dev && epochs_until_moved < 10; ++epochs_until_moved) {
    dev = side.device(hot, false);
    if (!dev) side.ran(false, hot, 640.0);
  }
  EXPECT_LE(epochs_until_moved, 5);
  EXPECT_NEAR(side.host_ms(hot), 640.0, 1e-9);
}

// Ski rental: with the tables on the host and a move of 100 ms, an epoch the device would run
// 35 ms sooner stays on the host until three such epochs have added up 105 ms of savings; a
// costlier epoch on the way resets the count; the move measured sets the next move's cost.
TEST(EpicExecSide, TablesMoveOnceTheSavingsPayForTheMove) {
  ExecSide side(100);
  const ExecSide::Epoch spread{100000, 64};  // device 5 ms, host 40 ms
  const ExecSide::Epoch hot{100000, 50000};  // device 220 ms, host 40 ms
  EXPECT_FALSE(side.device(spread, false));
  EXPECT_FALSE(side.device(spread, false));
  EXPECT_TRUE(side.device(spread, false)) << "105 ms saved: the move is paid for";
  EXPECT_FALSE(side.device(spread, false)) << "the credit starts again after a move";
  EXPECT_FALSE(side.device(hot, false)) << "the host is cheaper: the credit resets";
  EXPECT_FALSE(side.device(spread, false));
  EXPECT_FALSE(side.device(spread, false));
  EXPECT_TRUE(side.device(spread, false));
  // Held on the device, a hot epoch needs 180 ms of savings a time: the first stays.
  side.moved(300);
  EXPECT_NEAR(side.move_ms(), 300, 1e-9);
  EXPECT_TRUE(side.device(hot, true));
  EXPECT_FALSE(side.device(hot, true)) << "360 ms saved: the tables come back";
  side.moved(0);  // not a measurement
  EXPECT_NEAR(side.move_ms(), 300, 1e-9);
}

// An engine over the twin device: the first epoch (2,000 txns on keys of their own) runs on the
// device, the second (2,000 txns on one key: a chain of 2,000) on the CPU threads; with the
// choice off both run on the device. Every result and record equals serial execution.
TEST(EpicExecSide, EngineRunsAHotChainOnItsCpuThreads) {
  const std::vector<TableSpec> specs = {{"t", 1, 4096, false}};
  for (bool by_contention : {true, false}) {
    SCOPED_TRACE(by_contention ? "by contention" : "every epoch on the device");
    Engine<MixProcs> e(specs, 2);
    e.set_device_executor(std::make_shared<HostExecutor<MixProcs>>(2));
    e.set_place_by_contention(by_contention);
    SerialStore s(specs);
    const std::uint32_t one = 1;
    for (std::uint64_t k = 0; k < 4096; ++k) {
      ASSERT_TRUE(e.db().load(0, k, &one));
      s.put(0, k, &one);
    }
    const Batch batches[2] = {rmw_batch(2000, [](std::size_t t) { return t; }),
                              rmw_batch(2000, [](std::size_t) { return 5; })};
    for (int i = 0; i < 2; ++i) {
      EpochOutput out;
      std::string err;
      ASSERT_TRUE(e.run_epoch(batches[i], &out, &err)) << err;
      EXPECT_EQ(out.stats.on_device, i == 0 || !by_contention) << "epoch " << i;
      EXPECT_EQ(out.stats.cost_model_on_host, i == 1 && by_contention) << "epoch " << i;
      std::vector<std::uint32_t> outcome, outv;
      run_serial<MixProcs>(s, batches[i], &outcome, &outv);
      ASSERT_EQ(out.results.outcome, outcome) << "epoch " << i;
      ASSERT_EQ(out.results.out, outv) << "epoch " << i;
    }
    EXPECT_EQ(e.cost_model_on_host(), by_contention ? 1u : 0u);
    for (std::uint64_t k = 0; k < 4096; ++k) {
      const std::uint32_t* got = nullptr;
      std::string err;
      ASSERT_TRUE(e.get(0, k, &got, &err)) << err;
      ASSERT_NE(got, nullptr);
      ASSERT_EQ(*got, *s.get(0, k)) << "key " << k;
    }
  }
}

}  // namespace
}  // namespace duet::batch::epic
