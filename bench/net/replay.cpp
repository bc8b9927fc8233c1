// duet_bench_replay: replays a file of pre-encoded RESP2 commands against a Redis-protocol server
// over many connections, closed loop, and reports the wall-clock rate and per-request latency.
//
// The file holds RESP arrays of bulk strings back to back (what a client library would send),
// so any command, binary arguments included, can be replayed: the OLDA benchmark writes one
// FCALL per payment (bench/compute/olda_server.py --native-client). Command i goes to connection
// i mod C, in file order per connection; connections are spread over T threads, each an epoll
// loop; a connection keeps up to D requests in flight (D = 1: one round trip at a time, as a
// plain client). Latency is per request, from its send to its reply.
//
// Output: one JSON object on stdout (requests, seconds, ops_per_s, p50/p99/p999 us, errors and
// the first error's text, `counted`: replies whose text equals --count-reply). Exit 0 when every
// command was answered (error replies included: they are counted, the caller decides), 1 on a
// connection failure, a protocol error or a stall, 2 on bad arguments or a malformed file.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/kv/latency.hpp"
#include "resp_client.hpp"

using namespace duet::bench::net;
using duet::bench::kv::LatencyHistogram;

namespace {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

[[noreturn]] void fail(int code, const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "duet_bench_replay: %s\n", message.c_str());
  std::_Exit(code);
}

struct ReplayOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string commands;
  unsigned connections = 16, threads = 4, pipeline = 1;
  std::string count_reply;
  double timeout_s = 60;
};

/// Splits the file's bytes into commands: each a RESP array of bulk strings. Exits 2 on
/// anything else, naming the byte offset.
std::vector<std::string_view> split_commands(std::string_view all) {
  std::vector<std::string_view> out;
  std::size_t p = 0;
  auto number = [&](char lead) -> std::int64_t {
    if (p >= all.size() || all[p] != lead) fail(2, "malformed command file at byte " + std::to_string(p));
    const std::size_t cr = all.find("\r\n", p + 1);
    if (cr == std::string_view::npos || cr == p + 1 || cr - p > 20)
      fail(2, "malformed command file at byte " + std::to_string(p));
    std::int64_t v = 0;
    for (std::size_t i = p + 1; i < cr; ++i) {
      if (all[i] < '0' || all[i] > '9') fail(2, "malformed number in command file at byte " + std::to_string(i));
      v = v * 10 + (all[i] - '0');
    }
    p = cr + 2;
    return v;
  };
  while (p < all.size()) {
    const std::size_t start = p;
    const std::int64_t n = number('*');
    if (n < 1) fail(2, "empty command at byte " + std::to_string(start));
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t len = number('$');
      if (static_cast<std::uint64_t>(len) + 2 > all.size() - p || all.compare(p + len, 2, "\r\n") != 0)
        fail(2, "bulk string past the end or not ended by CRLF at byte " + std::to_string(p));
      p += static_cast<std::size_t>(len) + 2;
    }
    out.push_back(all.substr(start, p - start));
  }
  return out;
}

/// One connection: its commands (indices into the shared list), what is in flight.
struct Conn {
  int fd = -1;
  std::size_t next = 0;                 ///< next of `mine` to send
  std::size_t answered = 0;             ///< replies received
  std::vector<std::uint32_t> mine;      ///< command indices, in send order
  std::vector<std::uint64_t> sent_at;   ///< send time of mine[answered .. next)
  std::string in;                       ///< unparsed reply bytes
};

struct ThreadResult {
  LatencyHistogram latency;
  std::uint64_t replies = 0, errors = 0, counted = 0;
  std::string first_error;
};

int connect_to(const ReplayOptions& o) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  const int rc = getaddrinfo(o.host.c_str(), std::to_string(o.port).c_str(), &hints, &res);
  if (rc != 0) fail(1, "cannot resolve " + o.host + ": " + gai_strerror(rc));
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) fail(1, "cannot connect to " + o.host + ":" + std::to_string(o.port) + ": " + std::strerror(errno));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/// Writes all of data to the blocking socket fd (commands are small; the server reads them).
void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t w = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail(1, std::string("send: ") + std::strerror(errno));
    }
    data.remove_prefix(static_cast<std::size_t>(w));
  }
}

