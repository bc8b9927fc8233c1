// The pieces behind ProcedureRegistry (registry.cpp) that the C ABI's host functions
// (host_api.cpp) share: one call attempt's state (the duet_txn's impl) and the reply builder
// (the duet_reply's impl).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compute/column_mirror.hpp"
#include "compute/compute.hpp"
#include "duet/procedure.h"
#include "duet/procedure.hpp"
#include "duet/txn.hpp"

struct duet_snapshot {
  duet::TxnSnapshot s;
};
struct duet_table {
  duet::compute::Table t;
};

namespace duet::procedure {

/// The compute engine procedures share (opened at first use), the models they loaded and the
/// column mirrors they attached.
class Shared {
 public:
  /// The processor the engine is opened on (set before first use).
  compute::Device device = compute::Device::kAuto;
  /// The engine, opened on first use. Unavailable (with the reason) when it cannot be.
  Status engine(std::shared_ptr<compute::Engine>* out);
  /// The id of model `m`, loading it the first time its exact weights are seen.
  Status model(const compute::Mlp& m, compute::ModelId* id);

  /// A mirror as a procedure defined it (compared field by field on a second attach).
  struct MirrorDef {
    std::string name, lo, hi;
    std::vector<compute::Field> fields;
    std::vector<std::string> columns;
    std::uint32_t key_len = 0, id_from = 0;
    bool device_copy = false;
    unsigned query_threads = 1;
    bool operator==(const MirrorDef& o) const;
  };
  /// The most column mirrors one keyspace takes (each is a commit observer of it, so each adds
  /// its cost to every commit).
  static constexpr std::size_t kMaxMirrorsPerKeyspace = 8;
  /// Attaches `def` to `space` unless that keyspace already has a mirror of its name: Ok when
  /// it has (or now has) this very definition; InvalidArgument when its mirror of that name is
  /// defined otherwise, when it already has kMaxMirrorsPerKeyspace, or when the attach refuses
  /// the definition. Attaching holds the mirrors' lock (find_mirror waits meanwhile).
  Status attach_mirror(const std::shared_ptr<TxnSpace>& space, const MirrorDef& def);
  /// The mirror named `name` on `space` (*threads: its query threads); NotFound when none.
  Status find_mirror(const TxnSpace* space, std::string_view name, std::shared_ptr<compute::ColumnMirror>* out,
                     unsigned* threads);

 private:
  struct Mirror {
    std::weak_ptr<TxnSpace> space;
    MirrorDef def;
    std::shared_ptr<compute::ColumnMirror> mirror;
  };
  std::mutex mirrors_m_;
  std::vector<Mirror> mirrors_;  ///< by keyspace and name; entries of dropped keyspaces are pruned
  std::mutex m_;
  std::shared_ptr<compute::Engine> engine_;
  std::map<std::string, compute::ModelId> models_;  ///< serialized model -> id
};

/// One run of a procedure: its transaction, what it has been handed (kept until it returns),
/// and its compute context (created at its first operator).
struct CallState {
  Txn* txn = nullptr;
  const std::shared_ptr<TxnSpace>* space = nullptr;  ///< the call's keyspace (the caller holds it)
  bool read_only = false;
  std::uint32_t attempt = 0;
  Shared* shared = nullptr;
  std::deque<std::string> strings;
  std::deque<std::vector<duet_bytes>> byte_lists;
  std::deque<duet_snapshot> snapshots;
  std::deque<duet_table> tables;
  std::deque<compute::Selection> selections;
  std::deque<std::vector<float>> floats;
  std::unique_ptr<compute::Context> ctx;
  void* stream = nullptr;  ///< the call's pooled CUDA stream, once asked for
  ~CallState();
  /// The compute context (created at first use).
  Status context(compute::Context** out);
};

/// The reply builder: one value, arrays filled in order.
struct ReplyState {
  ProcReply root;
  bool started = false;
  std::vector<std::pair<ProcReply*, std::size_t>> open;  ///< unfilled arrays: node, expected items
  /// Adds a value; false when the reply is already complete.
  bool add(ProcReply v);
  bool complete() const { return started && open.empty(); }
};

/// The host's function table (host_api.cpp).
const duet_api* host_api();

/// The call's pooled CUDA stream (gpu_stream.cu; gpu_stream_none.cpp answers Unavailable).
Status gpu_stream_lease(void** stream);
void gpu_stream_return(void* stream);

}  // namespace duet::procedure
