// Store: opens the device, names the keyspaces, and shares the memory budget and epoch manager
// with them (kv::StoreResources, which lives as long as the Store or any keyspace does).

#include <algorithm>
#include <mutex>
#include <system_error>
#include <unordered_map>

#include "batch/batch_space.hpp"
#include "duet/store.hpp"
#include "gpu/device.hpp"
#include "kv/hot_cache.hpp"
#include "kv/kv_space.hpp"
#include "mem/host_memory.hpp"
#include "txn/factory.hpp"

namespace duet {

Status parse_device_choice(std::string_view t, DeviceChoice* out) {
  if (t == "auto") *out = DeviceChoice::kAuto;
  else if (t == "cpu") *out = DeviceChoice::kCpu;
  else if (t == "gpu") *out = DeviceChoice::kGpu;
  else return Status::InvalidArgument("device must be auto, cpu or gpu, got '" + std::string(t) + "'");
  return Status::Ok();
}

const char* device_choice_name(DeviceChoice d) {
  return d == DeviceChoice::kCpu ? "cpu" : d == DeviceChoice::kGpu ? "gpu" : "auto";
}

Status parse_router_mode(std::string_view t, RouterMode* out) {
  if (t == "learned" || t == "kvcg") *out = RouterMode::kLearned;
  else if (t == "all-cold" || t == "kvg") *out = RouterMode::kAllCold;
  else if (t == "all-hot" || t == "kvc") *out = RouterMode::kAllHot;
  else return Status::InvalidArgument("router mode must be learned, all-cold or all-hot, got '" + std::string(t) + "'");
  return Status::Ok();
}

const char* router_mode_name(RouterMode m) {
  return m == RouterMode::kAllCold ? "all-cold" : m == RouterMode::kAllHot ? "all-hot" : "learned";
}

const char* keyspace_kind_name(KeyspaceKind k) {
  switch (k) {
    case KeyspaceKind::kKv: return "kv";
    case KeyspaceKind::kTxn: return "txn";
    case KeyspaceKind::kBatch: return "batch";
  }
  return "unknown";
}

Status parse_keyspace_kind(std::string_view t, KeyspaceKind* out) {
  for (KeyspaceKind k : {KeyspaceKind::kKv, KeyspaceKind::kTxn, KeyspaceKind::kBatch}) {
    if (t == keyspace_kind_name(k)) {
      *out = k;
      return Status::Ok();
    }
  }
  return Status::InvalidArgument("unknown keyspace kind '" + std::string(t) + "' (the kinds are: kv, txn, batch)");
}

Status Keyspace::scan(std::uint64_t, std::size_t, std::vector<std::string>*, std::uint64_t* next) {
  *next = 0;
  return Status::Unavailable("keyspace '" + name() + "' cannot be iterated");
}

Status Store::create_kv(std::string_view name, std::shared_ptr<KvSpace>* out) {
  std::shared_ptr<Keyspace> k;
  Status s = create(name, KeyspaceKind::kKv, &k);
  if (!s.ok()) return s;
  if (k->kind() != KeyspaceKind::kKv)
    return Status::Internal("create of a kv keyspace made a " + std::string(keyspace_kind_name(k->kind())) + " one");
  *out = std::static_pointer_cast<KvSpace>(std::move(k));
  return Status::Ok();
}

Status Store::kv(std::string_view name, std::shared_ptr<KvSpace>* out) {
  std::shared_ptr<Keyspace> k;
  Status s = find(name, &k);
  if (!s.ok()) return s;
  if (k->kind() != KeyspaceKind::kKv)
    return Status::InvalidArgument("keyspace '" + std::string(name) + "' is of kind " + keyspace_kind_name(k->kind()) +
                                   ", not " + keyspace_kind_name(KeyspaceKind::kKv));
  *out = std::static_pointer_cast<KvSpace>(std::move(k));
  return Status::Ok();
}

namespace {

/// KvSpace's default batch in flight: already executed, holding its status.
class DoneBatch final : public KvInFlight {
 public:
  explicit DoneBatch(Status s) : status(std::move(s)) {}
  Status status;
};

}  // namespace

std::unique_ptr<KvInFlight> KvSpace::submit(std::span<KvRequest> batch, std::span<KvTrace> trace) {
  return std::make_unique<DoneBatch>(execute(batch, trace));
}

Status KvSpace::finish(std::unique_ptr<KvInFlight> batch) {
  auto* done = dynamic_cast<DoneBatch*>(batch.get());
  return done ? done->status : Status::InvalidArgument("finish() of a batch this keyspace did not start");
}

std::uint64_t effective_memory_budget(const StoreConfig& c) {
  return c.memory_budget_bytes ? c.memory_budget_bytes : mem::half_of_physical_memory();
}

namespace {

Status validate(const StoreConfig& c) {
  if (c.router.bins == 0) return Status::InvalidArgument("router.bins must be at least 1");
  if (!(c.router.threshold >= 0)) return Status::InvalidArgument("router.threshold must be >= 0");
  if (c.limits.max_key_bytes == 0) return Status::InvalidArgument("limits.max_key_bytes must be at least 1");
  if (c.expected_keys == 0) return Status::InvalidArgument("expected_keys must be at least 1");
  if (c.orchestrators > 256) return Status::InvalidArgument("orchestrators must be at most 256");
  return Status::Ok();
}

class StoreImpl final : public Store {
 public:
  StoreImpl(const StoreConfig& c, bool gpu, std::string why)
      : config_(c), gpu_(gpu), why_(std::move(why)), shared_(std::make_shared<kv::StoreResources>(effective_memory_budget(c))) {}

