#include "server/connection.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace duet::server {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string ClientInfo::line() {
  std::lock_guard<std::mutex> lk(m);
  const auto now = std::chrono::steady_clock::now();
  auto secs = [&](std::chrono::steady_clock::time_point t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - t).count());
  };
  const std::uint64_t idle_ns = now_ns() - std::min(now_ns(), last_ns.load(std::memory_order_relaxed));
  return "id=" + std::to_string(id) + " addr=" + addr + " laddr=" + laddr + " fd=" + std::to_string(fd) +
         " name=" + name + " age=" + secs(created) + " idle=" + std::to_string(idle_ns / 1000000000ull) +
         " flags=N db=" + std::to_string(db.load()) + " sub=0 psub=0 ssub=0 multi=-1 cmd=" + last_cmd.load() +
         " user=default redir=-1 resp=" + std::to_string(resp.load()) + " lib-name=" + lib_name +
         " lib-ver=" + lib_ver + "\n";
}

void InputBuffer::reserve_more(std::size_t more) {
  if (len + more <= cap) return;
  const std::size_t ncap = std::max(len + more, cap * 2);
  std::unique_ptr<char[]> bigger(new char[ncap]);
  if (len) std::memcpy(bigger.get(), data.get(), len);
  data = std::move(bigger);
  cap = ncap;
}

void InputBuffer::consume_front(std::size_t n) {
  std::memmove(data.get(), data.get() + n, len - n);
  len -= n;
}

ReadOutcome read_input(Conn& c, std::size_t* bytes) {
  *bytes = 0;
  const std::size_t have = c.in.len - c.in_off;
  const std::size_t more = c.parser.wanted() > have ? c.parser.wanted() - have : 0;
  const std::size_t want = std::min<std::size_t>(std::max<std::size_t>(64 * 1024, more), 16u << 20);
  c.in.reserve_more(want);
  const ssize_t n = ::recv(c.fd, c.in.data.get() + c.in.len, want, 0);
  if (n == 0) return ReadOutcome::kEof;
  if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? ReadOutcome::kAgain : ReadOutcome::kError;
  c.in.len += static_cast<std::size_t>(n);
  *bytes = static_cast<std::size_t>(n);
  return ReadOutcome::kData;
}

ReadOutcome discard_input(Conn& c) {
  static thread_local char sink[64 * 1024];
  for (int i = 0; i < 16; ++i) {
    const ssize_t n = ::recv(c.fd, sink, sizeof sink, 0);
    if (n > 0) continue;
    if (n == 0) return ReadOutcome::kEof;
    return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? ReadOutcome::kAgain : ReadOutcome::kError;
  }
  return ReadOutcome::kData;
}

bool send_output(Conn& c, std::uint64_t* bytes) {
  *bytes = 0;
  while (c.out_off < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return false;
    }
    c.out_off += static_cast<std::size_t>(n);
    *bytes += static_cast<std::uint64_t>(n);
  }
  if (c.out_off == c.out.size()) {
    c.out.clear();
    c.out_off = 0;
  }
  return true;
}

void compact_input(Conn& c) {
  if (c.in_off == c.in.len) {
    c.in.len = 0;
    c.in_off = 0;
    if (c.in.cap > (1u << 20)) {  // give back what a large request needed
      c.in.data.reset();
      c.in.cap = 0;
    }
  } else if (c.in_off > (1u << 20) && c.in_off * 2 > c.in.len) {
    c.in.consume_front(c.in_off);
    c.in_off = 0;
  }
}

std::unique_ptr<PendingReply> ReplyPool::take() {
  if (spare_.empty()) return std::make_unique<PendingReply>();
  std::unique_ptr<PendingReply> r = std::move(spare_.back());
  spare_.pop_back();
  return r;
}

void ReplyPool::give_back(std::unique_ptr<PendingReply> r) {
  if (spare_.size() >= 65536) return;
  r->kind = PendingReply::Kind::kSingle;
  r->cmd = nullptr;
  r->error = false;
  r->done.store(false, std::memory_order_relaxed);
  r->parts_left.store(1, std::memory_order_relaxed);
  r->bytes.clear();
  r->parts.clear();
  spare_.push_back(std::move(r));
}

