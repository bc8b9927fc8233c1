// duet::EpicDatabase (include/duet/batch.hpp): an Engine of the chosen procedure set on CPU
// threads, driven by the Epochs front end; with placement kGpu (or kGpuTwin) the engine indexes
// and plans through a DevicePlanner (the GPU runner, or HostPlanner, its CPU twin); with kGpuExec
// (or kGpuExecTwin) whole epochs go to a DeviceExecutor (GpuExecutor, or HostExecutor).
#include <algorithm>
#include <charconv>
#include <new>
#include <system_error>
#include <thread>

#include "batch/epic/epochs.hpp"
#include "batch/epic/gpu.hpp"
#include "batch/epic/host_executor.hpp"
#include "batch/epic/tpcc.hpp"
#include "batch/epic/workloads.hpp"
#include "common/ascii.hpp"
#include "duet/batch.hpp"

namespace duet {
namespace {

using batch::epic::Engine;
using batch::epic::Epochs;
using batch::epic::Key;
using batch::epic::TableSpec;

template <class Procs>
class EpicDatabaseImpl final : public EpicDatabase {
 public:
  /// `planner` (may be null: the CPU twin plans) indexes and plans every epoch that fits it.
  /// `executor` (kGpuExec; built here for kGpuExecTwin) takes every epoch that fits it instead.
  EpicDatabaseImpl(const EpicConfig& config, int threads, batch::epic::EpochsConfig cfg,
                   std::shared_ptr<batch::epic::DevicePlanner> planner,
                   std::shared_ptr<batch::epic::DeviceExecutor> executor, EpicPlacement placement)
      : config_(config), placement_(placement), engine_(config.tables, threads), epochs_(engine_, cfg) {
    engine_.set_exec_order(config.exec_order);
    if (placement == EpicPlacement::kGpuExecTwin) {
      executor = std::make_shared<batch::epic::HostExecutor<Procs>>(threads, config.max_device_epoch_ops);
      planner = std::make_shared<batch::epic::HostPlanner>(threads);  // plans the host's epochs, as the runner does
    }
    const bool on_device = executor || planner;
    if (executor) {
      engine_.set_device_executor(std::move(executor));
      engine_.set_place_by_contention(config.place_by_contention);
    }
    if (planner) {
      planner->set_max_epoch_ops(config.max_device_epoch_ops);
      engine_.set_device_planner(std::move(planner));
    }
    if (on_device) engine_.set_min_device_epoch_ops(config.min_device_epoch_ops);
  }

  const std::vector<EpicTable>& tables() const override { return config_.tables; }
  EpicProcedures procedures() const override { return config_.procedures; }
  ~EpicDatabaseImpl() override = default;  // epochs_ (declared last) flushes and stops first

  Status load(std::uint32_t table, std::uint64_t key, std::span<const std::uint32_t> record) override {
    if (submitted_.load(std::memory_order_acquire))  // refused without waiting for a running epoch
      return Status::InvalidArgument("bulk load after the first submission");
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
    bool accepted = false;
    auto f = epochs_.submit(proc, reads, writes, args, &accepted);
    if (accepted) submitted_.store(true, std::memory_order_release);
    return f;
  }

  void submit(std::uint32_t proc, std::span<const EpicKey> reads, std::span<const EpicKey> writes,
              std::span<const std::uint32_t> args, std::function<void(EpicTxnResult&&)> done) override {
    if (epochs_.submit(proc, reads, writes, args, std::move(done)))
      submitted_.store(true, std::memory_order_release);
  }

  std::future<EpicTxnResult> submit_pieces(std::span<const EpicPiece> pieces) override {
    bool accepted = false;
    auto f = epochs_.submit_piece_views(pieces, &accepted);
    if (accepted) submitted_.store(true, std::memory_order_release);
    return f;
  }

  void submit_pieces(std::span<const EpicPiece> pieces, std::function<void(EpicTxnResult&&)> done) override {
    if (epochs_.submit_piece_views(pieces, std::move(done))) submitted_.store(true, std::memory_order_release);
  }

  void flush() override { epochs_.flush(); }
  void flush(std::function<void()> done) override { epochs_.flush(std::move(done)); }

