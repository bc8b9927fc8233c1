// duet-server: the Redis protocol (RESP2/RESP3) in front of a Store's `kv` keyspaces.
//
// Threads. `threads` I/O threads each run an epoll loop over their own connections (accepted
// from one shared listening socket) and are, at the same time, the shard that owns a hash
// range of the keys: a thread parses its clients' requests, sends each key's command to the
// key's owner (itself or another thread, in bulk, woken through an eventfd), runs the key
// commands it owns as engine batches (key_batch.hpp), and writes its clients' replies in
// request order as they complete. Commands without keys run at once on the client's thread;
// DBSIZE, FLUSHDB, FLUSHALL and SCAN first wait for the client's earlier commands.
//
// Guarantees: every key command is linearizable and each client's replies keep its request
// order; multi-key commands are linearizable per key. Bad input gets an error reply (or, for
// protocol errors, an error and a close); the server never stops on input.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <chrono>

#include "duet/store.hpp"
#include "server/config.hpp"
#include "server/metrics.hpp"

namespace duet::server {

class IoThread;
struct ClientInfo;

class Server {
 public:
  /// The store must outlive the server.
  Server(const ServerConfig& config, Store* store);
  ~Server();
  /// Listens and starts the threads. InvalidArgument/Unavailable with a message when it cannot.
  Status start();
  /// Graceful stop: stops accepting and reading, lets the commands already read finish and
  /// their replies be sent (up to a few seconds), closes every connection, joins the threads.
  void stop();
  /// The port actually listened on.
  int port() const { return port_; }

 private:
  friend class IoThread;
  struct Database {
    std::mutex m;
    std::shared_ptr<KvSpace> space;  ///< null until first used or after FLUSHDB
    unsigned generation = 0;
  };
  std::shared_ptr<KvSpace> space_of(unsigned db);
  void flush_db(unsigned db);
  std::string info(const std::vector<std::string>& sections);
  std::string client_list(std::uint64_t only_id);
  std::string metrics_text();
  Status config_set(std::string_view name, std::string_view value);

  ServerConfig cfg_;
  Store* store_;
  std::vector<std::unique_ptr<Database>> dbs_;
  std::vector<std::unique_ptr<IoThread>> threads_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> draining_{false}, exiting_{false};
  std::atomic<std::uint64_t> next_client_id_{1}, clients_{0}, total_connections_{0}, rejected_{0};
  std::atomic<std::uint64_t> ops_per_sec_{0};
  std::chrono::steady_clock::time_point started_;
  std::mutex config_m_;  ///< CONFIG SET / GET of non-atomic settings
  std::mutex clients_m_;
  std::vector<std::shared_ptr<ClientInfo>> client_table_;
  std::unique_ptr<MetricsEndpoint> metrics_;
  std::thread ticker_;  ///< once a second: instantaneous ops/s
};

/// `duet server ARGS...`: parses the settings, opens the store, serves until SIGTERM or
/// SIGINT, then stops gracefully. Returns the process exit code (0 after a clean stop, 2 for
/// bad settings, 1 when the store or the listener cannot start).
int run_server(int argc, char** argv);

}  // namespace duet::server