  /// Releases the Store's handles: keyspaces no one else holds go now; the rest live on, and
  /// keep the shared resources alive through their own share.
  ~StoreImpl() override = default;

  Status create(std::string_view name, KeyspaceKind kind, std::shared_ptr<Keyspace>* out) override {
    if (name.empty()) return Status::InvalidArgument("keyspace name is empty");
    if (std::string_view(keyspace_kind_name(kind)) == "unknown")
      return Status::InvalidArgument("unknown keyspace kind " + std::to_string(static_cast<int>(kind)) +
                                     " (the kinds are: kv, txn, batch)");
    // Build outside the lock (sizing a Canonical Store takes a while); a racing create of the
    // same name is refused below and its keyspace freed.
    {
      std::lock_guard<std::mutex> lk(m_);
      if (find_locked(name) != spaces_.end()) return already_exists(name);
    }
    std::shared_ptr<Keyspace> space;
    Status s;
    try {
      s = make_space(name, kind, &space);
    } catch (const std::bad_alloc&) {
      s = Status::ResourceExhausted("keyspace '" + std::string(name) + "': out of memory while building it");
    } catch (const std::system_error& e) {
      s = Status::ResourceExhausted("keyspace '" + std::string(name) + "': cannot start its threads: " + e.what());
    }
    if (!s.ok()) return s;
    {
      std::lock_guard<std::mutex> lk(m_);
      if (find_locked(name) != spaces_.end()) return already_exists(name);
      spaces_.push_back(Entry{std::string(name), space});
    }
    *out = std::move(space);
    return Status::Ok();
  }

  Status find(std::string_view name, std::shared_ptr<Keyspace>* out) override {
    std::lock_guard<std::mutex> lk(m_);
    const auto it = find_locked(name);
    if (it == spaces_.end()) return not_found(name);
    *out = it->space;
    return Status::Ok();
  }

  Status drop(std::string_view name) override {
    std::shared_ptr<Keyspace> victim;
    {
      std::lock_guard<std::mutex> lk(m_);
      const auto it = find_locked(name);
      if (it == spaces_.end()) return not_found(name);
      victim = std::move(it->space);
      spaces_.erase(it);
    }
    victim.reset();  // outside the lock: freeing a large keyspace takes a while
    return Status::Ok();
  }

  std::vector<std::string> keyspaces() const override {
    std::lock_guard<std::mutex> lk(m_);
    std::vector<std::string> names;
    names.reserve(spaces_.size());
    for (const auto& e : spaces_) names.push_back(e.name);
    return names;
  }

  std::string device_description() const override { return (gpu_ ? "gpu: " : "cpu: ") + why_; }
  const StoreConfig& config() const override { return config_; }

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<Keyspace> space;
  };

  static Status not_found(std::string_view name) {
    return Status::NotFound("no keyspace named '" + std::string(name) + "'");
  }
  static Status already_exists(std::string_view name) {
    return Status::InvalidArgument("keyspace '" + std::string(name) + "' already exists");
  }

  std::vector<Entry>::iterator find_locked(std::string_view name) {
    return std::find_if(spaces_.begin(), spaces_.end(), [&](const Entry& e) { return e.name == name; });
  }

  /// Builds a keyspace of `kind`: each kind's module supplies its own factory.
  Status make_space(std::string_view name, KeyspaceKind kind, std::shared_ptr<Keyspace>* out) {
    switch (kind) {
      case KeyspaceKind::kKv: return make_kv(name, out);
      case KeyspaceKind::kTxn: return txn::make_txn_space(name, config_, out);
      case KeyspaceKind::kBatch: return make_batch(name, out);
    }
    return Status::InvalidArgument("unknown keyspace kind");
  }