  Status read(std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* record) override {
    Status s;
    epochs_.with_engine_idle([&] { s = read_idle(table, key, record); });
    return s;
  }

  void read(std::uint32_t table, std::uint64_t key,
            std::function<void(Status, std::vector<std::uint32_t>&&)> done) override {
    epochs_.when_idle([this, table, key, done = std::move(done)] {
      std::vector<std::uint32_t> record;
      Status s = read_idle(table, key, &record);
      done(std::move(s), std::move(record));
    });
  }

  EpicStats stats() const override {
    const batch::epic::EpochsStats e = epochs_.stats();
    EpicStats s;
    s.epochs = e.epochs, s.txns = e.txns, s.refused = e.refused, s.failed_epochs = e.failed_epochs;
    s.closed_by_size = e.closed_by_size, s.closed_by_wait = e.closed_by_wait;
    s.closed_by_flush = e.closed_by_flush, s.rerun_epochs = e.rerun_epochs;
    s.take_ms = e.take_ms, s.engine_ms = e.engine_ms, s.resolve_ms = e.resolve_ms;
    s.placement = placement_;
    s.host_planned_epochs = engine_.host_planned_epochs();
    s.small_epochs_on_host = engine_.small_epochs_on_host();
    s.queued_epochs = engine_.queued_epochs();
    s.device_epochs = engine_.device_epochs();
    s.table_uploads = engine_.uploads();
    s.table_downloads = engine_.downloads();
    s.cost_model_epochs_on_host = engine_.cost_model_on_host();
    if (engine_.has_device_executor()) {
      const auto t = engine_.side_times();
      s.host_exec_ms = t.host_exec_ms, s.device_exec_ms = t.device_exec_ms, s.table_move_ms = t.move_ms;
      s.model_host_ns_per_txn = t.model_host_txn_ns, s.model_device_ns_per_txn = t.model_device_txn_ns;
      s.model_device_ns_per_link = t.model_link_ns;
    }
    return s;
  }

 private:
  // A committed record while no epoch runs (the caller holds the engine idle).
  Status read_idle(std::uint32_t table, std::uint64_t key, std::vector<std::uint32_t>* record) {
    batch::epic::Database& db = engine_.db();
    if (table >= db.num_tables()) return Status::InvalidArgument("unknown table " + std::to_string(table));
    bool found = false;
    if (std::string err; !engine_.read(table, key, record, &found, &err)) return Status::Internal("Epic read: " + err);
    if (!found) return Status::NotFound("no record " + std::to_string(key) + " in table " + db.table(table).spec.name);
    return Status::Ok();
  }

