// The txn keyspace's factory for Store::create (src/kv/store.cpp).
#pragma once

#include <memory>
#include <string_view>

#include "duet/store.hpp"
#include "duet/txn.hpp"

namespace duet::txn {

/// A txn keyspace with default settings, bounded by the store's memory budget when one is set.
Status make_txn_space(std::string_view name, const StoreConfig& config, std::shared_ptr<Keyspace>* out);

}  // namespace duet::txn
