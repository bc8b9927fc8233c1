// Runs the key commands one server thread owns as engine batches, with Redis's per-key
// semantics.
//
// Every key belongs to exactly one server thread (its shard: a hash of the key), and only
// that thread writes it (reads may also run on the reading connection's thread: see
// IoThread::route). So a thread can run a whole batch of commands on a key as one read and
// one write of the engine: it reads the keys whose commands need their value
// (one engine batch), computes every command in arrival order on the CPU (INCR, APPEND,
// SET NX/XX/GET, ...), and writes each changed key's final value (a second engine batch).
// The commands on one key are linearized together at the write (or at the read, for keys
// nobody changed), which keeps each client's order and makes read-modify-write commands
// atomic without locks. Commands whose first effect overwrites the key (SET, GETSET, DEL,
// MSET) skip the read: the write returns the previous value they answer with.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "duet/store.hpp"
#include "server/command.hpp"

namespace duet::server {

/// A command's place in its connection's reply order. Multi-key commands (MGET, MSET, DEL
/// and EXISTS on several keys) have one part per key, possibly on different threads; the
/// part that finishes last assembles the reply.
struct PendingReply {
  enum class Kind : std::uint8_t { kSingle, kArray, kSum, kAllOk };
  Kind kind = Kind::kSingle;
  const CommandDef* cmd = nullptr;  ///< the command (null: unknown, or a protocol error)
  bool error = false;               ///< the reply is an error (for metrics)
  std::uint64_t start_ns = 0;       ///< when the command was parsed (latency metrics)
  std::atomic<bool> done{false};    ///< bytes are final (release/acquire)
  std::atomic<std::uint32_t> parts_left{1};
  std::string bytes;                ///< the RESP reply
  std::vector<std::string> parts;   ///< per-key replies of a multi-key command

  /// Records part `i`'s reply, taking its bytes by swap (part gets a spare buffer back, so
  /// reply strings are recycled); returns true when this completed the whole reply.
  bool finish_part(std::uint32_t i, std::string& part);
};

/// One key's share of a command, as its shard runs it. The argument slots (value, delta, the
/// option bits) are filled by the command's KeyCommand::parse and read by its apply.
struct KeyOp {
  const CommandDef* cmd = nullptr;
  bool nx = false, xx = false, get = false;  ///< SET options
  bool resp3 = false;                        ///< the client speaks RESP3 (null encoding)
  unsigned db = 0;
  std::string key, value;                    ///< value: SET, GETSET, APPEND, MSET
  long long delta = 0;                       ///< INCR family
  PendingReply* reply = nullptr;
  std::uint32_t part = 0;
  void* conn = nullptr;                      ///< the connection to notify (opaque here)
  KvPath path = KvPath::kNone;               ///< engine path that answered (metrics)
};

/// Parses a whole int64 the way Redis does (no blanks, no '+', no leading zeros).
bool parse_int64(std::string_view s, long long* v);

/// Runs batches of KeyOps. Reuses its buffers across calls; one per thread.
class KeyBatchRunner {
 public:
  /// Returns the `kv` keyspace of database db for the batch's duration (a shared handle, so a
  /// concurrent FLUSHDB can swap the database without pulling it from under the batch), or
  /// null when it cannot be opened. The server checks a database's kind before routing.
  using SpaceOf = std::function<std::shared_ptr<KvSpace>(unsigned db)>;

  explicit KeyBatchRunner(SpaceOf space_of, std::size_t max_value_bytes)
      : space_of_(std::move(space_of)), env_{max_value_bytes} {}

  /// Runs ops (in arrival order; every key that an op writes is owned by the calling thread). Afterwards
  /// reply(i) holds op i's RESP reply (or error); the caller hands it to finish_part.
  /// Returns the engine requests sent (for batch-size metrics).
  std::size_t run(std::span<KeyOp*> ops);
  std::string& reply(std::size_t i) { return replies_[i]; }
  bool is_error(std::size_t i) const { return !replies_[i].empty() && replies_[i][0] == '-'; }

 private:
  struct Group {
    unsigned db;
    std::uint32_t first, last;   // op indices (linked through next_)
    bool blind;                  // first op overwrites: no read needed
    bool orig_exists = false;    // after the read (or the write, for blind groups)
    std::string orig;            // original value (read phase)
    KeyState state;              // state while computing
    bool dirty = false;
    std::int64_t first_mut = -1; // index of the first op that changed the key
    std::string error;           // engine error for the group's read
  };
  void compute(Group& g, std::span<KeyOp*> ops);
  std::size_t engine_phase(std::span<KeyOp*> ops, bool write);

  SpaceOf space_of_;
  KeyEnv env_;
  std::vector<Group> groups_;    // the first ngroups_ are this batch's (reused: strings keep capacity)
  std::size_t ngroups_ = 0;
  std::vector<std::uint32_t> table_;  // open addressing over (db, key): group index + 1, 0 = empty
  std::vector<std::uint32_t> next_;
  std::vector<std::string> replies_;
  std::vector<unsigned> dbs_;  // databases this batch touches
  std::vector<std::uint8_t> db_seen_;
  std::vector<std::shared_ptr<KvSpace>> spaces_;  // per database, held for the batch
  std::vector<KvRequest> reqs_;  // reused: result strings keep capacity
  std::vector<KvTrace> trace_;   // which engine path answered each request
  std::size_t nreqs_ = 0;
  std::vector<std::uint32_t> req_group_;
};

}  // namespace duet::server