  /// A batch keyspace whose Epic tables (if any) are charged to the memory budget for as long as
  /// it lives: ResourceExhausted, nothing allocated, when they do not fit what the budget has left.
  Status make_batch(std::string_view name, std::shared_ptr<Keyspace>* out) {
    const std::uint64_t bytes = config_.epic.tables.empty() ? 0 : EpicDatabase::host_bytes(config_.epic);
    if (bytes && !shared_->budget.charge(bytes).ok())
      return Status::ResourceExhausted("the Epic tables of keyspace '" + std::string(name) + "' take " +
                                       std::to_string(bytes) + " bytes, more than the memory budget has left (" +
                                       std::to_string(shared_->budget.limit()) + " bytes in all, maxmemory)");
    // The charge goes back with the keyspace's last handle, or now if it is not built.
    auto refund = [shared = shared_, bytes] {
      if (bytes) shared->budget.release(bytes);
    };
    std::shared_ptr<Keyspace> space;
    Status s;
    try {
      s = batch::make_batch_keyspace(name, gpu_, config_.epic, &space);
    } catch (...) {
      refund();
      throw;
    }
    if (!s.ok()) return refund(), s;
    if (!bytes) return *out = std::move(space), s;
    Keyspace* raw = space.get();
    *out = std::shared_ptr<Keyspace>(raw, [space = std::move(space), refund](Keyspace*) mutable {
      space.reset();
      refund();
    });
    return s;
  }

  Status make_kv(std::string_view name, std::shared_ptr<Keyspace>* out) {
    lslab::Config lc;
    lc.expected_keys = config_.expected_keys;
    lc.threads = config_.cpu_store_threads ? config_.cpu_store_threads : 1;
    if (config_.max_store_slabs) {
      lc.max_pool_slabs = config_.max_store_slabs;
      lc.initial_pool_slabs = std::min<std::uint64_t>(config_.max_store_slabs, 1024);
    }
    // The Hot Cache's and the Canonical Store's bucket arrays are allocated whole, outside the
    // budget (which counts keys and values as they come, so small budgets stay usable). A Hot
    // Cache larger than half of physical memory is refused rather than allocated: the kernel
    // would kill the process while its buckets are being built.
    const std::uint64_t hot = kv::HotCache::initial_bytes(config_.hot_cache_entries);
    if (const std::uint64_t half = mem::half_of_physical_memory(); hot > half)
      return Status::ResourceExhausted("the Hot Cache buckets of keyspace '" + std::string(name) + "' take " +
                                       std::to_string(hot) + " bytes, more than half of physical memory (" +
                                       std::to_string(half) + " bytes; hot-cache-entries sizes them)");
    std::unique_ptr<lslab::Map> map;
    Status s = gpu_ ? lslab::make_gpu_map(lc, &map) : lslab::make_cpu_map(lc, &map);
    if (!s.ok()) return s;
    std::unique_ptr<kv::KvSpaceImpl> space;
    s = kv::KvSpaceImpl::open(std::string(name), config_, std::move(map), shared_, &space);
    if (!s.ok()) return s;
    *out = std::move(space);
    return Status::Ok();
  }

  const StoreConfig config_;
  const bool gpu_;
  const std::string why_;
  const std::shared_ptr<kv::StoreResources> shared_;
  mutable std::mutex m_;
  std::vector<Entry> spaces_;  ///< in creation order
};

}  // namespace

Status Store::open(const StoreConfig& config, std::unique_ptr<Store>* out) {
  Status s = validate(config);
  if (!s.ok()) return s;
  const gpu::DeviceInfo& d = gpu::device();
  bool use_gpu = false;
  std::string why;
  switch (config.device) {
    case DeviceChoice::kGpu:
      if (!d.present) return Status::Unavailable("device gpu was requested but there is none: " + d.reason);
      use_gpu = true;
      why = d.name;
      break;
    case DeviceChoice::kCpu:
      why = d.present ? "chosen by configuration" : d.reason;
      break;
    default:
      use_gpu = d.present;
      why = d.present ? d.name : d.reason;
      if (d.present && config.measure_auto_device) {
        StoreConfig probe_cfg = config;
        probe_cfg.measure_auto_device = false;
        DeviceMeasurement m;
        s = measure_devices(probe_cfg, config.auto_probe, &m);
        if (!s.ok()) return Status(s.code(), "device auto: measuring the devices failed: " + s.message());
        use_gpu = m.chosen == DeviceChoice::kGpu;
        why = "chosen by measurement: " + m.reason;
      }
  }
  *out = std::make_unique<StoreImpl>(config, use_gpu, why);
  return Status::Ok();
}

}  // namespace duet
