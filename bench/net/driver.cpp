#include "driver.hpp"

#include <fcntl.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "resp_client.hpp"

namespace duet::bench::net {

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

namespace {

/// Reports an unrecoverable failure (protocol error, closed connection, stall) and exits 1.
[[noreturn]] void fatal(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "duet_bench_net: FATAL: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

enum Op : std::uint8_t { kGet = 0, kSet = 1 };

/// A reply shown in a message: type byte and up to 80 bytes of text.
std::string describe(const Reply& r) {
  std::string s(1, r.type);
  if (r.nil) return s + "-1 (nil)";
  if (r.type == ':' || r.type == '*') return s + std::to_string(r.integer);
  std::string t(r.text.substr(0, 80));
  for (char& ch : t)
    if (static_cast<unsigned char>(ch) < 0x20) ch = '?';
  return s + t + (r.text.size() > 80 ? "..." : "");
}

/// Waits up to `timeout_ms` for `events` on fd. >0: ready; 0: timed out; <0: poll failed (errno).
int wait_fd(int fd, short events, int timeout_ms) {
  const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(timeout_ms) * 1000000ull;
  for (;;) {
    const std::uint64_t now = now_ns();
    const int left = now >= deadline ? 0 : static_cast<int>((deadline - now + 999999) / 1000000);
    pollfd pfd{fd, events, 0};
    const int rc = ::poll(&pfd, 1, left);
    if (rc < 0 && errno == EINTR) continue;
    return rc;
  }
}

/// Opens a fresh connection to the server at `addr`, sends INFO EVERYTHING (every section, on
/// Redis as on duet) and prints the reply to stderr under a header. Connecting and reading each
/// time out after 2 s; any failure is reported in the output, never fatal.
void print_server_info(const sockaddr_storage& addr, socklen_t addr_len, const std::string& where) {
  constexpr int kTimeoutMs = 2000;
  std::fprintf(stderr, "duet_bench_net: ---- server state at the stall: INFO EVERYTHING from %s "
               "(fresh connection, 2 s timeouts) ----\n", where.c_str());
  std::fflush(stderr);
  auto failed = [](const std::string& why) {
    std::fprintf(stderr, "duet_bench_net: INFO failed: %s\n", why.c_str());
    std::fprintf(stderr, "duet_bench_net: ---- end of INFO ----\n");
    std::fflush(stderr);
  };
  if (addr_len == 0) return failed("no server address recorded");
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return failed(std::string("socket: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), addr_len) != 0) {
    if (errno != EINPROGRESS) return failed(std::string("connect: ") + std::strerror(errno));
    const int rc = wait_fd(fd, POLLOUT, kTimeoutMs);
    if (rc < 0) return failed(std::string("poll: ") + std::strerror(errno));
    if (rc == 0) return failed("connect timed out after 2 s");
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) return failed(std::string("connect: ") + std::strerror(err));
  }
  const std::string request = "*2\r\n$4\r\nINFO\r\n$10\r\nEVERYTHING\r\n";
  for (std::size_t off = 0; off < request.size();) {
    const ssize_t n = ::send(fd, request.data() + off, request.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const int rc = wait_fd(fd, POLLOUT, kTimeoutMs);
      if (rc < 0) return failed(std::string("poll: ") + std::strerror(errno));
      if (rc == 0) return failed("send timed out after 2 s");
    } else {
      return failed(std::string("send: ") + std::strerror(errno));
    }
  }
  // Read until one whole reply has arrived, 2 s at most in all.
  const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(kTimeoutMs) * 1000000ull;
  std::string in;
  char buf[64 * 1024];
  for (;;) {
    Reply r;
    std::size_t used = 0;
    std::string err;
    const ParseResult pr = parse_reply(in.data(), in.size(), &used, &r, &err);
    if (pr == ParseResult::kProtocolError) return failed("protocol error in the reply: " + err);
    if (pr == ParseResult::kReply) {
      if (r.type == '$' && !r.nil) {
        std::string text(r.text);
        std::string out;
        out.reserve(text.size());
        for (char ch : text)
          if (ch != '\r') out.push_back(ch);
        std::fputs(out.c_str(), stderr);
        if (!out.empty() && out.back() != '\n') std::fputc('\n', stderr);
        std::fprintf(stderr, "duet_bench_net: ---- end of INFO ----\n");
        std::fflush(stderr);
        return;
      }
      return failed("the server answered " + describe(r));
    }
    const std::uint64_t now = now_ns();
    if (now >= deadline)
      return failed("no complete reply within 2 s (" + std::to_string(in.size()) + " bytes received)");
    const int rc = wait_fd(fd, POLLIN, static_cast<int>((deadline - now + 999999) / 1000000));
    if (rc < 0) return failed(std::string("poll: ") + std::strerror(errno));
    if (rc == 0) continue;  // the deadline check above reports it
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) return failed("the server closed the connection (" + std::to_string(in.size()) + " bytes received)");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return failed(std::string("recv: ") + std::strerror(errno));
    }
    in.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace

void PhaseStats::merge(const PhaseStats& o) {
  requests += o.requests, gets += o.gets, sets += o.sets;
  get_hits += o.get_hits, get_misses += o.get_misses;
  errors += o.errors, wrong_type += o.wrong_type, wrong_values += o.wrong_values;
  if (first_problem.empty()) first_problem = o.first_problem;
  seconds = std::max(seconds, o.seconds);
  all.merge(o.all), get.merge(o.get), set.merge(o.set);
}

struct Driver::Conn {
  int fd = -1;
  unsigned id = 0;
  std::string out;
  std::size_t out_off = 0;
  bool writing = false;  // EPOLLOUT registered
  std::vector<char> in = std::vector<char>(64 * 1024);
  std::size_t in_beg = 0, in_end = 0;
  std::vector<std::uint64_t> keys;  // the current batch
  std::vector<std::uint8_t> ops;
  std::size_t next_reply = 0;
  std::uint64_t t_send = 0;
  ~Conn() {
    if (fd >= 0) ::close(fd);
  }
};

struct Driver::Worker {
  int ep = -1;
  std::vector<std::unique_ptr<Conn>> conns;
  kv::Rng rng{1};
  std::unique_ptr<kv::KeyChooser> chooser;
  ~Worker() {
    if (ep >= 0) ::close(ep);
  }
};

struct Driver::Phase {
  bool load = false;            // SET keys 0..keyspace-1 in order
  bool measure = false;         // record latencies
  bool verify = false;          // check GET values and hits
  std::uint64_t start_ns = 0;
  std::uint64_t deadline_ns = 0;  // 0: none
  std::uint64_t limit = 0;        // requests (or keys for the load); 0: none
  std::atomic<std::uint64_t> claimed{0};
};

Driver::Driver(const Options& options) : o_(options) {
  if (o_.distribution != kv::Distribution::kUniform)
    zipf_ = std::make_unique<kv::ZipfianGenerator>(o_.keyspace, o_.theta);
  for (unsigned t = 0; t < o_.threads; ++t) {
    auto w = std::make_unique<Worker>();
    w->rng = kv::Rng(kv::derive_seed(o_.seed, t));
    w->chooser = std::make_unique<kv::KeyChooser>(o_.distribution, o_.keyspace, o_.theta, o_.keyspace, zipf_.get());
    // One pow() per Zipfian draw costs more than a request's client-side work: cycle through
    // 2^20 ranks drawn up front instead.
    if (zipf_) w->chooser->use_trace(std::size_t(1) << 20);
    workers_.push_back(std::move(w));
  }
}

Driver::~Driver() = default;

bool Driver::connect(std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(o_.port);
  if (const int rc = getaddrinfo(o_.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *error = "cannot resolve " + o_.host + ": " + gai_strerror(rc);
    return false;
  }
  for (auto& w : workers_) {
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    if (w->ep < 0) {
      *error = std::string("epoll_create1: ") + std::strerror(errno);
      freeaddrinfo(res);
      return false;
    }
  }
  for (unsigned i = 0; i < o_.connections; ++i) {
    auto c = std::make_unique<Conn>();
    c->id = i;
    int fd = -1, last_errno = 0;
    for (addrinfo* a = res; a; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) {
        last_errno = errno;
        continue;
      }
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        if (server_addr_len_ == 0 && a->ai_addrlen <= sizeof server_addr_) {
          std::memcpy(&server_addr_, a->ai_addr, a->ai_addrlen);
          server_addr_len_ = a->ai_addrlen;
        }
        break;
      }
      last_errno = errno;
      ::close(fd);
      fd = -1;
    }
    if (fd < 0) {
      *error = "connection " + std::to_string(i) + " to " + o_.host + ":" + port + ": " + std::strerror(last_errno);
      freeaddrinfo(res);
      return false;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->fd = fd;
    Worker& w = *workers_[i % workers_.size()];
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c.get();
    if (epoll_ctl(w.ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("epoll_ctl: ") + std::strerror(errno);
      freeaddrinfo(res);
      return false;
    }
    w.conns.push_back(std::move(c));
  }
  freeaddrinfo(res);
  return true;
}

PhaseStats Driver::load() {
  Phase p;
  p.load = true;
  p.limit = o_.keyspace;
  return run_phase(p);
}

PhaseStats Driver::run_mix(double seconds, std::uint64_t requests, bool measure, bool verify) {
  Phase p;
  p.measure = measure;
  p.verify = verify;
  p.limit = requests;
  p.start_ns = now_ns();
  if (!requests) p.deadline_ns = p.start_ns + static_cast<std::uint64_t>(seconds * 1e9);
  return run_phase(p);
}

PhaseStats Driver::run_phase(Phase& p) {
  if (!p.start_ns) p.start_ns = now_ns();
  std::vector<PhaseStats> stats(workers_.size());
  std::vector<std::thread> threads;
  for (std::size_t t = 1; t < workers_.size(); ++t)
    threads.emplace_back([this, &p, &stats, t] { run_worker(*workers_[t], p, &stats[t]); });
  run_worker(*workers_[0], p, &stats[0]);
  for (auto& th : threads) th.join();
  PhaseStats total;
  for (const auto& s : stats) total.merge(s);
  return total;
}

void Driver::run_worker(Worker& w, Phase& p, PhaseStats* st) {
  const std::uint64_t stall_ns = static_cast<std::uint64_t>(o_.stall_seconds * 1e9);
  const unsigned mix_total = o_.get_weight + o_.set_weight;
  // The value every SET writes for a key (the key's digits, repeated) and its "$<n>\r\n".
  std::string value(o_.value_bytes, 'v'), expected(o_.value_bytes, 'v');
  std::string value_header(1, '$');  // (not "$" + ...: GCC 12 warns falsely about that)
  value_header.append(std::to_string(o_.value_bytes)).append("\r\n");
  std::uint64_t last_reply_ns = p.start_ns;

  auto note_problem = [&](const Conn& c, const char* what, const Reply& r) {
    if (!st->first_problem.empty()) return;
    const std::size_t i = c.next_reply;
    char key[kKeyBytes];
    format_key(c.keys[i], key);
    st->first_problem = std::string(what) + " to " + (c.ops[i] == kGet ? "GET " : "SET ") +
                        std::string(key, kKeyBytes) + ": " + describe(r);
  };

  auto flush = [&](Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_off += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!c.writing) {
          epoll_event ev{};
          ev.events = EPOLLIN | EPOLLOUT;
          ev.data.ptr = &c;
          if (epoll_ctl(w.ep, EPOLL_CTL_MOD, c.fd, &ev) != 0)
            fatal("epoll_ctl (EPOLLIN|EPOLLOUT) on connection " + std::to_string(c.id) + ": " + std::strerror(errno));
          c.writing = true;
        }
        return;
      }
      fatal("send on connection " + std::to_string(c.id) + ": " + std::strerror(errno));
    }
    if (c.writing) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &c;
      if (epoll_ctl(w.ep, EPOLL_CTL_MOD, c.fd, &ev) != 0)
        fatal("epoll_ctl (EPOLLIN) on connection " + std::to_string(c.id) + ": " + std::strerror(errno));
      c.writing = false;
    }
  };

