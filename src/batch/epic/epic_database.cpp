// duet::EpicDatabase (include/duet/batch.hpp): an Engine of the chosen procedure set on CPU
// threads, driven by the Epochs front end.
#include <algorithm>
#include <thread>

#include "batch/epic/epochs.hpp"
#include "batch/epic/tpcc.hpp"
#include "batch/epic/workloads.hpp"
#include "duet/batch.hpp"

namespace duet {
namespace {

using batch::epic::Engine;
using batch::epic::Epochs;
using batch::epic::Key;
using batch::epic::TableSpec;

std::vector<Key> to_keys(std::span<const EpicKey> ks) {
  std::vector<Key> out(ks.size());
  for (std::size_t i = 0; i < ks.size(); ++i) out[i] = Key{ks[i].table, ks[i].key};
  return out;
}

template <class Procs>
class EpicDatabaseImpl final : public EpicDatabase {
 public:
  EpicDatabaseImpl(std::vector<TableSpec> specs, int threads, batch::epic::EpochsConfig cfg)
      : engine_(std::move(specs), threads), epochs_(engine_, cfg) {}
  ~EpicDatabaseImpl() override = default;  // epochs_ (declared last) flushes and stops first

  Status load(std::uint32_t table, std::uint64_t key, std::span<const std::uint32_t> record) override {
    Status s;
    epochs_.with_engine_idle([&] {
      batch::epic::Database& db = engine_.db();
      if (submitted_.load(std::memory_order_acquire)) {
        s = Status::InvalidArgument("bulk load after the first submission");
      } else if (table >= db.num_tables()) {
        s = Status::InvalidArgument("unknown table " + std::to_string(table));
      } else if (record.size() != db.table(table).spec.record_words) {
        s = Status::InvalidArgument("table " + db.table(table).spec.name + " holds records of " +
                                    std::to_string(db.table(table).spec.record_words) + " words, not " +
                                    std::to_string(record.size()));
      } else if (!db.table(table).spec.indexed && key >= db.table(table).spec.capacity) {
        s = Status::InvalidArgument("key " + std::to_string(key) + " is out of direct table " +
                                    db.table(table).spec.name + "'s range");
      } else if (!db.load(table, key, record.data())) {
        s = Status::ResourceExhausted("indexed table " + db.table(table).spec.name + " is full");
      }
    });
    return s;
  }

  std::future<EpicTxnResult> submit(std::uint32_t proc, std::span<const EpicKey> reads, std::span<const EpicKey> writes,
                                    std::span<const std::uint32_t> args) override {
    submitted_.store(true, std::memory_order_release);
    return epochs_.submit(proc, to_keys(reads), to_keys(writes), std::vector<std::uint32_t>(args.begin(), args.end()));
  }

  void submit(std::uint32_t proc, std::span<const EpicKey> reads, std::span<const EpicKey> writes,
              std::span<const std::uint32_t> args, std::function<void(EpicTxnResult&&)> done) override {
    submitted_.store(true, std::memory_order_release);
    epochs_.submit(proc, to_keys(reads), to_keys(writes), std::vector<std::uint32_t>(args.begin(), args.end()),
                   std::move(done));
  }

  void flush() override { epochs_.flush(); }

  Status read(std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* record) override {
    Status s;
    epochs_.with_engine_idle([&] {
      batch::epic::Database& db = engine_.db();
      if (table >= db.num_tables()) {
        s = Status::InvalidArgument("unknown table " + std::to_string(table));
        return;
      }
      const std::uint32_t* r = db.get(table, key);
      if (!r) {
        s = Status::NotFound("no record " + std::to_string(key) + " in table " + db.table(table).spec.name);
        return;
      }
      record->assign(r, r + db.table(table).spec.record_words);
    });
    return s;
  }

  EpicStats stats() const override {
    const batch::epic::EpochsStats e = epochs_.stats();
    EpicStats s;
    s.epochs = e.epochs, s.txns = e.txns, s.refused = e.refused, s.failed_epochs = e.failed_epochs;
    s.closed_by_size = e.closed_by_size, s.closed_by_wait = e.closed_by_wait;
    s.closed_by_flush = e.closed_by_flush, s.rerun_epochs = e.rerun_epochs;
    return s;
  }

 private:
  Engine<Procs> engine_;
  std::atomic<bool> submitted_{false};
  Epochs<Procs> epochs_;
};

}  // namespace

Status EpicDatabase::open(const EpicConfig& config, std::unique_ptr<EpicDatabase>* out) {
  if (!out) return Status::InvalidArgument("null output");
  if (config.tables.empty()) return Status::InvalidArgument("an Epic database needs at least one table");
  if (config.tables.size() > 255) return Status::InvalidArgument("more than 255 tables");
  std::uint64_t records = 0;
  std::vector<TableSpec> specs;
  for (const EpicTable& t : config.tables) {
    if (t.record_words == 0 || t.capacity == 0)
      return Status::InvalidArgument("table '" + t.name + "' has no records or no words per record");
    records += t.capacity;
    specs.push_back(TableSpec{t.name, t.record_words, t.capacity, t.indexed});
  }
  if (records > 0xFFFFFFFDull) return Status::InvalidArgument("more than 2^32 - 2 records in all");
  if (config.threads > 64) return Status::InvalidArgument("threads over 64");
  const int threads = config.threads ? static_cast<int>(config.threads)
                                     : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 64u));
  batch::epic::EpochsConfig cfg;
  cfg.epoch_size = config.epoch_size;
  cfg.epoch_max_wait = std::chrono::microseconds(config.epoch_max_wait_us);
  switch (config.procedures) {
    case EpicProcedures::kMix: *out = std::make_unique<EpicDatabaseImpl<batch::epic::MixProcs>>(specs, threads, cfg); break;
    case EpicProcedures::kYcsb: *out = std::make_unique<EpicDatabaseImpl<batch::epic::YcsbProcs>>(specs, threads, cfg); break;
    case EpicProcedures::kTpcc: *out = std::make_unique<EpicDatabaseImpl<batch::epic::TpccProcs>>(specs, threads, cfg); break;
    default: return Status::InvalidArgument("unknown procedure set");
  }
  return Status::Ok();
}

}  // namespace duet
