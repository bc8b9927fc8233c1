// The `batch` keyspace's implementation (duet/batch.hpp): account keys, the account table, the
// ordered submission queue and the single-transfer batcher, shared by the engines that plug in
// (OranguTAN today; Epic's epochs later join the same queue as another kind of job).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "duet/batch.hpp"
#include "duet/status.hpp"

namespace duet::batch {

/// Opens a `batch` keyspace. `gpu_allowed` is false when the Store runs on the CPU (then the
/// conflict DAG is built on the CPU whatever dag_device says). InvalidArgument for a bad
/// configuration (naming the field); kUnavailable for dag_device gpu without a GPU.
Status open_batch_space(std::string name, const BatchConfig& config, bool gpu_allowed,
                        std::shared_ptr<BatchSpace>* out);

/// Store's factory for KeyspaceKind::kBatch: open_batch_space with the default BatchConfig and
/// the store's Epic settings (StoreConfig::epic).
Status make_batch_keyspace(std::string_view name, bool gpu_allowed, const EpicConfig& epic,
                           std::shared_ptr<Keyspace>* out);

/// Maps account keys to record ids: open addressing with linear probing, grown by rehashing.
/// Not thread-safe for writers; lookups may run concurrently with each other.
class AccountIndex {
 public:
  AccountIndex();
  /// The record id of `key`, or UINT32_MAX.
  std::uint32_t find(std::uint64_t key) const;
  /// Inserts key -> id (key must be absent).
  void insert(std::uint64_t key, std::uint32_t id);
  std::size_t size() const { return size_; }

 private:
  void grow();
  std::vector<std::uint64_t> keys_;
  std::vector<std::uint32_t> ids_;
  std::size_t mask_ = 0, size_ = 0;
};

}  // namespace duet::batch