  const EpicConfig config_;
  const EpicPlacement placement_;
  Engine<Procs> engine_;
  std::atomic<bool> submitted_{false};
  Epochs<Procs> epochs_;
};

}  // namespace

Status EpicDatabase::check(const EpicConfig& config) {
  if (config.tables.empty()) return Status::InvalidArgument("an Epic database needs at least one table");
  if (config.tables.size() > 255) return Status::InvalidArgument("more than 255 tables");
  std::uint64_t records = 0;
  for (const EpicTable& t : config.tables) {
    if (t.record_words == 0 || t.capacity == 0)
      return Status::InvalidArgument("table '" + t.name + "' has no records or no words per record");
    records += t.capacity;
  }
  if (records > 0xFFFFFFFDull) return Status::InvalidArgument("more than 2^32 - 2 records in all");
  if (config.threads > 64) return Status::InvalidArgument("threads over 64");
  if (config.epoch_size < 1 || config.epoch_size > (1u << 19))
    return Status::InvalidArgument("epoch size " + std::to_string(config.epoch_size) + " is outside 1 .. 2^19");
  if (config.max_attempts < 1 || config.max_attempts > 1000)
    return Status::InvalidArgument("max_attempts " + std::to_string(config.max_attempts) + " is outside 1 .. 1000");
  return Status::Ok();
}

std::uint64_t EpicDatabase::host_bytes(const EpicConfig& config) {
  std::uint64_t bytes = 0;
  for (const EpicTable& t : config.tables) bytes += batch::epic::TableStore::bytes_per_record(t.record_words, t.indexed) * t.capacity;
  return bytes;
}

Status EpicDatabase::open(const EpicConfig& config, std::unique_ptr<EpicDatabase>* out) {
  if (!out) return Status::InvalidArgument("null output");
  if (Status s = check(config); !s.ok()) return s;
  const int threads = config.threads ? static_cast<int>(config.threads)
                                     : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 64u));
  batch::epic::EpochsConfig cfg;
  cfg.epoch_size = config.epoch_size;
  cfg.epoch_max_wait = std::chrono::microseconds(config.epoch_max_wait_us);
  cfg.max_attempts = config.max_attempts;
  try {
    // The planner: the GPU runner of the procedure set (kGpu, or kAuto with a usable device),
    // its CPU twin (kGpuTwin), or none (kCpu: the engine's own CPU twin).
    // (kGpuExec: the runner executes whole epochs; kGpuExecTwin: its CPU twin, built by the
    // database of the procedure set.)
    std::shared_ptr<batch::epic::DevicePlanner> planner;
    std::shared_ptr<batch::epic::DeviceExecutor> executor;
    EpicPlacement placement = config.placement;
    if (placement == EpicPlacement::kAuto || placement == EpicPlacement::kGpu || placement == EpicPlacement::kGpuExec) {
      const batch::epic::ProcSet set = config.procedures == EpicProcedures::kTpcc   ? batch::epic::ProcSet::kTpcc
                                       : config.procedures == EpicProcedures::kYcsb ? batch::epic::ProcSet::kYcsb
                                                                                    : batch::epic::ProcSet::kMix;
      std::string why;
      std::shared_ptr<batch::epic::GpuRunner> runner = batch::epic::make_gpu_runner(set, &why);
      if (!runner && placement != EpicPlacement::kAuto)
        return Status::InvalidArgument(std::string("Epic placement ") + epic_placement_name(placement) +
                                       ": no usable GPU (" + why + ")");
      // The runner packs transfers on the engine's worker pool: the same thread count shares it.
      if (runner) runner->set_host_threads(threads);
      if (runner && placement == EpicPlacement::kGpuExec) {
        // One runner executes the device's epochs and plans the host's (Epic-CPU).
        executor = std::make_shared<batch::epic::GpuExecutor>(runner);
        planner = std::move(runner);
      } else {
        planner = std::move(runner);
        placement = planner ? EpicPlacement::kGpu : EpicPlacement::kCpu;
      }
    } else if (placement == EpicPlacement::kGpuTwin) {
      planner = std::make_shared<batch::epic::HostPlanner>(threads);
    } else if (placement != EpicPlacement::kCpu && placement != EpicPlacement::kGpuExecTwin) {
      return Status::InvalidArgument("unknown Epic placement");
    }
    switch (config.procedures) {
      case EpicProcedures::kMix:
        *out = std::make_unique<EpicDatabaseImpl<batch::epic::MixProcs>>(config, threads, cfg, planner, executor, placement);
        break;
      case EpicProcedures::kYcsb:
        *out = std::make_unique<EpicDatabaseImpl<batch::epic::YcsbProcs>>(config, threads, cfg, planner, executor, placement);
        break;
      case EpicProcedures::kTpcc:
        *out = std::make_unique<EpicDatabaseImpl<batch::epic::TpccProcs>>(config, threads, cfg, planner, executor, placement);
        break;
      default: return Status::InvalidArgument("unknown procedure set");
    }
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("the Epic tables do not fit in memory");
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted(std::string("cannot start the Epic database's threads: ") + e.what());
  }
  return Status::Ok();
}

const char* epic_procedures_name(EpicProcedures p) {
  switch (p) {
    case EpicProcedures::kMix: return "mix";
    case EpicProcedures::kYcsb: return "ycsb";
    case EpicProcedures::kTpcc: return "tpcc";
  }
  return "unknown";
}

namespace {
// Finds `text` (any case) among the names of `values`; InvalidArgument naming `what` and the
// expected names otherwise.
template <class E, class NameOf>
Status parse_named(std::string_view text, std::initializer_list<E> values, NameOf name_of, const char* what, E* out) {
  std::string expected;
  for (E v : values) {
    if (iequals(text, name_of(v))) return *out = v, Status::Ok();
    expected += (expected.empty() ? "" : ", ") + std::string(name_of(v));
  }
  return Status::InvalidArgument(std::string("unknown ") + what + " '" + std::string(text) + "' (expected one of " +
                                 expected + ")");
}
}  // namespace

