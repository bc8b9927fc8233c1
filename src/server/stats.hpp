// The server-wide statistics aggregator: one pass over the databases and the I/O threads
// produces a ServerStats, which INFO and the Prometheus endpoint both render.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "duet/batch.hpp"
#include "duet/store.hpp"
#include "duet/txn.hpp"

namespace duet::server {

/// One open database as the statistics see it.
struct DatabaseStats {
  unsigned db = 0;
  KeyspaceKind kind = KeyspaceKind::kKv;
  std::uint64_t keys = 0;
  BatchStats batch;  ///< a `batch` database's statistics (other kinds: empty)
  TxnStats txn;      ///< a `txn` database's statistics (other kinds: empty)
};

/// The engine's counters summed over the open databases.
struct EngineStats {
  KvStats kv;                            ///< counters summed over `kv` databases (memory: the store's total)
  std::vector<DatabaseStats> databases;  ///< the open databases, by index
  std::uint64_t keys = 0;                ///< keys over every database
  std::string router_model;              ///< the first kv database's model description
  std::string router_choice;             ///< the first kv database's routing (KvStats::router_choice)
};

/// A consistent-enough snapshot of the whole server (each counter is read once, relaxed).
struct ServerStats {
  EngineStats engine;
  std::uint64_t calls = 0, batches = 0, batched = 0, net_in = 0, net_out = 0;  ///< summed over I/O threads
  std::uint64_t batches_overlapped = 0;  ///< batches started while another of their thread was in flight
  std::uint64_t direct_writes = 0;       ///< blind writes run by a thread that does not own the key
  std::uint64_t longest_pass_ns = 0;     ///< the longest loop pass of any I/O thread
  std::uint64_t slow_passes = 0;         ///< loop passes that took a second or more, over all I/O threads
  std::uint64_t background_tasks = 0;    ///< tasks given to the background thread (SCAN 0's checkpoints)
  std::uint64_t background_done = 0;     ///< of those, the ones that have finished
  std::uint64_t clients = 0, total_connections = 0, rejected = 0, ops_per_sec = 0;
  std::uint64_t maxclients = 0, maxmemory = 0;
  unsigned io_threads = 0;
  std::vector<std::uint64_t> thread_clients;  ///< connections each I/O thread serves now
  int port = 0;
  long long uptime_s = 0;
  std::string device;  ///< Store::device_description()
};

}  // namespace duet::server
