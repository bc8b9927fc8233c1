#include <algorithm>

#include "txn/factory.hpp"

namespace duet {

// Store's typed accessors for the kind (declared in duet/store.hpp).
Status Store::create_txn(std::string_view name, std::shared_ptr<TxnSpace>* out) {
  std::shared_ptr<Keyspace> k;
  Status s = create(name, KeyspaceKind::kTxn, &k);
  if (!s.ok()) return s;
  *out = std::static_pointer_cast<TxnSpace>(std::move(k));
  return Status::Ok();
}

Status Store::txn(std::string_view name, std::shared_ptr<TxnSpace>* out) {
  std::shared_ptr<Keyspace> k;
  Status s = find(name, &k);
  if (!s.ok()) return s;
  if (k->kind() != KeyspaceKind::kTxn)
    return Status::InvalidArgument("keyspace '" + std::string(name) + "' is of kind " + keyspace_kind_name(k->kind()) +
                                   ", not " + keyspace_kind_name(KeyspaceKind::kTxn));
  *out = std::static_pointer_cast<TxnSpace>(std::move(k));
  return Status::Ok();
}

namespace txn {

Status make_txn_space(std::string_view name, const StoreConfig& config, std::shared_ptr<Keyspace>* out) {
  TxnConfig c;
  c.memory_budget_bytes = config.memory_budget_bytes;
  c.clock = config.txn_clock;
  // The store's limits bound the kind's own (64 KiB keys, 512 MiB values) from below only.
  c.limits.max_key_bytes = std::min(c.limits.max_key_bytes, config.limits.max_key_bytes);
  c.limits.max_value_bytes = std::min(c.limits.max_value_bytes, config.limits.max_value_bytes);
  std::shared_ptr<TxnSpace> t;
  Status s = TxnSpace::open(std::string(name), c, &t);
  if (!s.ok()) return s;
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace txn
}  // namespace duet
