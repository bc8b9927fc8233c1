// Runs the key commands one server thread owns as engine batches, with Redis's per-key
// semantics, keeping several batches in flight.
//
// Every key belongs to exactly one server thread (its shard: a hash of the key), and only
// that thread reads it in order to write it (reads, and plain overwrites guarded by
// WriteGuards, may also run on the client's thread: see IoThread::route). So a thread can
// run a whole batch of commands on a key as one read and one write of the engine: it reads
// the keys whose commands need their value (one engine batch), computes every command in
// arrival order on the CPU (INCR, APPEND, SET NX/XX/GET, ...), and writes each changed key's
// final value (a second engine batch).
// The commands on one key are linearized together at the write (or at the read, for keys
// nobody changed), which keeps each client's order and makes read-modify-write commands
// atomic without locks. Commands whose first effect overwrites the key (SET, GETSET, DEL,
// MSET) skip the read: the write returns the previous value they answer with.
//
// Asynchronously (KeyBatchRunner::start/advance): the read and the write are each submitted
// to the engine (KvSpace::submit) and completed when the engine says they are ready
// (KvSpace::ready), so the thread serves its sockets while the GPU works. KeyPipeline keeps
// up to a bound of such batches in flight. A key's later commands never overtake its earlier
// ones: an op whose key (by a striped hash, so also a few innocent bystanders) belongs to a
// batch in flight waits for that batch unless both only read; waiting ops keep their order.
// Between a batch's read and its write no other batch of the thread touches its keys, and
// WriteGuards keep other threads' blind writes out, so a read-modify-write stays atomic
// across the two asynchronous stages.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
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
  /// key_hash(key); KeyPipeline::add computes it when it is 0.
  std::uint64_t hash = 0;
  bool local_read = false;  ///< a read of another thread's key run here (IoThread)
  /// A blind write of another thread's key run here, announced in WriteGuards (try_blind);
  /// the pipeline calls end_blind when its batch completes.
  bool direct = false;
  bool guarded = false;     ///< holds a WriteGuards::begin_rmw announcement (the pipeline's)
};

/// The hash of a key that picks its owner thread, its conflict stripe and its batch group.
inline std::uint64_t key_hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

/// Lets a thread write another thread's key without handing the write to the owner, when the
/// owner has no read-modify-write of the key in flight. Striped counters shared by every
/// thread, by (database, key hash): `rmw`, the owner's groups that read a key and then write
/// it (announced before their read is submitted, withdrawn when their write completed), and
/// `blind`, other threads' blind writes in flight. Each side announces itself (a sequentially
/// consistent increment) and then reads the other's counter, as in Dekker's algorithm: of a
/// blind writer and an owner that both announce, at least one sees the other. The writer then
/// withdraws and hands its write to the owner; the owner keeps its announcement and waits
/// until the blind writes it saw have completed, so no blind write lands between a
/// read-modify-write's read and write. A stripe is shared by many keys: a collision only
/// costs a hand-off or a wait. Thread-safe.
class WriteGuards {
 public:
  static constexpr std::size_t kStripes = std::size_t{1} << 16;
  WriteGuards() : stripes_(new Stripe[kStripes]) {}
  static std::size_t stripe_of(std::uint64_t hash, unsigned db) {
    return static_cast<std::size_t>(((hash ^ (db * 0x9E3779B97F4A7C15ull)) * 0x94D049BB133111EBull) >> 48);
  }
  /// A non-owner's blind write of stripe s: true when it may run (then end_blind once the
  /// engine's write completed); false when a read-modify-write is in flight (it withdrew).
  bool try_blind(std::size_t s) {
    stripes_[s].blind.fetch_add(1, std::memory_order_seq_cst);
    if (stripes_[s].rmw.load(std::memory_order_seq_cst) == 0) return true;
    stripes_[s].blind.fetch_sub(1, std::memory_order_seq_cst);
    return false;
  }
  void end_blind(std::size_t s) { stripes_[s].blind.fetch_sub(1, std::memory_order_seq_cst); }
  /// The owner announces a read-modify-write of stripe s (until end_rmw).
  void begin_rmw(std::size_t s) { stripes_[s].rmw.fetch_add(1, std::memory_order_seq_cst); }
  /// After begin_rmw: no blind write of stripe s is in flight (its read may be submitted).
  bool clear(std::size_t s) const { return stripes_[s].blind.load(std::memory_order_seq_cst) == 0; }
  void end_rmw(std::size_t s) { stripes_[s].rmw.fetch_sub(1, std::memory_order_seq_cst); }

