// The server's settings: defaults, a redis.conf-style file, command-line flags (same names,
// `--port 7000`), and the table behind CONFIG GET / CONFIG SET. See docs/server.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/ascii.hpp"
#include "duet/status.hpp"
#include "duet/store.hpp"

namespace duet::server {

/// Everything `duet server` is started with. Fields marked live may change while it runs
/// (CONFIG SET); they are atomics read by the I/O threads.
struct ServerConfig {
  std::string bind = "127.0.0.1";       ///< address to listen on (loopback by default)
  int port = 6379;                      ///< TCP port
  unsigned threads = 0;                 ///< I/O and execution threads (0: every core)
  unsigned databases = 16;              ///< SELECT range: 0 .. databases-1
  /// `database-kinds`: the keyspace kind behind each database, as comma-separated entries,
  /// each `KIND` (every database not named otherwise) or `INDEX=KIND` ("kv", "kv,3=kv").
  std::string database_kinds = "kv";
  KeyspaceKind default_kind = KeyspaceKind::kKv;                         ///< parsed from database_kinds
  std::vector<std::pair<unsigned, KeyspaceKind>> kind_overrides;         ///< parsed from database_kinds
  int metrics_port = 0;                 ///< Prometheus endpoint port (0: off)
  std::string metrics_bind = "127.0.0.1";
  std::string log_level = "info";       ///< debug, info, warn, error
  /// How threads wait for the GPU: auto, spin, yield, blocking. The server defaults to blocking:
  /// on an H100 with 16 cores it beat CUDA's spinning default in every workload measured
  /// (bench/results/server-h100/), since spinning waiters take cores from the I/O threads.
  std::string gpu_sync = "blocking";
  StoreConfig store;                    ///< device, memory budget (maxmemory), limits, router
  /// Native procedures (commands/procedure.cpp): PROCEDURE LOAD and DELETE are refused unless
  /// `procedure-enable yes`; LOAD opens files only from inside `procedure-dir`. Fixed at startup.
  bool procedure_enable = false;
  std::string procedure_dir;
  unsigned procedure_max_attempts = 64;         ///< runs of a procedure per FCALL (conflicts)
  std::uint32_t procedure_backoff_max_us = 1000;  ///< longest backoff between runs
  std::string procedure_compute_device = "auto";  ///< auto, cpu or gpu: where procedures compute
  unsigned procedure_threads = 0;  ///< threads for DUET_PROC_LONG procedures (0: one per core)
  // Live settings.
  std::atomic<std::uint64_t> maxclients{10000};
  std::atomic<std::uint64_t> proto_max_bulk_len{512ull * 1024 * 1024};
  std::atomic<std::uint64_t> client_query_buffer_limit{1024ull * 1024 * 1024};
  /// Unsent reply bytes past which a client's input is no longer read (0: no limit, as Redis
  /// does for normal clients; a limit stalls a client that sends a whole pipeline before reading).
  std::atomic<std::uint64_t> max_unread_output{0};
  std::atomic<std::uint64_t> max_multibulk_len{1024 * 1024};
  std::atomic<std::uint64_t> max_batch{4096};  ///< most commands one thread sends the engine at once
  /// Most engine batches one thread keeps in flight (submitted, not yet completed) while it
  /// goes on serving its sockets; at the bound it waits for its oldest. 1: one at a time. The
  /// threads apply at most 512 / threads (the engine's epoch participants are finite).
  std::atomic<std::uint64_t> max_batches_in_flight{8};
  /// An interactive transaction (TXN BEGIN) idle this long is aborted (milliseconds; 0: never).
  /// It holds back version collection while open, so the default is a minute.
  std::atomic<std::uint64_t> txn_idle_timeout_ms{60000};

  ServerConfig() = default;
  ServerConfig(const ServerConfig& o);
  /// The kind of database db (from database_kinds).
  KeyspaceKind database_kind(unsigned db) const;
};

/// Applies one setting by name (file and flag spelling: `port`, `maxmemory`, ...). Sizes take
/// suffixes k, kb, m, mb, g, gb (1k = 1000, 1kb = 1024, as in redis.conf). When `live` is
/// true only settings that can change at run time are accepted. InvalidArgument names the
/// setting and says what was wrong; the config is unchanged then.
Status apply_setting(ServerConfig* c, std::string_view name, std::string_view value, bool live);

/// Reads a redis.conf-style file: `name value` per line, `#` comments, blank lines.
Status load_config_file(ServerConfig* c, const std::string& path);

/// Parses `duet server` arguments (`--config FILE` first, then `--name value` flags).
Status parse_server_args(ServerConfig* c, int argc, char** argv);

/// CONFIG GET: (name, value) pairs of every setting whose name matches the glob pattern.
std::vector<std::pair<std::string, std::string>> config_get(const ServerConfig& c, std::string_view pattern);

/// Help text for `duet server --help`.
const char* server_usage();

/// Parses "100", "4kb", "2gb" ... into bytes; false for anything else.
bool parse_size(std::string_view text, std::uint64_t* out);

/// Redis glob matching (*, ?, [abc], [^a], [a-z], \x), binary safe; `nocase` folds ASCII case.
bool glob_match(std::string_view pattern, std::string_view text, bool nocase = false);

}  // namespace duet::server
