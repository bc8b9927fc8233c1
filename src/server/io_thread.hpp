// An I/O thread and the shard of keys it owns: its epoll loop over its connections, its inbox
// of key ops from other threads, dispatch through the command registry, routing of key ops to
// their owner threads, the engine batches it keeps in flight for its shard (KeyPipeline), and
// flushing replies in request order.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sched/thread_name.hpp"
#include "server/command.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/metrics.hpp"

namespace duet::server {

class Server;

class IoThread final : public RequestSink, private KeyOpSink {
 public:
  /// Key ops of a connection that completed on another thread: n of them, in key bucket
  /// `bucket` (conn_bucket).
  struct Note {
    Conn* c;
    std::uint32_t n;
    std::uint32_t bucket;
  };

  IoThread(Server* srv, unsigned index);
  ~IoThread();

  /// Creates the epoll and event descriptors and registers the listener. Unavailable on failure.
  Status init();
  void start() {
    thread_ = std::thread([this] {
      sched::name_this_thread("duet-io-" + std::to_string(index_));
      loop();
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  /// Wakes the loop if it sleeps in epoll_wait (any thread).
  void wake();
  /// The engine's completion waker (duet::set_completion_waker): a batch this thread submitted
  /// may be ready; wakes the loop (any thread).
  static void engine_done(void* self);
  /// Hands key ops to this thread (from another thread); clears `ops`.
  void post_ops(std::vector<KeyOp*>& ops);
  /// Tells this thread that key ops of its connections completed elsewhere; clears `notes`.
  void post_notes(std::vector<Note>& notes);
  /// Tells this thread that a deferred reply of connection `c` is final (any thread).
  void post_deferred(Conn* c);
  /// A client socket accepted by one thread for another to serve.
  struct Accepted {
    int fd;
    std::shared_ptr<ClientInfo> info;  ///< already counted in the server's client table
  };
  /// Hands this thread a newly accepted client socket to serve (from the accepting thread).
  void post_connection(Accepted a);

  /// Where a loop pass is (for report_if_stuck): set with relaxed stores as the pass moves on.
  enum class Stage : std::uint8_t { kWaiting, kSockets, kInbox, kEngine, kReplies, kHousekeeping };
  /// Called about once a second by another thread: logs a warning, once per pass, when this
  /// thread has been in one loop pass for a second or more (its clients get no replies
  /// meanwhile), naming the stage and what was queued when the pass began.
  void report_if_stuck();

  ThreadMetrics metrics;
  /// Key ops this thread dispatched / completed (their difference, summed over threads, is
  /// the work in flight that a graceful stop waits for).
  std::atomic<std::uint64_t> dispatched_{0}, completed_{0};

 private:
  void loop();
  /// Accepts pending connections and deals them out to the I/O threads in turn, so that
  /// clients that connect at once (a benchmark's, a pool's) do not all land on this thread.
  void accept_all();
  /// Starts serving an accepted socket on this thread.
  void adopt(Accepted a);
  void on_readable(Conn* c);
  void process_input(Conn* c);
  /// Runs or routes one request (RequestSink); def is its command (null: unknown); arrival_ns
  /// is when its input was taken (the start of its latency).
  void on_request(Conn& c, const CommandDef* def, Args args, std::uint64_t arrival_ns) override;
  void dispatch_keys(Conn* c, PendingReply* r, const CommandDef& def, Args args);
  /// Runs a command on this thread: def.local, or key_handler(ctx, def) when given (a key
  /// command on a txn database).
  void run_local(Conn* c, PendingReply* r, const CommandDef& def, Args args,
                 void (*key_handler)(CommandContext&, const CommandDef&));
  /// CommandContext::defer for run_local's commands: counts the reply in flight on its
  /// connection (which then outlives a close until the reply is final) and returns its finisher.
  static DeferredReply defer_reply(CommandContext& ctx, void* conn_and_thread);
  /// Lets each connection's session extension drop idle state (about ten times a second).
  void expire_sessions();
  void route(KeyOp* op);
  /// A SET without options or a part of an MSET: writes a value that depends on nothing read,
  /// and answers OK whatever was there.
  bool plain_overwrite(const KeyOp& op) const {
    return (op.cmd == set_ && !op.nx && !op.xx && !op.get) || op.cmd == mset_;
  }
  /// Posts the held ops whose connection no longer has a read of their key bucket running here.
  void release_held();
  void post_outgoing();
  // KeyOpSink: the pipeline's completions.
  void op_done(KeyOp* op, std::string& reply) override;
  void batch_done(std::size_t ops, std::size_t sent) override;
  void complete(KeyOp* op, std::string& part);
  KeyOp* new_op();
  void free_op(KeyOp* op);
  void mark_dirty(Conn* c);
  void flush(Conn* c);
  void close_conn(Conn* c);
  void maybe_free(Conn* c);
  /// Registers EPOLLIN unless the client's unsent output is over max-unread-output, and
  /// EPOLLOUT while output is pending.
  void update_events(Conn* c);
  /// Closes a connection whose last replies are out; if the client may still be sending, first
  /// lingers (start_linger) for at most kLingerNs.
  void finish_close(Conn* c);
  void expire_lingering();
  static constexpr std::uint64_t kLingerNs = 2'000'000'000;
  static constexpr std::size_t kMaxPendingReplies = 100000;

  Server* srv_;
  unsigned index_;
  int epfd_ = -1, evfd_ = -1;
  std::thread thread_;
  std::mutex m_;
  std::vector<KeyOp*> inbox_;
  std::vector<Note> notes_in_;
  std::vector<Conn*> deferred_in_, deferred_taken_;  ///< connections with a deferred reply finished
  std::vector<Accepted> fds_in_, fds_taken_;  ///< accepted sockets dealt to this thread
  std::atomic<bool> has_work_{false}, sleeping_{false};
  /// Set by engine_done: some batch in flight may be ready.
  std::atomic<bool> engine_done_{false};
  /// The current pass's start (steady ns; 0 while waiting in epoll), its stage, the ops queued
  /// and batches in flight in the engine pipeline when it began, and the start of the pass last
  /// reported stuck (so each is reported once).
  std::atomic<std::uint64_t> pass_start_ns_{0};
  std::atomic<Stage> stage_{Stage::kWaiting};
  std::atomic<std::uint32_t> pass_queued_{0}, pass_in_flight_{0};
  std::uint64_t reported_pass_ns_ = 0;  ///< the reporting thread's own
  /// The last pass found batches in flight and nothing else to do: the next epoll_wait sleeps
  /// until a socket, another thread or the engine wakes the loop (at most kEngineWaitMs).
  bool wait_engine_ = false;
  // Thread-local.
  std::vector<std::vector<KeyOp*>> outgoing_;
  /// Ops for other threads held back, in order, while their connection has a read of the same
  /// key bucket running here: posted now, the owner could write the key before that read.
  std::vector<KeyOp*> held_;
  std::vector<std::vector<Note>> notes_out_;
  std::vector<KeyOp*> taken_;
  std::vector<Note> notes_taken_;
  std::uint64_t batch_done_ns_ = 0;  ///< when the batch being completed completed
  std::vector<Conn*> dirty_, to_free_;
  std::vector<Conn*> lingering_;  ///< connections in a lingering close, checked each loop pass
  std::uint64_t next_expire_ns_ = 0;  ///< when expire_sessions next looks
  std::vector<KeyOp*> op_pool_;
  ReplyPool reply_pool_;
  std::unordered_set<Conn*> conns_;
  KeyPipeline pipeline_;
  const CommandDef* set_;
  const CommandDef* mset_;
};

}  // namespace duet::server
