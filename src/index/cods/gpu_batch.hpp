// The GPU batch driver of the CODS structures (gpu_batch.cu): a hash set (a list is the hash set
// with one bucket) or a B-link tree in GPU memory, run by tiles of `group` lanes, one request per
// tile at a time. Plain C++ (no CUDA types), so callers need not be CUDA sources.
//
// Batch semantics are L-Slab's: every request is linearizable; the requests of one batch run
// concurrently, so two requests on one key in one batch take effect in some serial order. Each
// execute() runs on a stream of its own; concurrent execute() calls may overlap on the device.
//
// Nodes come from a pool in GPU memory of `pool_nodes` nodes that grows, doubling, up to
// `pool_max_nodes`. Nodes an update discards or replaces are reused only after every batch that
// could still read them has ended (the driver recycles them when no batch is in flight). A
// request that needs a node when the pool is empty reports kRetry having changed nothing; the
// driver then grows the pool (between batches: nodes never move) and runs those requests again
// within the same execute(). Only when the pool cannot grow (its maximum, or GPU memory is short)
// do requests stay kRetry, and execute() returns ResourceExhausted.
//
// make_cpu_structure and make_cpu_* (below) build the CPU twin of the same configuration
// behind the same GpuStructure interface.
#pragma once

#include <cstdint>
#include <memory>

#include "duet/status.hpp"
#include "index/cods/common.hpp"