/// Runs one thread's connections to the end: sends up to `pipeline` commands per connection,
/// reads replies as they come (epoll), sends the next as each is answered.
void run_thread(const ReplayOptions& o, const std::vector<std::string_view>& cmds, std::vector<Conn*> conns,
                ThreadResult* r) {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) fail(1, std::string("epoll_create1: ") + std::strerror(errno));
  std::size_t open = 0;
  std::string batch;
  auto send_more = [&](Conn& c) {
    batch.clear();
    const std::uint64_t t = now_ns();
    while (c.next < c.mine.size() && c.next - c.answered < o.pipeline) {
      batch.append(cmds[c.mine[c.next]]);
      c.sent_at[c.next % o.pipeline] = t;
      ++c.next;
    }
    if (!batch.empty()) write_all(c.fd, batch);
  };
  for (Conn* c : conns) {
    if (c->mine.empty()) continue;
    c->sent_at.assign(o.pipeline, 0);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) fail(1, std::string("epoll_ctl: ") + std::strerror(errno));
    ++open;
    send_more(*c);
  }
  std::vector<epoll_event> events(std::max<std::size_t>(conns.size(), 1));
  std::uint64_t last_progress = now_ns();
  char buf[1 << 16];
  while (open > 0) {
    const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 200);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(1, std::string("epoll_wait: ") + std::strerror(errno));
    }
    const std::uint64_t now = now_ns();
    if (n == 0 && now - last_progress > static_cast<std::uint64_t>(o.timeout_s * 1e9))
      fail(1, "no reply for " + std::to_string(o.timeout_s) + " s (" + std::to_string(open) + " connections waiting)");
    for (int i = 0; i < n; ++i) {
      Conn& c = *static_cast<Conn*>(events[i].data.ptr);
      const ssize_t got = ::recv(c.fd, buf, sizeof buf, 0);
      if (got == 0) fail(1, "the server closed a connection with requests in flight");
      if (got < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        fail(1, std::string("recv: ") + std::strerror(errno));
      }
      c.in.append(buf, static_cast<std::size_t>(got));
      std::size_t at = 0;
      const std::uint64_t t = now_ns();
      for (;;) {
        Reply reply;
        std::size_t used = 0;
        std::string error;
        const ParseResult pr = parse_reply(c.in.data() + at, c.in.size() - at, &used, &reply, &error);
        if (pr == ParseResult::kIncomplete) break;
        if (pr == ParseResult::kProtocolError) fail(1, "protocol error in a reply: " + error);
        if (c.answered >= c.next) fail(1, "a reply to no request");
        r->latency.add(t - c.sent_at[c.answered % o.pipeline]);
        ++c.answered;
        ++r->replies;
        if (reply.type == '-') {
          if (r->errors++ == 0) r->first_error = std::string(reply.text.substr(0, 200));
        } else if (!o.count_reply.empty() && (reply.type == '+' || reply.type == '$') && reply.text == o.count_reply) {
          ++r->counted;
        }
        at += used;
      }
      c.in.erase(0, at);
      last_progress = t;
      if (c.answered == c.mine.size()) {
        epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
        --open;
      } else {
        send_more(c);
      }
    }
  }
  ::close(ep);
}

bool parse_unsigned(const char* s, unsigned* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (errno || end == s || *end || v == 0 || v > 1000000) return false;
  *out = static_cast<unsigned>(v);
  return true;
}

const char* kUsage =
    "usage: duet_bench_replay --commands FILE [--host H] [--port P] [--connections C] [--threads T]\n"
    "                         [--pipeline D] [--count-reply TEXT] [--timeout-s S]\n"
    "Replays FILE (RESP arrays of bulk strings, back to back) closed loop: command i on connection\n"
    "i mod C (default 16), connections over T threads (default 4), up to D in flight each (default\n"
    "1). Prints one JSON object: requests, seconds, ops_per_s, p50/p99/p999 us, errors, first_error,\n"
    "counted (replies equal to TEXT).\n";

}  // namespace