  // Starts the connection's next batch; false when the phase has no more work for it.
  auto start_batch = [&](Conn& c, std::uint64_t now) -> bool {
    std::uint64_t first = 0, count = o_.pipeline;
    if (p.deadline_ns && now >= p.deadline_ns) return false;
    if (p.limit) {
      first = p.claimed.fetch_add(count, std::memory_order_relaxed);
      if (first >= p.limit) return false;
      count = std::min<std::uint64_t>(count, p.limit - first);
    }
    c.out.clear();
    c.out_off = 0;
    c.keys.resize(count);
    c.ops.resize(count);
    c.next_reply = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      std::uint64_t k;
      std::uint8_t op;
      if (p.load) {
        k = first + i, op = kSet;
      } else {
        op = w.rng.below(mix_total) < o_.get_weight ? kGet : kSet;
        k = w.chooser->next(w.rng, o_.keyspace);
      }
      c.keys[i] = k;
      c.ops[i] = op;
      if (op == kGet) {
        append_get(c.out, k);
      } else {
        format_value(k, value.data(), value.size());
        append_set(c.out, k, value_header, value);
      }
    }
    c.t_send = now_ns();
    flush(c);
    return true;
  };

  // Handles one reply to the request c.next_reply, received at `now`.
  auto on_reply = [&](Conn& c, const Reply& r, std::uint64_t now) {
    const std::size_t i = c.next_reply;
    const std::uint8_t op = c.ops[i];
    ++st->requests;
    if (r.type == '-') {
      ++st->errors;
      note_problem(c, "error reply", r);
    } else if (op == kGet) {
      ++st->gets;
      if (r.type != '$') {
        ++st->wrong_type;
        note_problem(c, "unexpected reply", r);
      } else if (r.nil) {
        ++st->get_misses;
        if (p.verify && !o_.allow_misses) note_problem(c, "miss (nil) on a loaded key", r);
      } else {
        ++st->get_hits;
        if (p.verify) {
          format_value(c.keys[i], expected.data(), expected.size());
          if (r.text != std::string_view(expected)) {
            ++st->wrong_values;
            note_problem(c, "wrong value", r);
          }
        }
      }
    } else {
      ++st->sets;
      if (r.type != '+' || r.text != "OK") {
        ++st->wrong_type;
        note_problem(c, "unexpected reply", r);
      }
    }
    if (p.measure) {
      const std::uint64_t lat = now > c.t_send ? now - c.t_send : 0;
      st->all.add(lat);
      (op == kGet ? st->get : st->set).add(lat);
    }
    ++c.next_reply;
  };

  // Reads what the socket holds and handles the complete replies; true when the batch is done.
  auto on_readable = [&](Conn& c) -> bool {
    for (;;) {
      if (c.in_end == c.in.size()) {
        if (c.in_beg > 0) {
          std::memmove(c.in.data(), c.in.data() + c.in_beg, c.in_end - c.in_beg);
          c.in_end -= c.in_beg;
          c.in_beg = 0;
        } else {
          c.in.resize(c.in.size() * 2);
        }
      }
      const std::size_t room = c.in.size() - c.in_end;
      const ssize_t n = ::recv(c.fd, c.in.data() + c.in_end, room, 0);
      if (n == 0) fatal("the server closed connection " + std::to_string(c.id));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
        fatal("recv on connection " + std::to_string(c.id) + ": " + std::strerror(errno));
      }
      c.in_end += static_cast<std::size_t>(n);
      const std::uint64_t now = now_ns();
      for (;;) {
        Reply r;
        std::size_t used = 0;
        std::string err;
        const ParseResult pr = parse_reply(c.in.data() + c.in_beg, c.in_end - c.in_beg, &used, &r, &err);
        if (pr == ParseResult::kIncomplete) break;
        if (pr == ParseResult::kProtocolError)
          fatal("protocol error on connection " + std::to_string(c.id) + ": " + err);
        if (c.next_reply >= c.keys.size())
          fatal("connection " + std::to_string(c.id) + " received a reply to no request: " + describe(r));
        on_reply(c, r, now);
        c.in_beg += used;
      }
      if (c.in_beg == c.in_end) c.in_beg = c.in_end = 0;
      if (c.next_reply == c.keys.size()) {
        if (c.in_end != c.in_beg) fatal("connection " + std::to_string(c.id) + " received more replies than requests");
        last_reply_ns = now;
        return true;
      }
      if (static_cast<std::size_t>(n) < room) return false;
    }
  };

  std::size_t active = 0;
  {
    const std::uint64_t now = now_ns();
    for (auto& c : w.conns)
      if (start_batch(*c, now)) ++active;
  }
  std::vector<epoll_event> events(std::max<std::size_t>(w.conns.size(), 1));
  // The stall clock: the last time a connection of this thread finished a whole batch.
  std::uint64_t last_progress = now_ns();
  // Set when the stall condition held after a pass: the next pass polls without waiting, and the
  // stall is declared only if that pass makes no progress either.
  bool recheck = false;
  while (active > 0) {
    const int n = epoll_wait(w.ep, events.data(), static_cast<int>(events.size()), recheck ? 0 : 200);
    if (n < 0) {
      if (errno == EINTR) continue;
      fatal(std::string("epoll_wait: ") + std::strerror(errno));
    }
    for (int e = 0; e < n; ++e) {
      Conn& c = *static_cast<Conn*>(events[e].data.ptr);
      if (events[e].events & EPOLLOUT) flush(c);
      if (events[e].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        if (on_readable(c)) {
          last_progress = last_reply_ns;
          if (!start_batch(c, now_ns())) --active;
        }
      }
    }
    // The stall check follows the pass, so that batches finished by replies that arrived while
    // this thread was not running (descheduled, stopped) reset the clock before it is read. The
    // confirming pass (recheck) closes the gap between the handling above and the clock read:
    // a thread stopped in that gap finds its replies there before the stall is declared.
    if (active == 0 || now_ns() - last_progress <= stall_ns) {
      recheck = false;
    } else if (!recheck) {
      recheck = true;
    } else {
      report_stall(w, active);
    }
  }
  st->seconds = static_cast<double>(last_reply_ns - p.start_ns) * 1e-9;
}

