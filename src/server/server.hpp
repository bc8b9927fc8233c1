// duet-server: the Redis protocol (RESP2/RESP3) in front of a Store's keyspaces.
//
// Threads. `threads` I/O threads (io_thread.hpp) each run an epoll loop over their own
// connections (accepted from one shared listening socket) and are, at the same time, the shard
// that owns a hash range of the keys: a thread parses its clients' requests, looks each up in
// the command registry (command.hpp), sends each key's command to the key's owner (itself or
// another thread, in bulk, woken through an eventfd), runs the key commands it owns as engine
// batches (key_batch.hpp), and writes its clients' replies in request order as they complete.
// Keyless commands run at once on the client's thread; barrier commands (DBSIZE, FLUSHDB,
// FLUSHALL, SCAN) first wait for the client's earlier commands.
//
// Databases. Database i is backed by a keyspace of the kind `database-kinds` gives it (every
// database is `kv` by default), opened on first use. A command that a database's kind does
// not run gets an error naming the kind.
//
// Guarantees: every key command is linearizable and each client's replies keep its request
// order; multi-key commands are linearizable per key. Bad input gets an error reply (or, for
// protocol errors, an error and a close); the server never stops on input.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "duet/store.hpp"
#include "server/task_queue.hpp"
#include "server/config.hpp"
#include "server/key_batch.hpp"
#include "server/metrics.hpp"
#include "server/stats.hpp"

namespace duet::server {

class IoThread;
struct ClientInfo;

class Server {
 public:
  /// The store must outlive the server.
  Server(const ServerConfig& config, Store* store);
  ~Server();
  /// True once the server stopped taking new work (shutting down).
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  /// Listens and starts the threads. InvalidArgument/Unavailable with a message when it cannot.
  [[nodiscard]] Status start();
  /// Graceful stop: stops accepting and reading, lets the commands already read finish and
  /// their replies be sent (up to a few seconds), closes every connection, joins the threads.
  void stop();
  /// The port actually listened on.
  int port() const { return port_; }

  // ---- For command handlers (commands/*.cpp); any thread. ----
  /// Number of databases (SELECT's range).
  unsigned databases() const { return static_cast<unsigned>(dbs_.size()); }
  /// The kind of database db's keyspace (fixed at startup).
  KeyspaceKind database_kind(unsigned db) const;
  /// Database db's keyspace, opened on first use; null when it cannot be opened (logged, and the
  /// reason in *why when given) or db is out of range. The handle stays valid after a FLUSHDB
  /// (which swaps in a new keyspace).
  std::shared_ptr<Keyspace> keyspace(unsigned db, std::string* why = nullptr);
  /// The key and value size limits (max-key-bytes, max-value-bytes); fixed at startup.
  const KvLimits& limits() const { return cfg_.store.limits; }
  /// txn-idle-timeout in milliseconds (0: none); live.
  std::uint64_t txn_idle_timeout_ms() const { return cfg_.txn_idle_timeout_ms.load(std::memory_order_relaxed); }
  /// As keyspace(), for a `kv` database; null for another kind.
  std::shared_ptr<KvSpace> kv_space(unsigned db);
  /// Empties database db: later commands see a new, empty keyspace; the old one is freed when
  /// the last batch using it lets go.
  void flush_db(unsigned db);
  /// CONFIG GET over several glob patterns: each matching setting once, in the order found.
  std::vector<std::pair<std::string, std::string>> config_get(const std::vector<std::string_view>& patterns);
  /// CONFIG SET of one setting (live settings only). InvalidArgument says why.
  /// CONFIG SET of name-value pairs, all or none: on the first pair refused, those already set
  /// get their previous values back and that pair's error is returned.
  [[nodiscard]] Status config_set(std::span<const std::pair<std::string_view, std::string_view>> pairs);
  /// CLIENT LIST's text: one line per connection, by id.
  std::string client_list();
  /// The server-wide statistics (the aggregator INFO and /metrics both read).
  ServerStats stats();
  /// Queues task to run on the server's background thread, in order, off every I/O thread
  /// (work too long for one, such as SCAN's checkpoint, whose reply is deferred). Returns false,
  /// running nothing, before start() or once stop() began: the caller then runs it itself.
  /// stop() runs every queued task before it stops the I/O threads, so a task may finish a
  /// deferred reply. task must not throw.
  bool run_in_background(std::function<void()> task);
  /// Queues task on the server's procedure threads (`procedure-threads` of them; FCALL of a
  /// procedure flagged DUET_PROC_LONG), off every I/O thread; tasks may run at once on
  /// different threads. Returns false, running nothing, before start() or once stop() began.
  /// stop() runs every queued task before it stops the I/O threads. task must not throw.
  bool run_procedure(std::function<void()> task);

 private:
  friend class IoThread;
  struct Database {
    std::mutex m;
    KeyspaceKind kind = KeyspaceKind::kKv;
    std::shared_ptr<Keyspace> space;  ///< null until first used or after FLUSHDB
  };
  /// Runs every Epic call queued in the open batch databases (their replies are posted to the
  /// I/O threads); Server::stop's part.
  void flush_epic();
  /// The procedure queue's thread count (procedure-threads, 0: every core).
  unsigned procedure_threads() const;
  /// Starts the task queues, the I/O threads and the ticker; throws std::system_error when the
  /// system refuses a thread (those already started are joined by stop()).
  void start_threads();
  void add_client(const std::shared_ptr<ClientInfo>& info);
  void remove_client(const std::shared_ptr<ClientInfo>& info);
  std::string metrics_text();

  ServerConfig cfg_;
  Store* store_;
  std::vector<std::unique_ptr<Database>> dbs_;
  std::vector<std::unique_ptr<IoThread>> threads_;
  WriteGuards guards_;  ///< lets a thread write another's keys blindly (IoThread::route)
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> draining_{false}, exiting_{false};
  std::atomic<std::uint64_t> next_client_id_{1}, clients_{0}, total_connections_{0}, rejected_{0};
  /// Which I/O thread serves the next accepted connection (round robin).
  std::atomic<std::uint64_t> next_conn_thread_{0};
  std::atomic<std::uint64_t> ops_per_sec_{0};
  std::chrono::steady_clock::time_point started_;
  std::mutex config_m_;  ///< CONFIG SET / GET of non-atomic settings
  std::mutex clients_m_;
  std::vector<std::shared_ptr<ClientInfo>> client_table_;
  std::unique_ptr<MetricsEndpoint> metrics_;
  std::thread ticker_;  ///< once a second: instantaneous ops/s
  /// run_in_background's one thread (INFO counts its tasks) and run_procedure's
  /// `procedure-threads`; stop() stops both before the I/O threads.
  TaskQueue background_, procedures_;
};

/// `duet server ARGS...`: parses the settings, opens the store, serves until SIGTERM or
/// SIGINT, then stops gracefully. Returns the process exit code (0 after a clean stop, 2 for
/// bad settings, 1 when the store or the listener cannot start).
int run_server(int argc, char** argv);

}  // namespace duet::server