 private:
  /// Both counters of a stripe in one 8-byte word's line, so an announcement and the check of
  /// the other side's counter cost one cache miss, not two.
  struct Stripe {
    std::atomic<std::uint32_t> rmw{0}, blind{0};
  };
  std::unique_ptr<Stripe[]> stripes_;
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
  /// Returns the engine requests sent (for batch-size metrics). start() then advance(true).
  std::size_t run(std::span<KeyOp*> ops);
  /// Starts ops as a batch (same contract as run(); ops and the KeyOps must stay valid and
  /// unchanged until the batch is complete): groups them, submits the engine read, and goes
  /// on as far as the engine's answers are ready. Returns true when the batch is complete.
  /// The runner must be idle (never started, or its last batch complete).
  bool start(std::span<KeyOp*> ops);
  /// Moves the started batch on: when the engine's answers for its current stage are ready
  /// (or `wait`, blocking until they are), the read's outcome is computed and the write
  /// submitted, then the write's outcome collected. Returns true once the batch is complete
  /// (its replies are in reply(i)); at once for an idle runner.
  bool advance(bool wait);
  /// A started batch is not complete yet.
  bool busy() const { return stage_ == Stage::kReading || stage_ == Stage::kWriting; }
  /// Engine requests the last batch sent (valid once complete).
  std::size_t sent() const { return sent_; }
  std::string& reply(std::size_t i) { return replies_[i]; }
  bool is_error(std::size_t i) const { return !replies_[i].empty() && replies_[i][0] == '-'; }

 private:
  enum class Stage : std::uint8_t { kIdle, kReading, kWriting, kDone };
  /// One database's requests of a stage: reqs_[begin, end), and their engine batch.
  struct Segment {
    unsigned db;
    std::size_t begin, end;
    std::unique_ptr<KvInFlight> handle;
  };
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
  /// Builds the stage's requests (every database's) and submits one engine batch per database.
  void submit_phase(bool write);
  /// Whether every engine batch of the stage is ready.
  bool phase_ready() const;
  /// Finishes the stage's engine batches (blocking where needed) and applies their outcomes.
  void collect_phase(bool write);
  /// After the write: releases the databases and trims buffers.
  void end_batch();

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
  std::vector<Segment> segs_;    // the current stage's engine batches
  std::span<KeyOp*> ops_;        // the batch in flight
  Stage stage_ = Stage::kIdle;
  std::size_t sent_ = 0;
};

/// Receives a KeyPipeline's completed work (the I/O thread).
class KeyOpSink {
 public:
  /// Op's batch is complete; reply is its RESP reply, to take by swap. The pipeline no longer
  /// touches op afterwards.
  virtual void op_done(KeyOp* op, std::string& reply) = 0;
  /// A batch of `ops` commands that sent `sent` engine requests completed (metrics); called
  /// before its ops' op_done.
  virtual void batch_done(std::size_t ops, std::size_t sent) = 0;

 protected:
  ~KeyOpSink() = default;
};