Status parse_epic_procedures(std::string_view text, EpicProcedures* out) {
  return parse_named(text, {EpicProcedures::kMix, EpicProcedures::kYcsb, EpicProcedures::kTpcc}, epic_procedures_name,
                     "Epic procedure set", out);
}

const char* epic_placement_name(EpicPlacement p) {
  switch (p) {
    case EpicPlacement::kAuto: return "auto";
    case EpicPlacement::kCpu: return "cpu";
    case EpicPlacement::kGpu: return "gpu";
    case EpicPlacement::kGpuTwin: return "gpu-twin";
    case EpicPlacement::kGpuExec: return "gpu-exec";
    case EpicPlacement::kGpuExecTwin: return "gpu-exec-twin";
  }
  return "unknown";
}

const char* epic_exec_order_name(EpicExecOrder o) {
  switch (o) {
    case EpicExecOrder::kAuto: return "auto";
    case EpicExecOrder::kSerial: return "serial";
    case EpicExecOrder::kPartitioned: return "partitioned";
  }
  return "unknown";
}

Status parse_epic_exec_order(std::string_view text, EpicExecOrder* out) {
  return parse_named(text, {EpicExecOrder::kAuto, EpicExecOrder::kSerial, EpicExecOrder::kPartitioned},
                     epic_exec_order_name, "Epic execution order", out);
}

Status parse_epic_placement(std::string_view text, EpicPlacement* out) {
  return parse_named(text,
                     {EpicPlacement::kAuto, EpicPlacement::kCpu, EpicPlacement::kGpu, EpicPlacement::kGpuTwin,
                      EpicPlacement::kGpuExec, EpicPlacement::kGpuExecTwin},
                     epic_placement_name, "Epic placement", out);
}

Status parse_epic_tables(std::string_view text, std::vector<EpicTable>* out) {
  std::vector<EpicTable> tables;
  auto number = [](std::string_view s, std::uint32_t* v) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
  };
  // Every comma-separated entry counts (an empty one, as after a trailing comma, is bad).
  for (std::size_t at = 0; !text.empty() && at <= text.size();) {
    std::size_t end = text.find(',', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view entry = text.substr(at, end - at);
    at = end + 1;
    std::vector<std::string_view> parts;
    for (std::size_t p = 0; p <= entry.size();) {
      std::size_t q = entry.find(':', p);
      if (q == std::string_view::npos) q = entry.size();
      parts.push_back(entry.substr(p, q - p));
      p = q + 1;
    }
    EpicTable t;
    const bool indexed = parts.size() == 4 && parts[3] == "indexed";
    if ((parts.size() != 3 && !indexed) || parts[0].empty() || !number(parts[1], &t.record_words) ||
        !number(parts[2], &t.capacity) || t.record_words == 0 || t.capacity == 0)
      return Status::InvalidArgument("bad Epic table '" + std::string(entry) +
                                     "' (expected name:words:capacity or name:words:capacity:indexed, both numbers > 0)");
    t.name = std::string(parts[0]);
    t.indexed = indexed;
    if (t.name.find_first_not_of("0123456789") == std::string::npos)
      return Status::InvalidArgument("Epic table name '" + t.name + "' is all digits (keys name tables by number too)");
    for (const EpicTable& o : tables)
      if (o.name == t.name) return Status::InvalidArgument("Epic table '" + t.name + "' named twice");
    tables.push_back(std::move(t));
  }
  EpicConfig probe;
  probe.tables = tables;
  if (!tables.empty())
    if (Status s = EpicDatabase::check(probe); !s.ok()) return s;
  *out = std::move(tables);
  return Status::Ok();
}

std::string format_epic_tables(const std::vector<EpicTable>& tables) {
  std::string s;
  for (const EpicTable& t : tables)
    s += (s.empty() ? "" : ",") + t.name + ":" + std::to_string(t.record_words) + ":" + std::to_string(t.capacity) +
         (t.indexed ? ":indexed" : "");
  return s;
}

}  // namespace duet
