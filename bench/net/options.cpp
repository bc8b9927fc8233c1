#include "options.hpp"

#include "../common/parse.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace duet::bench::net {
namespace {

const char* const kUsage = R"(duet_bench_net: a closed-loop RESP2 load driver for Redis-protocol servers (Redis, duet server).

Opens C connections spread over N client threads (one epoll loop each). Every connection sends a
batch of P requests at once, waits for all P replies, and sends the next batch. First it SETs
every key of the key space (pipelined, untimed) so that GETs hit, then runs the command mix
unmeasured for the warm-up, then measures for a duration or a request count.

Latency of a request: from the send of its batch to the arrival of its reply (so a pipelined
request's latency includes the requests before it in the batch). Throughput: replies received
over the time from the start of the measured phase to the last reply.

Every reply is checked: an error reply (-ERR ...), a reply of the wrong type, a GET value that
is not the one the load wrote, or (after the load) a GET that finds nothing, makes the program
print the first such reply and exit with status 1. A protocol error or a closed connection
aborts at once.

Usage: duet_bench_net [options]
  --host H              server address (default 127.0.0.1)
  -p, --port N          server port (default 6379)
  -t, --threads N       client threads (default 1)
  -c, --connections N   connections in total (default 50)
  -P, --pipeline N      requests per batch on a connection (default 16)
  -k, --keyspace N      keys key:000000000000 .. key:<N-1> (default 100000)
  -d, --value N         value bytes (default 16)
  --mix M               command mix as weights: get=95,set=5 (default), get=100, set=100
  --distribution D      uniform (default), zipfian (key number = Zipf rank, key 0 hottest)
                        or scrambled (ranks hashed over the key space, YCSB's zipfian)
  --theta T             Zipf skew, 0 <= T < 1 (default 0.99); implies zipfian when given
                        without --distribution
  -s, --seconds S       measured duration (default 10)
  -n, --requests N      measured request count instead of a duration
  --warmup S            unmeasured seconds of the mix after the load (default 1; 0 skips)
  --no-load             skip the initial SET of every key (GET values are then not checked)
  --allow-misses        do not fail when a GET of a loaded key finds nothing
  --stall S             fail when no connection of a client thread finishes a whole batch
                        (receives the last of its P replies) for S seconds while some of the
                        thread's connections wait; only a finished batch resets the clock, a
                        reply that leaves its batch unfinished does not (default 10). On a
                        stall the client prints, for each waiting connection, replies and
                        request bytes so far and the socket's unread / unsent bytes, then the
                        server's INFO from a fresh connection, and exits with status 1
  --seed N              random seed (default 1)
  --server-pid PID      the server's process id, when it runs on this machine: the result
                        then gives its CPU time per measured request (from /proc) beside
                        the client's own (both over the measured phase only)
  --label NAME          the system's name in the records (default "server")
  --device NAME         the result file's device field (default "cpu")
  --out PATH            result file, or a folder (ending in '/') to write
                        net-<label>-<UTC time>.json into (default bench/results/); "none" skips
  -q, --quiet           print only the summary line
  -h, --help            this text

Counts accept 100000, 100_000, 1e5 and 10^5.
)";

std::optional<std::string> parse_mix(const std::string& text, Options* o) {
  unsigned get = 0, set = 0;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) return "--mix: expected op=weight, got '" + item + "'";
    std::string op = item.substr(0, eq);
    for (char& ch : op) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const auto w = parse_count(item.substr(eq + 1));
    if (!w || *w > 1000000) return "--mix: bad weight in '" + item + "'";
    if (op == "get") get += static_cast<unsigned>(*w);
    else if (op == "set") set += static_cast<unsigned>(*w);
    else return "--mix: unknown command '" + op + "' (get and set are supported)";
  }
  if (get + set == 0) return "--mix: the weights sum to zero";
  o->get_weight = get;
  o->set_weight = set;
  return std::nullopt;
}

}  // namespace

std::string mix_name(const Options& o) {
  std::string s;
  if (o.get_weight) s += "get=" + std::to_string(o.get_weight);
  if (o.set_weight) s += std::string(s.empty() ? "" : ",") + "set=" + std::to_string(o.set_weight);
  return s;
}