void parse_input(Conn& c, const InputLimits& limits, RequestSink& sink) {
  const std::uint64_t arrival_ns = now_ns();  // one clock read for every command of this input
  auto fail_and_close = [&](std::string_view msg) {
    auto r = std::make_unique<PendingReply>();
    ReplyWriter(&r->bytes, 2).error(msg);
    r->done.store(true);
    c.replies.push_back(std::move(r));
    c.phase = ConnPhase::kClosing;
  };
  auto over_limit = [&] {
    return "ERR client query buffer limit of " + std::to_string(limits.query_buffer_limit) + " bytes reached";
  };
  while (c.phase == ConnPhase::kOpen) {
    std::size_t consumed = 0;
    const auto res = c.parser.parse(c.in.data.get() + c.in_off, c.in.len - c.in_off, &consumed);
    // Input over the limit is refused however it arrived: a request seen whole in one read (its
    // bytes were all waiting in the socket) as much as one still arriving, or one whose headers
    // already say it will need more.
    if (res == RequestParser::Result::kIncomplete) {
      if (std::max(c.in.len - c.in_off, c.parser.wanted()) > limits.query_buffer_limit) fail_and_close(over_limit());
      break;
    }
    if (res == RequestParser::Result::kError) {
      fail_and_close(c.parser.error());
      break;
    }
    if (consumed > limits.query_buffer_limit) {
      fail_and_close(over_limit());
      break;
    }
    const auto& args = c.parser.args();
    if (args.empty()) {
      c.in_off += consumed;
      continue;
    }
    // Barrier commands (DBSIZE, FLUSHDB, FLUSHALL, SCAN) see the effects of the client's
    // earlier commands.
    const CommandDef* def = find_command(args[0]);
    const bool barrier = def && def->has(kBarrier);
    if (barrier) {
      bool all_done = true;
      for (const auto& r : c.replies)
        if (!r->done.load(std::memory_order_acquire)) all_done = false;
      if (!all_done) {
        c.parse_state = ParseState::kBarrierWait;
        break;  // parsed again once the earlier replies are in
      }
    }
    c.in_off += consumed;
    sink.on_request(c, def, Args(args.data(), args.size()), arrival_ns);
    // A barrier whose reply is not final yet (SCAN 0 handed to the background thread) holds the
    // client's later commands back until it has replied: they must not take effect before it
    // has seen the keyspace (a pipelined DEL could otherwise hide a key from the SCAN before it).
    if (barrier && !c.replies.empty() && !c.replies.back()->done.load(std::memory_order_acquire)) {
      c.parse_state = ParseState::kBarrierWait;
      break;
    }
    if (c.replies.size() >= limits.max_pending_replies) {  // a huge pipeline: answer some first
      c.parse_state = ParseState::kPaused;
      break;
    }
  }
  compact_input(c);
}

FlushResult flush_replies(Conn& c, ThreadMetrics& metrics, ReplyPool& pool, std::size_t max_pending_replies) {
  const std::uint64_t t = c.replies.empty() ? 0 : now_ns();
  while (!c.replies.empty() && c.replies.front()->done.load(std::memory_order_acquire)) {
    PendingReply* r = c.replies.front().get();
    if (r->cmd) {
      const unsigned i = r->cmd->id;
      bump(metrics.calls[i]);
      if (r->error) bump(metrics.errors[i]);
      if (r->start_ns) metrics.latency[i]->observe(static_cast<double>(t - r->start_ns) / 1e9);
    }
    if (c.out.size() == c.out_off) {
      c.out.swap(r->bytes);
      c.out_off = 0;
    } else {
      c.out += r->bytes;
    }
    pool.give_back(std::move(c.replies.front()));
    c.replies.pop_front();
  }
  std::uint64_t sent = 0;
  const bool ok = send_output(c, &sent);
  bump(metrics.net_out, sent);
  if (!ok) return FlushResult::kSendFailed;
  if (c.closing() && c.replies.empty() && !c.output_pending()) return FlushResult::kAllSent;
  if (c.parse_state == ParseState::kBarrierWait && c.replies.empty()) {
    c.parse_state = ParseState::kReady;
    return FlushResult::kParseAgain;
  }
  if (c.parse_state == ParseState::kPaused && c.replies.size() < max_pending_replies / 2) {
    c.parse_state = ParseState::kReady;
    return FlushResult::kParseAgain;
  }
  return FlushResult::kKeepOpen;
}

void start_linger(Conn& c, std::uint64_t until_ns) {
  c.phase = ConnPhase::kLingering;
  c.linger_until_ns = until_ns;
  ::shutdown(c.fd, SHUT_WR);
}

std::string socket_name(int fd, bool local) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if ((local ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)
             : ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)) != 0)
    return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (a.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

}  // namespace duet::server
