// The embedded Duet engine: a Store holds named keyspaces of several kinds (duet/keyspace.hpp)
// that share one device and one memory budget. Kinds: `kv` (duet/kv.hpp). See docs/kv.md for the
// `kv` keyspace and docs/architecture.md for the code map.
//
// Thread safety: every member of Store may be called from any number of threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "duet/batch.hpp"
#include "duet/keyspace.hpp"
#include "duet/kv.hpp"
#include "duet/status.hpp"
#include "duet/txn.hpp"

namespace duet {

class BatchSpace;  // duet/batch.hpp

/// Which processor runs the Canonical Store.
enum class DeviceChoice : std::uint8_t {
  kAuto = 0,  ///< the GPU when one is present and usable, otherwise the CPU twin
  kCpu = 1,   ///< the CPU twin, even on a machine with a GPU
  kGpu = 2,   ///< the GPU; opening fails with kUnavailable when there is none
};

/// Parses "auto", "cpu" or "gpu"; InvalidArgument otherwise.
Status parse_device_choice(std::string_view text, DeviceChoice* out);
const char* device_choice_name(DeviceChoice d);

/// The workload measure_devices() runs on each processor.
struct DeviceProbe {
  unsigned threads = 4;              ///< client threads (the server passes its I/O threads), >= 1
  std::size_t batch = 256;           ///< requests per batch, >= 1
  unsigned in_flight = 2;            ///< batches each thread keeps submitted, >= 1
  std::uint64_t keys = 1u << 18;     ///< keys prefilled and drawn uniformly, >= 1
  double read_fraction = 0.9;        ///< GETs; the rest are PUTs of 16-byte values
  std::uint32_t millis = 300;        ///< measured time per processor (after a third as warm-up), >= 1
};

/// Everything a Store needs to open. Every field has a sensible default.
struct StoreConfig {
  DeviceChoice device = DeviceChoice::kAuto;
  /// Bytes of host memory the store may use for values, keys, the Hot Cache and the Epic tables
  /// of `batch` keyspaces; 0 = half of physical memory. Writes that would exceed it get
  /// kResourceExhausted, and so does opening a batch keyspace whose tables would.
  std::uint64_t memory_budget_bytes = 0;
  /// Keys each keyspace's Canonical Store is sized for up front (it grows beyond).
  std::uint64_t expected_keys = 1u << 20;
  /// Upper bound on each Canonical Store's overflow slabs (L-Slab's pool; 0: no bound beyond
  /// memory). A write that would need more gets kResourceExhausted and changes nothing.
  std::uint64_t max_store_slabs = 0;
  /// Entries the Hot Cache of each keyspace is sized for (it grows beyond on collisions).
  std::uint64_t hot_cache_entries = 1u << 16;
  /// Orchestrator threads feeding the Canonical Store, each with its own stream (0: 2 on the
  /// CPU twin, 4 with a GPU).
  unsigned orchestrators = 0;
  /// Largest aggregated batch one orchestrator sends at once (0: 2^16 on a GPU, 2^12 on the CPU).
  std::size_t max_aggregate = 0;
  /// CPU twin only: worker threads used by one Canonical Store batch (0: 1).
  unsigned cpu_store_threads = 0;
  KvLimits limits;
  RouterConfig router;
  /// With device kAuto on a machine with a GPU: decide by measure_devices(auto_probe) at open
  /// (about a second) instead of taking the GPU because it is there. device_description()
  /// then gives both rates. `duet server` turns it on, with a probe of its I/O threads.
  bool measure_auto_device = false;
  DeviceProbe auto_probe;
  /// `batch` keyspaces: the Epic database each one opens beside its accounts (none while
  /// `epic.tables` is empty; docs/epic.md).
  EpicConfig epic;
  /// `txn` keyspaces: their timestamp source (TxnConfig::clock; the TSC is refused by
  /// create() with InvalidArgument where it cannot be used).
  TxnClock txn_clock = TxnClock::kCounter;
};

/// The memory budget a Store opened with `config` enforces, in bytes: memory_budget_bytes, or
/// half of physical memory when that is 0 (4 GiB where the system does not say).
std::uint64_t effective_memory_budget(const StoreConfig& config);

/// What measure_devices() found.
struct DeviceMeasurement {
  DeviceChoice chosen = DeviceChoice::kCpu;  ///< kGpu or kCpu
  double gpu_requests_per_s = 0;             ///< 0: not measured
  double cpu_requests_per_s = 0;             ///< 0: not measured
  std::string reason;                        ///< one line for logs and INFO
};

/// Decides DeviceChoice::kAuto by measurement: with a usable GPU, runs the probe's workload on a
/// temporary keyspace whose Canonical Store is on the GPU, then on one on the CPU (same
/// configuration otherwise), and chooses the faster (the GPU on a tie). Without a GPU it
/// chooses the CPU and measures nothing. Costs about 2 x 4/3 x probe.millis plus two prefills
/// of probe.keys keys, and the probe's memory twice over; the caller's own stores are not
/// touched. kInvalidArgument for a probe field out of range (naming it) or a bad configuration;
/// an error opening either store is returned as is.
Status measure_devices(const StoreConfig& config, const DeviceProbe& probe, DeviceMeasurement* out);

/// The engine: named keyspaces sharing one device, memory budget and orchestrators' settings.
///
/// Handles are shared (std::shared_ptr): a handle keeps working after its keyspace is dropped
/// and after the Store is destroyed; a keyspace is destroyed, and what it holds freed, when its
/// last handle goes (on the thread that releases it). Names are unique among the keyspaces
/// the Store holds now, whatever their kind.
class Store {
 public:
  /// Opens a store. kUnavailable when device is kGpu and no GPU can be used; kInvalidArgument
  /// for a bad configuration (the message names the field).
  static Status open(const StoreConfig& config, std::unique_ptr<Store>* out);
  virtual ~Store() = default;