std::optional<std::string> parse_options(int argc, char** argv, Options* o, bool* help) {
  *help = false;
  bool distribution_given = false, theta_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* v) -> bool {
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    std::string v;
    auto count = [&](std::uint64_t lo, std::uint64_t hi, std::uint64_t* out) -> std::optional<std::string> {
      if (!value(&v)) return a + " needs a value";
      const auto c = parse_count(v);
      if (!c || *c < lo || *c > hi)
        return a + ": expected a count in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'";
      *out = *c;
      return std::nullopt;
    };
    auto real = [&](double lo, double hi, double* out) -> std::optional<std::string> {
      if (!value(&v)) return a + " needs a value";
      const auto d = parse_double(v);
      if (!d || *d < lo || *d > hi) return a + ": expected a number in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "], got '" + v + "'";
      *out = *d;
      return std::nullopt;
    };
    std::uint64_t c = 0;
    std::optional<std::string> err;
    if (a == "-h" || a == "--help") {
      *help = true;
      return std::string(kUsage);
    } else if (a == "--host") {
      if (!value(&o->host)) return a + " needs a value";
    } else if (a == "-p" || a == "--port") {
      if (!(err = count(1, 65535, &c))) o->port = static_cast<int>(c);
    } else if (a == "-t" || a == "--threads") {
      if (!(err = count(1, 1024, &c))) o->threads = static_cast<unsigned>(c);
    } else if (a == "-c" || a == "--connections") {
      if (!(err = count(1, 100000, &c))) o->connections = static_cast<unsigned>(c);
    } else if (a == "-P" || a == "--pipeline") {
      if (!(err = count(1, 1u << 20, &c))) o->pipeline = static_cast<unsigned>(c);
    } else if (a == "-k" || a == "--keyspace") {
      if (!(err = count(1, 1000000000000ull, &c))) o->keyspace = c;
    } else if (a == "-d" || a == "--value") {
      if (!(err = count(0, 512ull << 20, &c))) o->value_bytes = static_cast<std::size_t>(c);
    } else if (a == "--mix") {
      if (!value(&v)) return a + " needs a value";
      err = parse_mix(v, o);
    } else if (a == "--distribution") {
      if (!value(&v)) return a + " needs a value";
      const auto d = kv::parse_distribution(v);
      if (!d || *d == kv::Distribution::kLatest)
        return "--distribution: expected uniform, zipfian or scrambled, got '" + v + "'";
      o->distribution = *d;
      distribution_given = true;
    } else if (a == "--theta") {
      err = real(0, 0.999999, &o->theta);
      theta_given = true;
    } else if (a == "-s" || a == "--seconds") {
      err = real(0.001, 1e6, &o->seconds);
    } else if (a == "-n" || a == "--requests") {
      err = count(1, std::uint64_t(1) << 62, &o->requests);
    } else if (a == "--warmup") {
      err = real(0, 1e6, &o->warmup_seconds);
    } else if (a == "--no-load") {
      o->load = false;
    } else if (a == "--allow-misses") {
      o->allow_misses = true;
    } else if (a == "--stall") {
      err = real(0.1, 1e6, &o->stall_seconds);
    } else if (a == "--seed") {
      err = count(0, std::uint64_t(1) << 62, &o->seed);
    } else if (a == "--server-pid") {
      err = count(1, std::uint64_t(1) << 31, &o->server_pid);
    } else if (a == "--label") {
      if (!value(&o->label)) return a + " needs a value";
    } else if (a == "--device") {
      if (!value(&o->device)) return a + " needs a value";
    } else if (a == "--out") {
      if (!value(&o->out)) return a + " needs a value";
    } else if (a == "-q" || a == "--quiet") {
      o->quiet = true;
    } else {
      return "unknown option '" + a + "' (see --help)";
    }
    if (err) return err;
  }
  if (theta_given && !distribution_given) o->distribution = kv::Distribution::kZipfian;
  if (o->connections < o->threads) o->threads = o->connections;
  return std::nullopt;
}

}  // namespace duet::bench::net
