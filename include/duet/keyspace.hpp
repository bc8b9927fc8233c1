// Keyspace: what every kind of keyspace a Store holds offers (its kind, name, size and cursor
// iteration). Each kind adds its own operations in its own header (`kv`: duet/kv.hpp).
//
// Handles are std::shared_ptr<Keyspace> (or of the kind's class) from Store: a handle stays
// valid, and every call on it works, after Store::drop() of its name and after the Store itself
// is destroyed; the keyspace is destroyed when its last handle goes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "duet/status.hpp"

namespace duet {

/// The kinds of keyspace a Store can hold.
enum class KeyspaceKind : std::uint8_t {
  kKv = 0,     ///< KVCG key-value keyspace (duet/kv.hpp, docs/kv.md)
  kTxn = 1,    ///< SnapKV snapshot-isolation transactions over ordered keys (duet/txn.hpp, docs/txn.md)
  kBatch = 2,  ///< deterministic batched transactions: Epic epochs, OranguTAN transfer blocks (docs/batch.md)
};

/// The kind's stable lower-case name ("kv", "txn", "batch"); "unknown" for a value outside the enum.
const char* keyspace_kind_name(KeyspaceKind kind);

/// Parses a kind's name ("kv", "txn", "batch"). InvalidArgument, naming the known kinds, for anything else.
Status parse_keyspace_kind(std::string_view text, KeyspaceKind* out);

/// What every keyspace kind offers. Every member may be called from any number of threads.
class Keyspace {
 public:
  virtual ~Keyspace() = default;
  virtual KeyspaceKind kind() const = 0;
  /// The name it was created with (unchanged by a drop).
  virtual const std::string& name() const = 0;
  /// Keys that exist. Exact when no write is in flight (with writes in flight, it is between
  /// the counts before and after them). O(1). The default (a keyspace that does not count)
  /// answers 0.
  virtual std::uint64_t size() const { return 0; }
  /// Cursor iteration, with Redis SCAN's guarantee: starting at cursor 0 and calling again with
  /// *next until it is 0 returns every key that existed during the whole iteration at least
  /// once (a key may come back more than once; keys written or deleted meanwhile may or may not
  /// appear). Each call appends about `count` keys (possibly none) to *keys. The default
  /// (a keyspace that cannot be iterated) sets *next to 0 and answers kUnavailable.
  virtual Status scan(std::uint64_t cursor, std::size_t count, std::vector<std::string>* keys, std::uint64_t* next);
};

}  // namespace duet