  /// Creates a keyspace of `kind` named `name`. kInvalidArgument for an empty or existing name
  /// or an unknown kind; kResourceExhausted or kInternal when its structures cannot be built.
  virtual Status create(std::string_view name, KeyspaceKind kind, std::shared_ptr<Keyspace>* out) = 0;
  /// The keyspace named `name`, of any kind; kNotFound when there is none.
  virtual Status find(std::string_view name, std::shared_ptr<Keyspace>* out) = 0;
  /// Forgets the name at once (it can be created again, and find() no longer sees it); the
  /// keyspace itself is destroyed when its last handle goes, so handles taken before keep
  /// working. kNotFound when there is no keyspace of that name.
  virtual Status drop(std::string_view name) = 0;

  /// create(name, KeyspaceKind::kKv, ...), typed.
  Status create_kv(std::string_view name, std::shared_ptr<KvSpace>* out);
  /// find(name, ...), typed: kNotFound when there is none; kInvalidArgument, naming both kinds,
  /// when the keyspace is of another kind.
  Status kv(std::string_view name, std::shared_ptr<KvSpace>* out);
  /// create(name, KeyspaceKind::kBatch, ...) and find(name, ...), typed as for kv (duet/batch.hpp).
  Status create_batch(std::string_view name, std::shared_ptr<BatchSpace>* out);
  Status batch(std::string_view name, std::shared_ptr<BatchSpace>* out);

  /// create(name, KeyspaceKind::kTxn, ...), typed (default TxnConfig; TxnSpace::open takes any).
  Status create_txn(std::string_view name, std::shared_ptr<TxnSpace>* out);
  /// find(name, ...), typed, as kv() is.
  Status txn(std::string_view name, std::shared_ptr<TxnSpace>* out);

  /// Names of the keyspaces, in creation order.
  virtual std::vector<std::string> keyspaces() const = 0;
  /// Where the Canonical Store runs and why, e.g. "gpu: NVIDIA H200" or "cpu: no CUDA device".
  virtual std::string device_description() const = 0;
  virtual const StoreConfig& config() const = 0;
};

}  // namespace duet