void Driver::report_stall(const Worker& w, std::size_t active) {
  // One report per process: a second thread that stalls meanwhile waits for the first's exit.
  static std::atomic<bool> reporting{false};
  if (reporting.exchange(true)) {
    for (;;) ::pause();
  }
  std::fflush(stdout);
  std::fprintf(stderr,
               "duet_bench_net: FATAL: stall: no connection of a client thread finished a batch for %g s "
               "(--stall; %zu of its %zu connections waiting)\n",
               o_.stall_seconds, active, w.conns.size());
  std::fprintf(stderr,
               "duet_bench_net: the waiting connections (replies received / batch size, request bytes sent / "
               "queued, bytes read but not yet a whole reply, the socket's unread bytes (FIONREAD) and unsent "
               "bytes (SIOCOUTQ)):\n");
  constexpr std::size_t kMaxLines = 64;
  std::size_t waiting = 0, with_unread = 0, unwritten = 0, unwritten_queue_empty = 0, with_unsent = 0;
  for (const auto& cp : w.conns) {
    const Conn& c = *cp;
    if (c.next_reply >= c.keys.size()) continue;  // no batch in flight
    int unread = 0, unsent = 0;
    const bool unread_ok = ::ioctl(c.fd, FIONREAD, &unread) == 0;
    const int unread_errno = errno;
    const bool unsent_ok = ::ioctl(c.fd, SIOCOUTQ, &unsent) == 0;
    const int unsent_errno = errno;
    if (unread_ok && unread > 0) ++with_unread;
    if (unsent_ok && unsent > 0) ++with_unsent;
    if (c.out_off < c.out.size()) {
      ++unwritten;
      if (unsent_ok && unsent == 0) ++unwritten_queue_empty;
    }
    if (waiting++ < kMaxLines) {
      const std::string unread_s = unread_ok ? std::to_string(unread) : std::string("? (") + std::strerror(unread_errno) + ")";
      const std::string unsent_s = unsent_ok ? std::to_string(unsent) : std::string("? (") + std::strerror(unsent_errno) + ")";
      std::fprintf(stderr,
                   "  conn %u: replies %zu/%zu, request bytes sent %zu/%zu, buffered %zu, socket unread %s, "
                   "unsent %s%s\n",
                   c.id, c.next_reply, c.keys.size(), c.out_off, c.out.size(), c.in_end - c.in_beg, unread_s.c_str(),
                   unsent_s.c_str(), c.writing ? " (waiting for EPOLLOUT)" : "");
    }
  }
  if (waiting > kMaxLines) std::fprintf(stderr, "  ... and %zu more waiting connections\n", waiting - kMaxLines);
  if (with_unread > 0)
    std::fprintf(stderr,
                 "duet_bench_net: connections with unread bytes in the socket: %zu of %zu waiting -- replies have "
                 "arrived and the client did not read them (client at fault)\n",
                 with_unread, waiting);
  else
    std::fprintf(stderr,
                 "duet_bench_net: connections with unread bytes in the socket: none of %zu waiting -- the server has "
                 "not answered\n",
                 waiting);
  if (unwritten > 0)
    std::fprintf(stderr,
                 "duet_bench_net: note: %zu waiting connections have request bytes the client has not written yet "
                 "(%zu of them with an empty socket send queue, where the client, not the server, holds them back)\n",
                 unwritten, unwritten_queue_empty);
  if (with_unsent > 0)
    std::fprintf(stderr,
                 "duet_bench_net: note: %zu waiting connections have bytes in the socket's send queue (not yet "
                 "acknowledged by the server's host)\n",
                 with_unsent);
  std::fflush(stderr);
  print_server_info(server_addr_, server_addr_len_, o_.host + ":" + std::to_string(o_.port));
  std::_Exit(1);
}

}  // namespace duet::bench::net