int main(int argc, char** argv) {
  ReplayOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--help" || f == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) fail(2, "missing value for " + f + "\n" + kUsage);
    const char* v = argv[++i];
    if (f == "--commands") o.commands = v;
    else if (f == "--host") o.host = v;
    else if (f == "--count-reply") o.count_reply = v;
    else if (f == "--port") {
      unsigned p = 0;
      if (!parse_unsigned(v, &p) || p > 65535) fail(2, "bad --port");
      o.port = static_cast<int>(p);
    } else if (f == "--connections") {
      if (!parse_unsigned(v, &o.connections)) fail(2, "bad --connections");
    } else if (f == "--threads") {
      if (!parse_unsigned(v, &o.threads)) fail(2, "bad --threads");
    } else if (f == "--pipeline") {
      if (!parse_unsigned(v, &o.pipeline)) fail(2, "bad --pipeline");
    } else if (f == "--timeout-s") {
      o.timeout_s = std::atof(v);
      if (!(o.timeout_s > 0)) fail(2, "bad --timeout-s");
    } else {
      fail(2, "unknown flag " + f + "\n" + kUsage);
    }
  }
  if (o.commands.empty()) fail(2, std::string("--commands is required\n") + kUsage);
  std::ifstream in(o.commands, std::ios::binary);
  if (!in) fail(2, "cannot read " + o.commands);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<std::string_view> cmds = split_commands(all);
  if (cmds.empty()) fail(2, o.commands + " holds no command");
  if (cmds.size() > 0xFFFFFFFFu) fail(2, "more than 2^32 commands");
  o.threads = std::min(o.threads, o.connections);

  std::vector<std::unique_ptr<Conn>> conns;
  for (unsigned c = 0; c < o.connections; ++c) {
    conns.push_back(std::make_unique<Conn>());
    conns.back()->fd = connect_to(o);
  }
  for (std::size_t i = 0; i < cmds.size(); ++i) conns[i % o.connections]->mine.push_back(static_cast<std::uint32_t>(i));
  std::vector<std::vector<Conn*>> per_thread(o.threads);
  for (unsigned c = 0; c < o.connections; ++c) per_thread[c % o.threads].push_back(conns[c].get());
  std::vector<ThreadResult> results(o.threads);
  const std::uint64_t t0 = now_ns();
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < o.threads; ++t)
    ts.emplace_back([&, t] { run_thread(o, cmds, per_thread[t], &results[t]); });
  for (auto& t : ts) t.join();
  const double seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  for (auto& c : conns) ::close(c->fd);

  ThreadResult all_r;
  for (auto& r : results) {
    all_r.latency.merge(r.latency);
    all_r.replies += r.replies;
    all_r.counted += r.counted;
    if (r.errors && all_r.errors == 0) all_r.first_error = r.first_error;
    all_r.errors += r.errors;
  }
  std::string first_error;
  for (char ch : all_r.first_error) first_error += (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ? '?' : ch;
  std::printf("{\"requests\": %llu, \"seconds\": %.6f, \"ops_per_s\": %.1f, \"p50_us\": %.2f, \"p99_us\": %.2f, "
              "\"p999_us\": %.2f, \"errors\": %llu, \"first_error\": \"%s\", \"counted\": %llu, \"connections\": %u, "
              "\"threads\": %u, \"pipeline\": %u}\n",
              static_cast<unsigned long long>(all_r.replies), seconds, static_cast<double>(all_r.replies) / seconds,
              all_r.latency.quantile_ns(0.5) * 1e-3, all_r.latency.quantile_ns(0.99) * 1e-3,
              all_r.latency.quantile_ns(0.999) * 1e-3, static_cast<unsigned long long>(all_r.errors), first_error.c_str(),
              static_cast<unsigned long long>(all_r.counted), o.connections, o.threads, o.pipeline);
  return 0;
}