/// A thread's key ops, queued in arrival order and run as engine batches of which several may
/// be in flight at once (see the top of this file). Not thread-safe: one per I/O thread.
///
/// Order: ops on one key complete in the order they were added (a later op waits while an
/// earlier batch holding its key's stripe is in flight, unless both only read; an op that
/// waits holds back every later op of its stripe too). Read-modify-write ops are atomic: no
/// other batch writes their key between their batch's read and write; with WriteGuards, an op
/// that would write a key its batch reads first (anything but a blind write leading its key's
/// group) announces itself and waits while other threads' blind writes of its stripe are in
/// flight. Ops marked `direct` end their blind announcement when their batch completes.
class KeyPipeline {
 public:
  /// guards: shared with the other threads' pipelines when threads write each other's keys
  /// directly (null: they do not, and nothing is announced).
  KeyPipeline(KeyBatchRunner::SpaceOf space_of, std::size_t max_value_bytes, WriteGuards* guards = nullptr)
      : space_of_(std::move(space_of)), max_value_bytes_(max_value_bytes), guards_(guards), stripes_(kStripes) {}
  ~KeyPipeline();
  KeyPipeline(const KeyPipeline&) = delete;
  KeyPipeline& operator=(const KeyPipeline&) = delete;

  /// Queues op (its hash is computed when 0). It runs at a later pump().
  void add(KeyOp* op);
  /// Completes (through sink) every batch in flight whose engine answers are ready, without
  /// blocking, then starts batches of at most max_batch queued ops that conflict with no batch
  /// in flight, while fewer than max_in_flight are in flight; at the bound with ops waiting,
  /// it finishes the oldest batch (blocking) first. A batch whose engine work is ready at once
  /// (a CPU store without orchestrators) completes within the call. Returns whether any batch
  /// completed or started.
  bool pump(KeyOpSink& sink, std::size_t max_batch, std::size_t max_in_flight);
  /// Blocks until the oldest batch in flight is complete and completes it (nothing when none).
  /// For a thread with nothing else to do.
  void finish_oldest(KeyOpSink& sink);
  /// Completes every batch in flight (blocking); queued ops stay queued.
  void finish_all(KeyOpSink& sink);
  /// Removes and returns the queued ops that were never started (a stop that gives up).
  std::vector<KeyOp*> take_queued();
  std::size_t in_flight() const { return flying_.size(); }
  std::size_t queued() const { return queue_.size(); }
  bool idle() const { return flying_.empty() && queue_.empty(); }
  /// Batches started while another was in flight (since construction).
  std::uint64_t overlapped() const { return overlapped_; }
  /// The conflict stripe of an op (its hash must be set): ops of one stripe keep their order.
  static std::size_t stripe_of(const KeyOp& op) {
    return static_cast<std::size_t>(((op.hash + op.db * 0x9E3779B97F4A7C15ull) * 0xD6E8FEB86659FD93ull) >> 49);
  }

 private:
  static constexpr std::size_t kStripes = std::size_t{1} << 15;
  struct Stripe {
    std::uint32_t readers = 0, writers = 0;  ///< ops of batches in flight
  };
  struct Flight {
    std::unique_ptr<KeyBatchRunner> runner;
    std::vector<KeyOp*> ops;
  };
  static bool writes(const KeyOp& op);
  /// Forms one batch from the queue; false when no queued op can start now.
  bool start_one(KeyOpSink& sink, std::size_t max_batch);
  void complete(Flight& f, KeyOpSink& sink);
  /// Completes the flights that are complete, in place; returns how many.
  std::size_t reap(KeyOpSink& sink);

  KeyBatchRunner::SpaceOf space_of_;
  std::size_t max_value_bytes_;
  WriteGuards* guards_;
  std::vector<Stripe> stripes_;
  std::vector<std::uint32_t> held_mark_;  ///< stripe -> the formation that held an op of it back
  std::vector<std::uint32_t> guard_mark_; ///< ... held an op of it back for the guards only
  std::vector<std::uint32_t> taken_mark_; ///< stripe -> the formation that took an op of it
  std::uint32_t formation_ = 0;
  std::uint64_t overlapped_ = 0;
  std::deque<KeyOp*> queue_;
  std::vector<KeyOp*> keep_;
  std::deque<Flight> flying_;  ///< oldest first
  std::vector<Flight> spare_;  ///< idle runners, reused
};

}  // namespace duet::server
