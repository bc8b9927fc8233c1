// The client side of `duet bench ch --systems server` (docs/compute.md, "CH through the server"):
// a `duet server` child process with the CH procedure library (bench/compute/ch_proc.cpp) loaded,
// and blocking RESP connections that call its procedures, one round trip per operation.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compute/ch.hpp"
#include "duet/status.hpp"

namespace duet::bench {

/// One reply, decoded whole: type '+', '-', ':', '$' or '*'; text for '+', '-' and '$'; integer
/// for ':'; elems for '*'; nil for "$-1" and "*-1".
struct RespValue {
  char type = 0;
  bool nil = false;
  std::int64_t integer = 0;
  std::string text;
  std::vector<RespValue> elems;
  bool is_error() const { return type == '-'; }
};

/// One blocking connection to 127.0.0.1:port. Not thread-safe: one per thread.
class RespConnection {
 public:
  /// Connects (TCP_NODELAY). Unavailable when nothing listens there.
  static Status open(int port, std::unique_ptr<RespConnection>* out);
  ~RespConnection();
  RespConnection(const RespConnection&) = delete;
  RespConnection& operator=(const RespConnection&) = delete;
  /// Queues one command (sent by the next flush or call).
  void send(std::span<const std::string_view> argv);
  /// Sends what is queued.
  Status flush();
  /// Reads the next reply. Unavailable when the server closed the connection; Internal for
  /// bytes that are not RESP2.
  Status receive(RespValue* out);
  /// send + flush + receive: one round trip.
  Status call(std::span<const std::string_view> argv, RespValue* out);

 private:
  explicit RespConnection(int fd) : fd_(fd) {}
  int fd_;
  std::string out_, in_;
  std::size_t in_pos_ = 0;
};

/// Where the server and the procedure library are, and how the server runs.
struct ChServerConfig {
  std::string server_bin;  ///< the duet binary
  std::string proc_lib;    ///< libduet_ch_proc.so
  unsigned threads = 0;    ///< the server's --threads (0: its default)
};

/// The paths next to the running program: the duet binary and bench/libduet_ch_proc.so when it is
/// `duet` itself, ../duet and libduet_ch_proc.so beside it when it is build/bench/duet_bench_ch.
ChServerConfig default_ch_server_config();

/// A `duet server` child on a free port with one txn database (procedures enabled, from the
/// library's directory) and the library loaded. Stopped (SIGTERM, then waited for) on destruction.
class ChServer {
 public:
  /// Starts it and waits until it answers (30 s at most). InvalidArgument for a missing binary or
  /// library; Unavailable, with the end of its log, when it does not come up or refuses the load.
  static Status start(const ChServerConfig& c, std::unique_ptr<ChServer>* out);
  ~ChServer();
  int port() const { return port_; }
  /// Loads CH's initial database (ch::generate) through `ch.load` calls of 512 rows on `threads`
  /// connections.
  Status load(const compute::ch::Scale& s, unsigned threads);
  /// Every procedure's calls and re-runs so far (PROCEDURE LIST), summed over the library.
  Status procedure_counts(std::uint64_t* calls, std::uint64_t* retries);

 private:
  ChServer() = default;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string log_;
};

/// Runs one TPC-C operation as its procedure on c: *r as ch::Ch::run would fill it, but with
/// attempts 1 and commit_ts 1 (the server re-runs conflicts itself and does not say its commit
/// timestamps). False with *err set for any failure other than a rollback.
bool run_ch_op(RespConnection& c, const compute::ch::Op& op, compute::ch::OpResult* r, std::string* err);

}  // namespace duet::bench