namespace duet::cods::ds {

enum class GpuKind : std::uint8_t { kList = 0, kHashSet = 1, kTree = 2 };

/// What to build. Supported (keys_per_node, group): (6, 8), (14, 8), (14, 16), (30, 32), and
/// (6 | 14 | 30, 1) in kGroup mode; any other pair is InvalidArgument naming them.
/// The order in which a kGroup batch's requests reach the GPU's lanes. A batch's requests are
/// concurrent, so every order is one the batch semantics allow and none changes what an outcome
/// may be.
/// - kGetsFirst: every GET before every update, so a warp of GETs holds no lane that takes a
///   lock and waits on it. Costs a device pass counting the GETs and a read of the count (a
///   synchronisation); a batch of GETs only, or of updates only, then runs in index order. A
///   batch that mixes them costs a second pass (cub::DevicePartition) and 4 bytes per request
///   of scratch, kept between batches (allocated when a batch is larger than any before).
///   Batches of 2^31 requests or more run in index order.
/// - kIndex: index order.
/// - kAuto (the default): kGetsFirst for one lane per request, the list and the tree; kIndex for
///   the hash set on tiles, where GETs first measured 6-21% slower (docs/cods.md, "GETs first").
enum class GpuOrder : std::uint8_t { kAuto = 0, kGetsFirst = 1, kIndex = 2 };

struct GpuConfig {
  GpuKind kind = GpuKind::kHashSet;
  unsigned keys_per_node = 14;
  unsigned group = 16;  ///< lanes per request (kMixed: per GET): 1 (kGroup only), 8, 16 or 32
  GpuMode mode = GpuMode::kGroup;
  Regime regime = Regime::kFullyAtomic;
  std::uint64_t buckets = 1024;      ///< hash set only (a list has 1); 1 to 2^32
  std::uint64_t pool_nodes = 1u << 20;  ///< nodes in the pool at first, 1 to 2^32
  /// The most nodes the pool may grow to (pool_nodes to 2^32; GPU memory may stop it sooner).
  /// Set it to pool_nodes for a fixed pool.
  std::uint64_t pool_max_nodes = std::uint64_t(1) << 32;
  /// The order kGroup batches run in (GpuOrder; kMixed has its own rounds).
  GpuOrder order = GpuOrder::kAuto;
  /// Tests only: a negative control (Bug::kNone otherwise). Under a planted bug an operation that
  /// loops gives up with kRetry after a bounded number of steps per GPU thread; not with kMixed.
  /// A structure with a planted bug runs the test instantiation of the kernels (as does a batch
  /// with result.stamps set); production batches run kernels compiled without either.
  Bug planted = Bug::kNone;
};

class GpuStructure {
 public:
  virtual ~GpuStructure() = default;
  /// Runs a batch held in host memory (sets ignore values; tree inserts need them); with
  /// result.stamps set, records each request's tickets (common.hpp, BatchResult). Errors:
  /// InvalidArgument for a null array the batch needs (nothing runs), ResourceExhausted when the
  /// pool ran out and could not grow (requests marked kRetry changed nothing; the others ran),
  /// Internal on a CUDA failure. Unknown op codes are kInvalid per request.
  virtual Status execute(const Batch& batch, BatchResult& result) = 0;
  /// As execute(), with every array in GPU memory (no copies across the bus), stamps included.
  virtual Status execute_resident(const Batch& batch, BatchResult& result) = 0;
  /// Nodes taken from the pool's fresh memory so far.
  virtual std::uint64_t nodes_used() const = 0;
  /// Nodes in the pool now (pool_nodes, more once it grew).
  virtual std::uint64_t pool_capacity() const = 0;
};

/// Checks `config` as make_gpu_structure does before it looks for a GPU: OK, or InvalidArgument
/// naming the first problem: an unknown kind, regime or mode; a hash set's bucket count outside
/// [1, 2^32] (a list's or a tree's is not read); pool_nodes outside [1, 2^32]; pool_max_nodes
/// outside [pool_nodes, 2^32]; a (keys_per_node, group) pair that is not built (the message
/// lists those that are); a planted bug, or group 1, in kMixed mode. Plain C++
/// (gpu_batch_config.cpp), compiled in every build, with or without CUDA; touches no GPU.
Status check_gpu_config(const GpuConfig& config);

/// Creates a structure on the current GPU. In every build, with or without CUDA: InvalidArgument
/// for a null `out` or a bad configuration (check_gpu_config's status), before anything else;
/// then Unavailable without a GPU (in a build without CUDA, gpu_batch_none.cpp, always);
/// ResourceExhausted when GPU memory is short.
Status make_gpu_structure(const GpuConfig& config, std::unique_ptr<GpuStructure>* out);

/// `config` with its kind set to `kind` (a list has one bucket, whatever config.buckets says):
/// what the by-name factories below pass on.
inline GpuConfig as_kind(GpuConfig config, GpuKind kind) {
  config.kind = kind;
  if (kind == GpuKind::kList) config.buckets = 1;
  return config;
}

/// make_gpu_structure by name, in L-Slab's style: `config`'s kind is the name's (as_kind); the
/// other fields, the errors and the costs are as above.
inline Status make_gpu_list(const GpuConfig& config, std::unique_ptr<GpuStructure>* out) {
  return make_gpu_structure(as_kind(config, GpuKind::kList), out);
}
inline Status make_gpu_hash_set(const GpuConfig& config, std::unique_ptr<GpuStructure>* out) {
  return make_gpu_structure(as_kind(config, GpuKind::kHashSet), out);
}
inline Status make_gpu_blink_tree(const GpuConfig& config, std::unique_ptr<GpuStructure>* out) {
  return make_gpu_structure(as_kind(config, GpuKind::kTree), out);
}

// ---- The CPU twin (cpu_twin.cpp, plain C++, in every build): the same structure on the host,
// behind the same interface, so a caller (a test, a benchmark, a fallback without a GPU) swaps
// one for the other by configuration alone.

/// Creates the CPU twin of make_gpu_structure(config): cpu.hpp's front end (CpuHashSet, a list
/// being its one-bucket set as on the GPU; CpuBLinkTree) with config's kind, keys_per_node,
/// regime and buckets. Errors, in order: InvalidArgument for a null `out`; check_gpu_config's
/// status as is (the twin accepts what the GPU driver accepts); InvalidArgument for a planted
/// bug (config.planted selects the GPU's test instantiation of the kernels; the CPU's planted
/// bugs are set through a session's Hooks on cpu.hpp's templates, as the history tests do); a
/// (kind, keys_per_node, regime) that cpu.hpp's templates do not hold would be InvalidArgument
/// naming it (none of those the GPU builds: 6, 14 and 30 keys fit every kind and regime);
/// ResourceExhausted when a hash set's bucket heads cannot be mapped. Cost: a hash set maps its
/// heads (buckets nodes, zeroed), the others allocate one node. Needs no GPU.
///
/// The twin differs from the GPU structure only where the GPU's hardware is concerned:
///  * group and mode only choose the GPU's lanes: they are checked, then ignored; the twin's
///    outcomes are those of the GPU for every group and mode;
///  * execute() runs the batch on the calling thread, one request after another in index order
///    (cpu.hpp's execute). Each request is linearizable as on the GPU; two requests on one key
///    in one batch take effect in index order, which is one of the orders the GPU may give.
///    Several threads may call execute() at once (each call borrows a session of its own);
///  * execute_resident() is execute(): the twin's "resident" memory is host memory;
///  * with result.stamps set, each request draws its two tickets from one counter of the
///    structure, just before it starts and just after it ends, as the GPU's kernels do;
///  * nodes come from the host heap and are freed through the front end's epoch manager: there
///    is no pool, so pool_nodes and pool_max_nodes are checked and then ignored, nodes_used()
///    and pool_capacity() are 0, and ResourceExhausted (requests left kRetry, having changed
///    nothing) comes only when the heap is out of memory, where a GPU with a fixed pool runs
///    out sooner.
Status make_cpu_structure(const GpuConfig& config, std::unique_ptr<GpuStructure>* out);

/// make_cpu_structure by name, as make_gpu_list / make_gpu_hash_set / make_gpu_blink_tree (the
/// name sets the kind; a list has one bucket); the other fields, errors and costs as above.
inline Status make_cpu_list(const GpuConfig& config, std::unique_ptr<GpuStructure>* out) {
  return make_cpu_structure(as_kind(config, GpuKind::kList), out);
}
inline Status make_cpu_hash_set(const GpuConfig& config, std::unique_ptr<GpuStructure>* out) {
  return make_cpu_structure(as_kind(config, GpuKind::kHashSet), out);
}
inline Status make_cpu_blink_tree(const GpuConfig& config, std::unique_ptr<GpuStructure>* out) {
  return make_cpu_structure(as_kind(config, GpuKind::kTree), out);
}

/// The node reads a CPU twin's calls have made so far (cpu_env.hpp's Counters::node_reads over
/// its sessions: one per coalesced node get, so a search of a list of n keys in full nodes reads
/// ceil(n/K), plus the keyless head in the elementwise regime), counting the calls that have
/// returned. InvalidArgument when `twin` did not come from make_cpu_structure or *reads is null.
/// Cost: a lock and a sum over the twin's sessions (as many as its calls ever ran at once).
Status cpu_node_reads(const GpuStructure& twin, std::uint64_t* reads);

}  // namespace duet::cods::ds
