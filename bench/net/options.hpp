// Command-line options of duet_bench_net.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bench/kv/ycsb.hpp"

namespace duet::bench::net {

struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  unsigned threads = 1;        ///< client threads, each with its own epoll loop
  unsigned connections = 50;   ///< connections in total, spread round-robin over the threads
  unsigned pipeline = 16;      ///< requests per batch on a connection (sent together)
  std::uint64_t keyspace = 100000;
  std::size_t value_bytes = 16;
  unsigned get_weight = 95, set_weight = 5;  ///< the command mix, as weights
  kv::Distribution distribution = kv::Distribution::kUniform;
  double theta = 0.99;
  double seconds = 10;          ///< measured time (when requests == 0)
  std::uint64_t requests = 0;   ///< measured requests (0: run for `seconds`)
  double warmup_seconds = 1;    ///< unmeasured mix run after the load
  bool load = true;             ///< SET every key before measuring
  bool allow_misses = false;    ///< a GET of a loaded key that finds nothing is a failure unless set
  double stall_seconds = 10;    ///< fail when no connection of a client thread finishes a batch for this long
  std::uint64_t seed = 1;
  /// The server's process id on this machine (0: unknown): the measured phase's records then
  /// give the server's CPU time per request beside the client's.
  std::uint64_t server_pid = 0;
  std::string label = "server";  ///< `system` of the records
  std::string device = "cpu";    ///< the result file's `device` (what the server runs on)
  std::string out = "bench/results/";
  bool quiet = false;
};

/// "get=95,set=5" (also "get=100", "set=100").
std::string mix_name(const Options& o);

/// Parses argv into *o. Returns nullopt on success, else the message to print (exit code 2);
/// "--help" yields the usage text with *help set.
std::optional<std::string> parse_options(int argc, char** argv, Options* o, bool* help);

}  // namespace duet::bench::net
