#include "server/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <netdb.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <deque>
#include <functional>
#include <unordered_set>

#include "common/log.hpp"
#include "server/key_batch.hpp"
#include "server/resp.hpp"

namespace duet::server {

namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::string error_line(std::string_view msg) {
  std::string r;
  ReplyWriter(&r, 2).error(msg);
  return r;
}

/// Which thread owns a key.
unsigned shard_of(std::string_view key, unsigned n) {
  return static_cast<unsigned>((std::hash<std::string_view>{}(key) >> 7) % n);
}

std::string peer_name(int fd, bool local) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if ((local ? ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) : ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)) != 0)
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

}  // namespace

/// What CLIENT LIST shows of a connection; shared between its thread and the client table.
struct ClientInfo {
  std::uint64_t id = 0;
  int fd = -1;
  std::string addr, laddr;
  std::chrono::steady_clock::time_point created;
  std::atomic<std::uint64_t> last_ns{0};  ///< last input, steady-clock ns (written by the owner thread)
  std::mutex m;  // name, lib
  std::string name, lib_name, lib_ver;
  std::atomic<unsigned> db{0};
  std::atomic<int> resp{2};
  std::atomic<const char*> last_cmd{"NULL"};

  std::string line() {
    std::lock_guard<std::mutex> lk(m);
    const auto now = std::chrono::steady_clock::now();
    auto secs = [&](std::chrono::steady_clock::time_point t) {
      return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - t).count());
    };
    const std::uint64_t idle_ns = now_ns() - std::min(now_ns(), last_ns.load(std::memory_order_relaxed));
    return "id=" + std::to_string(id) + " addr=" + addr + " laddr=" + laddr + " fd=" + std::to_string(fd) +
           " name=" + name + " age=" + secs(created) + " idle=" + std::to_string(idle_ns / 1000000000ull) +
           " flags=N db=" + std::to_string(db.load()) +
           " sub=0 psub=0 ssub=0 multi=-1 cmd=" + last_cmd.load() + " user=default redir=-1 resp=" +
           std::to_string(resp.load()) + " lib-name=" + lib_name + " lib-ver=" + lib_ver + "\n";
  }
};

/// A connection's input bytes: grows as needed, never zero-fills (recv writes straight in).
struct InputBuffer {
  std::unique_ptr<char[]> data;
  std::size_t cap = 0, len = 0;
  /// Makes room for `more` bytes after len.
  void reserve_more(std::size_t more) {
    if (len + more <= cap) return;
    const std::size_t ncap = std::max(len + more, cap * 2);
    std::unique_ptr<char[]> bigger(new char[ncap]);
    if (len) std::memcpy(bigger.get(), data.get(), len);
    data = std::move(bigger);
    cap = ncap;
  }
  /// Drops the first n bytes.
  void consume_front(std::size_t n) {
    std::memmove(data.get(), data.get() + n, len - n);
    len -= n;
  }
};

/// One client connection; owned by its thread.
struct Conn {
  int fd = -1;
  unsigned owner = 0;  ///< index of the thread that owns it
  std::shared_ptr<ClientInfo> info;
  InputBuffer in;
  std::size_t in_off = 0;  ///< start of the next request in `in`
  std::string out;
  std::size_t out_off = 0;
  std::deque<std::unique_ptr<PendingReply>> replies;
  RequestParser parser;
  unsigned db = 0;
  int proto = 2;
  std::uint32_t inflight = 0;   ///< key ops dispatched and not yet completed
  std::uint32_t remote = 0;     ///< of those, ops sent to other threads (their notes not yet back)
  std::uint64_t foreign_read_pass = 0;  ///< last loop pass that queued a read of another thread's key here
  bool closing = false;         ///< read no more; close once the replies are out
  bool dead = false;            ///< fd closed; freed when inflight reaches 0
  bool want_write = false;      ///< EPOLLOUT registered
  bool want_read = true;        ///< EPOLLIN registered (off while its output is backed up)
  bool parse_paused = false;    ///< input left unparsed behind a long pipeline
  bool peer_closed = false;     ///< the client shut its sending side (EOF read)
  bool lingering = false;       ///< replies sent and our side shut; draining input until EOF
  std::uint64_t linger_until_ns = 0;  ///< when a lingering connection is closed regardless
  bool waiting_barrier = false; ///< a barrier command waits for earlier replies
  bool dirty = false;           ///< in the thread's flush list
  bool freeing = false;         ///< queued for deletion at the end of the loop pass
};

/// An I/O thread and the shard of keys it owns.
class IoThread {
 public:
  IoThread(Server* srv, unsigned index)
      : srv_(srv), index_(index), runner_([srv](unsigned db) { return srv->space_of(db); },
                                          srv->cfg_.store.limits.max_value_bytes) {}
  ~IoThread() {
    if (epfd_ >= 0) ::close(epfd_);
    if (evfd_ >= 0) ::close(evfd_);
  }

  Status init() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    evfd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epfd_ < 0 || evfd_ < 0) return Status::Unavailable(std::string("epoll/eventfd: ") + std::strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &evfd_;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, evfd_, &ev);
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.ptr = &srv_->listen_fd_;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, srv_->listen_fd_, &ev) != 0)
      return Status::Unavailable(std::string("epoll_ctl(listener): ") + std::strerror(errno));
    outgoing_.resize(srv_->threads_.size());
    notes_out_.resize(srv_->threads_.size());
    return Status::Ok();
  }

  void start() { thread_ = std::thread([this] { loop(); }); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  void wake() {
    if (sleeping_.exchange(false, std::memory_order_seq_cst)) {
      const std::uint64_t one = 1;
      [[maybe_unused]] ssize_t r = ::write(evfd_, &one, sizeof one);
    }
  }
  /// Hands key ops to this thread (from another thread).
  void post_ops(std::vector<KeyOp*>& ops) {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (inbox_.empty()) inbox_.swap(ops);
      else inbox_.insert(inbox_.end(), ops.begin(), ops.end());
      has_work_.store(true, std::memory_order_seq_cst);
    }
    ops.clear();
    wake();
  }
  /// Tells this thread that key ops of its connections completed elsewhere.
  void post_notes(std::vector<std::pair<Conn*, std::uint32_t>>& notes) {
    {
      std::lock_guard<std::mutex> lk(m_);
      notes_in_.insert(notes_in_.end(), notes.begin(), notes.end());
      has_work_.store(true, std::memory_order_seq_cst);
    }
    notes.clear();
    wake();
  }
  ThreadMetrics metrics;
  /// Key ops this thread dispatched / completed (their difference, summed over threads, is
  /// the work in flight that a graceful stop waits for).
  std::atomic<std::uint64_t> dispatched_{0}, completed_{0};

 private:
  void loop();
  void accept_all();
  void on_readable(Conn* c);
  void on_writable(Conn* c);
  void process_input(Conn* c);
  /// Runs or routes one request; spec is its command (null: unknown); arrival_ns is when its
  /// input was taken (the start of its latency).
  void dispatch(Conn* c, const CommandSpec* spec, const std::vector<std::string_view>& args, std::uint64_t arrival_ns);
  void dispatch_keys(Conn* c, PendingReply* r, const CommandSpec& spec, const std::vector<std::string_view>& args);
  void run_local(Conn* c, PendingReply* r, const CommandSpec& spec, const std::vector<std::string_view>& args);
  void route(KeyOp* op);
  void run_work();
  void complete(KeyOp* op, std::string& part);
  KeyOp* new_op() {
    if (op_pool_.empty()) return new KeyOp;
    KeyOp* op = op_pool_.back();
    op_pool_.pop_back();
    return op;
  }
  void free_op(KeyOp* op) {
    if (op_pool_.size() >= 65536) {
      delete op;
      return;
    }
    op->nx = op->xx = op->get = false;
    op->delta = 0;
    op->part = 0;
    op->path = KvRequest::Path::kNone;
    op->value.clear();
    op_pool_.push_back(op);
  }
  std::unique_ptr<PendingReply> new_reply() {
    if (reply_pool_.empty()) return std::make_unique<PendingReply>();
    std::unique_ptr<PendingReply> r = std::move(reply_pool_.back());
    reply_pool_.pop_back();
    return r;
  }
  void free_reply(std::unique_ptr<PendingReply> r) {
    if (reply_pool_.size() >= 65536) return;
    r->kind = PendingReply::Kind::kSingle;
    r->error = false;
    r->done.store(false, std::memory_order_relaxed);
    r->parts_left.store(1, std::memory_order_relaxed);
    r->bytes.clear();
    r->parts.clear();
    reply_pool_.push_back(std::move(r));
  }
  void mark_dirty(Conn* c) {
    if (!c->dirty) {
      c->dirty = true;
      dirty_.push_back(c);
    }
  }
  void flush(Conn* c);
  void close_conn(Conn* c);
  void maybe_free(Conn* c);
  /// Registers EPOLLIN unless the client's unsent output is over kMaxPendingOutput, and
  /// EPOLLOUT while output is pending.
  void update_events(Conn* c);
  // Closes a connection whose last replies are out. If the client may still be sending, shuts
  // our sending side and drains its input (for at most kLingerNs) before closing: closing with
  // unread input makes the kernel send a reset, which can destroy the error reply the client
  // has not read yet.
  void finish_close(Conn* c);
  void expire_lingering();
  static constexpr std::uint64_t kLingerNs = 2'000'000'000;
  static constexpr std::size_t kMaxPendingOutput = 4u << 20;
  static constexpr std::size_t kMaxPendingReplies = 100000;

  Server* srv_;
  unsigned index_;
  int epfd_ = -1, evfd_ = -1;
  std::thread thread_;
  std::mutex m_;
  std::vector<KeyOp*> inbox_;
  std::vector<std::pair<Conn*, std::uint32_t>> notes_in_;
  std::atomic<bool> has_work_{false}, sleeping_{false};
  std::uint64_t pass_ = 1;       ///< loop passes (thread-local)
  bool post_after_run_ = false;  ///< this pass posts its outgoing ops after its own work
  // Thread-local.
  std::vector<std::vector<KeyOp*>> outgoing_;
  std::vector<std::vector<std::pair<Conn*, std::uint32_t>>> notes_out_;
  std::vector<KeyOp*> work_, taken_;
  std::vector<std::pair<Conn*, std::uint32_t>> notes_taken_;
  std::vector<Conn*> dirty_, to_free_;
  std::vector<Conn*> lingering_;  ///< connections in a lingering close, checked each loop pass
  std::vector<KeyOp*> op_pool_;
  std::vector<std::unique_ptr<PendingReply>> reply_pool_;
  std::unordered_set<Conn*> conns_;
  KeyBatchRunner runner_;
  std::string scratch_;
};

void IoThread::loop() {
  epoll_event evs[256];
  bool listening = true;
  for (;;) {
    const bool draining = srv_->draining_.load(std::memory_order_acquire);
    if (draining && listening) {
      ::epoll_ctl(epfd_, EPOLL_CTL_DEL, srv_->listen_fd_, nullptr);
      listening = false;
    }
    if (srv_->exiting_.load(std::memory_order_acquire)) break;
    int timeout = work_.empty() ? 100 : 0;
    sleeping_.store(true, std::memory_order_seq_cst);
    if (has_work_.load(std::memory_order_seq_cst)) timeout = 0;
    const int n = ::epoll_wait(epfd_, evs, 256, timeout);
    sleeping_.store(false, std::memory_order_seq_cst);
    for (int i = 0; i < n; ++i) {
      void* p = evs[i].data.ptr;
      if (p == &evfd_) {
        std::uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(evfd_, &v, sizeof v);
      } else if (p == &srv_->listen_fd_) {
        if (!draining) accept_all();
      } else {
        Conn* c = static_cast<Conn*>(p);
        if (c->dead) continue;
        if (evs[i].events & (EPOLLERR | EPOLLHUP)) {  // both directions gone: nothing can be sent
          close_conn(c);
          continue;
        }
        if (evs[i].events & EPOLLOUT) on_writable(c);
        if (!c->dead && (evs[i].events & EPOLLIN) && !draining) on_readable(c);  // nothing new while stopping
      }
    }
    // Take what other threads sent.
    if (has_work_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lk(m_);
      taken_.swap(inbox_);
      notes_taken_.swap(notes_in_);
      has_work_.store(false, std::memory_order_relaxed);
    }
    for (auto [c, k] : notes_taken_) {
      c->inflight -= k;
      c->remote -= k;
      if (c->dead) maybe_free(c);
      else mark_dirty(c);
    }
    notes_taken_.clear();
    work_.insert(work_.end(), taken_.begin(), taken_.end());
    taken_.clear();
    // Send other shards their ops before running ours, so they work meanwhile (unless one of
    // them must wait for a read queued here; see route()).
    auto post_ops = [&] {
      for (std::size_t s = 0; s < outgoing_.size(); ++s)
        if (!outgoing_[s].empty()) srv_->threads_[s]->post_ops(outgoing_[s]);
    };
    if (!post_after_run_) post_ops();
    if (!work_.empty()) run_work();
    if (post_after_run_) post_ops();
    post_after_run_ = false;
    ++pass_;
    for (std::size_t s = 0; s < notes_out_.size(); ++s)
      if (!notes_out_[s].empty()) srv_->threads_[s]->post_notes(notes_out_[s]);
    for (std::size_t i = 0; i < dirty_.size(); ++i) {
      Conn* c = dirty_[i];
      c->dirty = false;
      if (!c->dead) flush(c);
    }
    dirty_.clear();
    if (!lingering_.empty()) expire_lingering();
    for (Conn* c : to_free_) {
      conns_.erase(c);
      delete c;
    }
    to_free_.clear();
  }
  // Exit: close what is left (replies that could not be sent are dropped).
  for (Conn* c : std::vector<Conn*>(conns_.begin(), conns_.end())) {
    if (!c->dead) {
      flush(c);
      close_conn(c);
    }
  }
  for (KeyOp* op : work_) delete op;
  work_.clear();
  for (KeyOp* op : op_pool_) delete op;
  op_pool_.clear();
  // Connections with commands still running on another thread (a stop that timed out) are
  // left allocated: that thread may still complete them.
  for (Conn* c : conns_)
    if (c->inflight == 0) delete c;
  conns_.clear();
}

void IoThread::accept_all() {
  for (int k = 0; k < 64; ++k) {
    const int fd = ::accept4(srv_->listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (srv_->clients_.load() >= srv_->cfg_.maxclients.load()) {
      static const char kMsg[] = "-ERR max number of clients reached\r\n";
      [[maybe_unused]] ssize_t r = ::send(fd, kMsg, sizeof kMsg - 1, MSG_NOSIGNAL);
      ::close(fd);
      srv_->rejected_.fetch_add(1);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto* c = new Conn;
    c->fd = fd;
    c->owner = index_;
    c->parser = RequestParser(RespLimits{srv_->cfg_.proto_max_bulk_len.load(), srv_->cfg_.max_multibulk_len.load(),
                                         64 * 1024});
    c->info = std::make_shared<ClientInfo>();
    c->info->id = srv_->next_client_id_.fetch_add(1);
    c->info->fd = fd;
    c->info->addr = peer_name(fd, false);
    c->info->laddr = peer_name(fd, true);
    c->info->created = std::chrono::steady_clock::now();
    c->info->last_ns.store(now_ns(), std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lk(srv_->clients_m_);
      srv_->client_table_.push_back(c->info);
    }
    srv_->clients_.fetch_add(1);
    srv_->total_connections_.fetch_add(1);
    bump(metrics.connections, 1);
    conns_.insert(c);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = c;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void IoThread::update_events(Conn* c) {
  const std::size_t pending = c->out.size() - c->out_off;
  const bool want_write = pending > 0;
  // Backpressure: stop reading a client that does not read; nothing to read after its EOF.
  const bool want_read = !c->peer_closed && pending <= kMaxPendingOutput;
  if (c->want_write == want_write && c->want_read == want_read) return;
  c->want_write = want_write;
  c->want_read = want_read;
  epoll_event ev{};
  ev.events = (want_read ? EPOLLIN : 0u) | (want_write ? EPOLLOUT : 0u);
  ev.data.ptr = c;
  ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void IoThread::on_readable(Conn* c) {
  if (c->closing) {
    // Waiting to send the last replies, or lingering: drain and drop input until the client
    // closes its side.
    static thread_local char sink[64 * 1024];
    for (int i = 0; i < 16; ++i) {
      const ssize_t n = ::recv(c->fd, sink, sizeof sink, 0);
      if (n > 0) continue;
      if (n == 0) {
        c->peer_closed = true;
        if (c->lingering) close_conn(c);
        else update_events(c);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        close_conn(c);
      }
      break;
    }
    return;
  }
  const std::size_t have = c->in.len - c->in_off;
  const std::size_t more = c->parser.wanted() > have ? c->parser.wanted() - have : 0;
  const std::size_t want = std::min<std::size_t>(std::max<std::size_t>(64 * 1024, more), 16u << 20);
  c->in.reserve_more(want);
  const ssize_t n = ::recv(c->fd, c->in.data.get() + c->in.len, want, 0);
  if (n == 0) {
    // The client shut its sending side: answer what it sent, then close.
    c->peer_closed = c->closing = true;
    if (c->replies.empty() && c->out_off == c->out.size()) close_conn(c);
    else update_events(c);
    return;
  }
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) close_conn(c);
    return;
  }
  c->in.len += static_cast<std::size_t>(n);
  bump(metrics.net_in, static_cast<std::uint64_t>(n));
  c->info->last_ns.store(now_ns(), std::memory_order_relaxed);
  process_input(c);
}

void IoThread::process_input(Conn* c) {
  const std::uint64_t arrival_ns = now_ns();  // one clock read for every command of this input
  while (!c->closing && !c->dead) {
    std::size_t consumed = 0;
    const auto res = c->parser.parse(c->in.data.get() + c->in_off, c->in.len - c->in_off, &consumed);
    if (res == RequestParser::Result::kIncomplete) {
      const std::uint64_t limit = srv_->cfg_.client_query_buffer_limit.load();
      if (c->in.len - c->in_off > limit) {
        auto r = std::make_unique<PendingReply>();
        r->bytes = error_line("ERR client query buffer limit of " + std::to_string(limit) + " bytes reached");
        r->done.store(true);
        c->replies.push_back(std::move(r));
        c->closing = true;
      }
      break;
    }
    if (res == RequestParser::Result::kError) {
      auto r = std::make_unique<PendingReply>();
      r->bytes = error_line(c->parser.error());
      r->done.store(true);
      c->replies.push_back(std::move(r));
      c->closing = true;
      break;
    }
    const auto& args = c->parser.args();
    if (args.empty()) {
      c->in_off += consumed;
      continue;
    }
    // DBSIZE, FLUSHDB, FLUSHALL and SCAN see the effects of the client's earlier commands.
    const CommandSpec* spec = find_command(args[0]);
    if (spec && (spec->cmd == Cmd::kDbsize || spec->cmd == Cmd::kFlushdb || spec->cmd == Cmd::kFlushall ||
                 spec->cmd == Cmd::kScan)) {
      bool all_done = true;
      for (const auto& r : c->replies)
        if (!r->done.load(std::memory_order_acquire)) all_done = false;
      if (!all_done) {
        c->waiting_barrier = true;
        break;  // parsed again once the earlier replies are in
      }
    }
    c->in_off += consumed;
    dispatch(c, spec, args, arrival_ns);
    if (c->replies.size() >= kMaxPendingReplies) {  // a huge pipeline: answer some first
      c->parse_paused = true;
      break;
    }
  }
  if (c->in_off == c->in.len) {
    c->in.len = 0;
    c->in_off = 0;
    if (c->in.cap > (1u << 20)) {  // give back what a large request needed
      c->in.data.reset();
      c->in.cap = 0;
    }
  } else if (c->in_off > (1u << 20) && c->in_off * 2 > c->in.len) {
    c->in.consume_front(c->in_off);
    c->in_off = 0;
  }
  mark_dirty(c);
}

void IoThread::dispatch(Conn* c, const CommandSpec* spec, const std::vector<std::string_view>& args,
                        std::uint64_t arrival_ns) {
  auto r = new_reply();
  r->start_ns = arrival_ns;
  PendingReply* rp = r.get();
  c->replies.push_back(std::move(r));
  if (!spec) {
    std::string msg = "ERR unknown command '" + std::string(args[0].substr(0, 128)) + "', with args beginning with: ";
    for (std::size_t i = 1; i < args.size() && i < 8; ++i) msg += "'" + std::string(args[i].substr(0, 128)) + "' ";
    rp->bytes = error_line(msg);
    rp->error = true;
    rp->cmd = Cmd::kCount_;
    rp->done.store(true, std::memory_order_release);
    return;
  }
  rp->cmd = spec->cmd;
  c->info->last_cmd.store(spec->name, std::memory_order_relaxed);
  if (!arity_ok(*spec, args.size())) {
    rp->bytes = error_line("ERR wrong number of arguments for '" + std::string(spec->name) + "' command");
    rp->error = true;
    rp->done.store(true, std::memory_order_release);
    return;
  }
  if (spec->first_key > 0) dispatch_keys(c, rp, *spec, args);
  else run_local(c, rp, *spec, args);
}

void IoThread::route(KeyOp* op) {
  const unsigned s = shard_of(op->key, static_cast<unsigned>(srv_->threads_.size()));
  Conn* c = static_cast<Conn*>(op->conn);
  c->inflight++;
  bump(dispatched_);
  // A read of another thread's key runs here when none of this connection's commands is on
  // another thread: the engine's read is linearizable without the owner (only the owner
  // writes the key, in one engine write per batch), and the client's earlier commands have
  // all completed, so it still reads its own writes. This saves the hand-off and the reply's
  // way back.
  const bool read_only = op->cmd == Cmd::kGet || op->cmd == Cmd::kMget || op->cmd == Cmd::kExists ||
                         op->cmd == Cmd::kStrlen || op->cmd == Cmd::kType;
  if (s == index_) {
    work_.push_back(op);
  } else if (read_only && c->remote == 0) {
    work_.push_back(op);
    c->foreign_read_pass = pass_;
  } else {
    // A later command of a connection with such a read queued here must not overtake it on
    // its owner thread: this pass then posts its ops only after running its own work.
    if (c->foreign_read_pass == pass_) post_after_run_ = true;
    c->remote++;
    outgoing_[s].push_back(op);
  }
}

void IoThread::dispatch_keys(Conn* c, PendingReply* r, const CommandSpec& spec,
                             const std::vector<std::string_view>& args) {
  auto fail = [&](std::string_view msg) {
    r->bytes = error_line(msg);
    r->error = true;
    r->done.store(true, std::memory_order_release);
  };
  auto make = [&](std::string_view key) {
    KeyOp* op = new_op();
    op->cmd = spec.cmd;
    op->db = c->db;
    op->resp3 = c->proto >= 3;
    op->key.assign(key);
    op->reply = r;
    op->conn = c;
    return op;
  };
  const std::size_t max_key = srv_->cfg_.store.limits.max_key_bytes;
  for (std::size_t i = 1; i < args.size(); i += (spec.cmd == Cmd::kMset ? 2 : 1)) {
    if (args[i].size() > max_key) {
      return fail("ERR key of " + std::to_string(args[i].size()) + " bytes is over max-key-bytes (" +
                  std::to_string(max_key) + ")");
    }
    if (spec.last_key > 0) break;
  }
  switch (spec.cmd) {
    case Cmd::kSet: {
      KeyOp probe;
      for (std::size_t i = 3; i < args.size(); ++i) {
        if (iequals(args[i], "nx") && !probe.xx) probe.nx = true;
        else if (iequals(args[i], "xx") && !probe.nx) probe.xx = true;
        else if (iequals(args[i], "get")) probe.get = true;
        else if (iequals(args[i], "ex") || iequals(args[i], "px") || iequals(args[i], "exat") ||
                 iequals(args[i], "pxat") || iequals(args[i], "keepttl"))
          return fail("ERR expiry options (EX, PX, EXAT, PXAT, KEEPTTL) are not supported: keys do not expire");
        else return fail("ERR syntax error");
      }
      KeyOp* op = make(args[1]);
      op->value.assign(args[2]);
      op->nx = probe.nx;
      op->xx = probe.xx;
      op->get = probe.get;
      return route(op);
    }
    case Cmd::kGetSet:
    case Cmd::kAppend: {
      KeyOp* op = make(args[1]);
      op->value.assign(args[2]);
      return route(op);
    }
    case Cmd::kIncr:
    case Cmd::kDecr:
    case Cmd::kIncrBy:
    case Cmd::kDecrBy: {
      long long d = spec.cmd == Cmd::kIncr ? 1 : spec.cmd == Cmd::kDecr ? -1 : 0;
      if (spec.cmd == Cmd::kIncrBy || spec.cmd == Cmd::kDecrBy) {
        if (!parse_int64(args[2], &d)) return fail("ERR value is not an integer or out of range");
        if (spec.cmd == Cmd::kDecrBy) {
          if (d == LLONG_MIN) return fail("ERR decrement would overflow");
          d = -d;
        }
      }
      KeyOp* op = make(args[1]);
      op->delta = d;
      return route(op);
    }
    case Cmd::kMset:
      if ((args.size() - 1) % 2 != 0) return fail("ERR wrong number of arguments for 'mset' command");
      [[fallthrough]];
    case Cmd::kMget:
    case Cmd::kDel:
    case Cmd::kExists: {
      const std::size_t step = spec.cmd == Cmd::kMset ? 2 : 1;
      const std::size_t n = (args.size() - 1) / step;
      if (n > 1 || spec.cmd == Cmd::kMget) {
        r->kind = spec.cmd == Cmd::kMget ? PendingReply::Kind::kArray
                  : spec.cmd == Cmd::kMset ? PendingReply::Kind::kAllOk
                                           : PendingReply::Kind::kSum;
        r->parts.resize(n);
        r->parts_left.store(static_cast<std::uint32_t>(n), std::memory_order_relaxed);
      }
      std::vector<KeyOp*> ops;
      ops.reserve(n);
      for (std::size_t k = 0; k < n; ++k) {
        KeyOp* op = make(args[1 + k * step]);
        if (step == 2) op->value.assign(args[2 + k * step]);
        op->part = static_cast<std::uint32_t>(k);
        ops.push_back(op);
      }
      for (KeyOp* op : ops) route(op);  // after parts are sized: a part may finish at once elsewhere
      return;
    }
    default:
      return route(make(args[1]));  // GET, STRLEN, TYPE
  }
}

void IoThread::run_work() {
  const std::size_t max_batch = std::max<std::uint64_t>(1, srv_->cfg_.max_batch.load());
  std::size_t at = 0;
  while (at < work_.size()) {
    const std::size_t n = std::min(max_batch, work_.size() - at);
    std::span<KeyOp*> batch(work_.data() + at, n);
    const std::size_t sent = runner_.run(batch);
    bump(metrics.batches, 1);
    bump(metrics.batched, sent);
    metrics.batch_size.observe(static_cast<double>(n));
    const std::uint64_t t = now_ns();
    for (std::size_t i = 0; i < n; ++i) {
      KeyOp* op = batch[i];
      const double secs = static_cast<double>(t - op->reply->start_ns) / 1e9;
      if (op->path == KvRequest::Path::kHot) metrics.hot_latency.observe(secs);
      else if (op->path == KvRequest::Path::kCold) metrics.cold_latency.observe(secs);
      complete(op, runner_.reply(i));
    }
    at += n;
  }
  work_.clear();
}

void IoThread::complete(KeyOp* op, std::string& part) {
  Conn* c = static_cast<Conn*>(op->conn);
  PendingReply* r = op->reply;
  if (r->finish_part(op->part, part)) r->done.store(true, std::memory_order_release);
  bump(completed_);
  free_op(op);
  if (c->owner == index_) {
    c->inflight--;
    if (c->dead) maybe_free(c);
    else mark_dirty(c);
  } else {
    auto& notes = notes_out_[c->owner];
    if (!notes.empty() && notes.back().first == c) notes.back().second++;
    else notes.emplace_back(c, 1);
  }
}

void IoThread::flush(Conn* c) {
  const std::uint64_t t = c->replies.empty() ? 0 : now_ns();
  while (!c->replies.empty() && c->replies.front()->done.load(std::memory_order_acquire)) {
    PendingReply* r = c->replies.front().get();
    if (r->cmd != Cmd::kCount_) {
      const auto i = static_cast<std::size_t>(r->cmd);
      bump(metrics.calls[i]);
      if (r->error) bump(metrics.errors[i]);
      if (r->start_ns) metrics.latency[i]->observe(static_cast<double>(t - r->start_ns) / 1e9);
    }
    if (c->out.size() == c->out_off) {
      c->out.swap(r->bytes);
      c->out_off = 0;
    } else {
      c->out += r->bytes;
    }
    free_reply(std::move(c->replies.front()));
    c->replies.pop_front();
  }
  while (c->out_off < c->out.size()) {
    const ssize_t n = ::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      close_conn(c);
      return;
    }
    c->out_off += static_cast<std::size_t>(n);
    bump(metrics.net_out, static_cast<std::uint64_t>(n));
  }
  if (c->out_off == c->out.size()) {
    c->out.clear();
    c->out_off = 0;
  }
  const bool pending_out = c->out_off < c->out.size();
  update_events(c);
  if (c->closing && c->replies.empty() && !pending_out) {
    finish_close(c);
    return;
  }
  if (c->waiting_barrier && c->replies.empty()) {
    c->waiting_barrier = false;
    process_input(c);
  } else if (c->parse_paused && c->replies.size() < kMaxPendingReplies / 2) {
    c->parse_paused = false;
    process_input(c);
  }
}

void IoThread::on_writable(Conn* c) { flush(c); }

void IoThread::finish_close(Conn* c) {
  if (c->peer_closed || srv_->draining_.load(std::memory_order_acquire)) {
    close_conn(c);
    return;
  }
  if (c->lingering) return;
  c->lingering = true;
  c->linger_until_ns = now_ns() + kLingerNs;
  ::shutdown(c->fd, SHUT_WR);
  lingering_.push_back(c);
}

void IoThread::expire_lingering() {
  const std::uint64_t now = now_ns();
  std::size_t keep = 0;
  for (Conn* c : lingering_) {
    if (!c->dead && now >= c->linger_until_ns) close_conn(c);
    if (!c->dead) lingering_[keep++] = c;
  }
  lingering_.resize(keep);
}

void IoThread::close_conn(Conn* c) {
  if (c->dead) return;
  c->dead = true;
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  {
    std::lock_guard<std::mutex> lk(srv_->clients_m_);
    auto& t = srv_->client_table_;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == c->info) {
        t[i] = t.back();
        t.pop_back();
        break;
      }
    }
  }
  srv_->clients_.fetch_sub(1);
  maybe_free(c);
}

void IoThread::maybe_free(Conn* c) {
  if (!c->dead || c->inflight != 0 || c->freeing) return;
  c->freeing = true;
  to_free_.push_back(c);  // deleted at the end of the loop pass: c may still be in a list
}

void IoThread::run_local(Conn* c, PendingReply* r, const CommandSpec& spec, const std::vector<std::string_view>& args) {
  std::string& out = r->bytes;
  ReplyWriter w(&out, c->proto);
  auto err = [&](std::string_view msg) {
    out.clear();
    w.error(msg);
    r->error = true;
  };
  auto sub_unknown = [&](std::string_view cmd) {
    err("ERR unknown subcommand '" + std::string(args[1].substr(0, 64)) + "'. Try " + std::string(cmd) + " HELP.");
  };
  switch (spec.cmd) {
    case Cmd::kPing:
      if (args.size() > 2) err("ERR wrong number of arguments for 'ping' command");
      else if (args.size() == 2) w.bulk(args[1]);
      else w.simple("PONG");
      break;
    case Cmd::kEcho: w.bulk(args[1]); break;
    case Cmd::kQuit:
      w.simple("OK");
      c->closing = true;
      break;
    case Cmd::kSelect: {
      long long db;
      if (!parse_int64(args[1], &db)) err("ERR value is not an integer or out of range");
      else if (db < 0 || db >= static_cast<long long>(srv_->cfg_.databases)) err("ERR DB index is out of range");
      else {
        c->db = static_cast<unsigned>(db);
        c->info->db.store(c->db);
        w.simple("OK");
      }
      break;
    }
    case Cmd::kDbsize: {
      auto space = srv_->space_of(c->db);
      w.integer(space ? static_cast<long long>(space->size()) : 0);
      break;
    }
    case Cmd::kFlushdb:
    case Cmd::kFlushall: {
      if (args.size() > 2 || (args.size() == 2 && !iequals(args[1], "sync") && !iequals(args[1], "async"))) {
        err("ERR syntax error");
        break;
      }
      if (spec.cmd == Cmd::kFlushdb) srv_->flush_db(c->db);
      else
        for (unsigned d = 0; d < srv_->cfg_.databases; ++d) srv_->flush_db(d);
      w.simple("OK");
      break;
    }
    case Cmd::kScan: {
      std::uint64_t cursor = 0;
      auto rc = std::from_chars(args[1].data(), args[1].data() + args[1].size(), cursor);
      if (rc.ec != std::errc() || rc.ptr != args[1].data() + args[1].size()) {
        err("ERR invalid cursor");
        break;
      }
      std::string_view pattern;
      long long count = 10;
      bool type_ok = true, bad = false;
      for (std::size_t i = 2; i < args.size(); i += 2) {
        if (i + 1 >= args.size()) {
          bad = true;
          break;
        }
        if (iequals(args[i], "match")) pattern = args[i + 1];
        else if (iequals(args[i], "count")) {
          if (!parse_int64(args[i + 1], &count)) {
            count = -1;  // reported below, as Redis does
            break;
          }
          if (count < 1) bad = true;
        } else if (iequals(args[i], "type")) type_ok = iequals(args[i + 1], "string");
        else bad = true;
      }
      if (count == -1) {
        err("ERR value is not an integer or out of range");
        break;
      }
      if (bad) {
        err("ERR syntax error");
        break;
      }
      std::vector<std::string> keys;
      std::uint64_t next = 0;
      if (auto space = srv_->space_of(c->db)) {
        Status st = space->scan(cursor, static_cast<std::size_t>(std::min<long long>(count, 1 << 20)), &keys, &next);
        if (!st.ok()) {
          err("ERR " + st.message());
          break;
        }
      }
      std::size_t kept = 0;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!type_ok || !(pattern.empty() || pattern == "*" || glob_match(pattern, keys[i]))) continue;
        if (kept != i) keys[kept] = std::move(keys[i]);
        ++kept;
      }
      keys.resize(kept);
      w.array(2);
      w.bulk(std::to_string(next));
      w.array(keys.size());
      for (const auto& k : keys) w.bulk(k);
      break;
    }
    case Cmd::kInfo: {
      std::vector<std::string> sections;
      for (std::size_t i = 1; i < args.size(); ++i) sections.push_back(ascii_lower(args[i]));
      w.verbatim(srv_->info(sections));
      break;
    }
    case Cmd::kConfig: {
      if (iequals(args[1], "get")) {
        if (args.size() < 3) {
          err("ERR wrong number of arguments for 'config|get' command");
          break;
        }
        std::vector<std::pair<std::string, std::string>> kv;
        {
          std::lock_guard<std::mutex> lk(srv_->config_m_);
          for (std::size_t i = 2; i < args.size(); ++i) {
            for (auto& p : config_get(srv_->cfg_, args[i])) {
              bool dup = false;
              for (const auto& q : kv) dup = dup || q.first == p.first;
              if (!dup) kv.push_back(std::move(p));
            }
          }
        }
        w.map(kv.size());
        for (const auto& [k, v] : kv) {
          w.bulk(k);
          w.bulk(v);
        }
      } else if (iequals(args[1], "set")) {
        if (args.size() < 4 || args.size() % 2 != 0) {
          err("ERR wrong number of arguments for 'config|set' command");
          break;
        }
        Status st;
        for (std::size_t i = 2; i + 1 < args.size() && st.ok(); i += 2) st = srv_->config_set(args[i], args[i + 1]);
        if (st.ok()) w.simple("OK");
        else err("ERR CONFIG SET failed: " + st.message());
      } else if (iequals(args[1], "resetstat")) {
        w.simple("OK");
      } else {
        sub_unknown("CONFIG");
      }
      break;
    }
    case Cmd::kClient: {
      const std::string sub = ascii_lower(args[1]);
      if (sub == "id" && args.size() == 2) {
        w.integer(static_cast<long long>(c->info->id));
      } else if (sub == "getname" && args.size() == 2) {
        std::lock_guard<std::mutex> lk(c->info->m);
        if (c->info->name.empty()) w.null();
        else w.bulk(c->info->name);
      } else if (sub == "setname" && args.size() == 3) {
        bool ok = true;
        for (char ch : args[2]) ok = ok && ch > ' ' && ch <= '~';
        if (!ok) {
          err("ERR Client names cannot contain spaces, newlines or special characters.");
          break;
        }
        std::lock_guard<std::mutex> lk(c->info->m);
        c->info->name.assign(args[2]);
        w.simple("OK");
      } else if (sub == "setinfo" && args.size() == 4) {
        const std::string attr = ascii_lower(args[2]);
        bool plain = true;
        for (char ch : args[3]) plain = plain && ch > ' ' && ch <= '~';
        if (!plain) {
          err("ERR " + attr + " cannot contain spaces, newlines or special characters.");
          break;
        }
        std::lock_guard<std::mutex> lk(c->info->m);
        if (attr == "lib-name") c->info->lib_name.assign(args[3]);
        else if (attr == "lib-ver") c->info->lib_ver.assign(args[3]);
        else {
          err("ERR Unrecognized option '" + std::string(args[2].substr(0, 64)) + "'");
          break;
        }
        w.simple("OK");
      } else if (sub == "list") {
        w.verbatim(srv_->client_list(0));
      } else if (sub == "info" && args.size() == 2) {
        w.verbatim(c->info->line());
      } else if (sub == "no-evict" || sub == "no-touch") {
        w.simple("OK");
      } else {
        sub_unknown("CLIENT");
      }
      break;
    }
    case Cmd::kCommand: {
      const auto& all = all_commands();
      const std::string sub = args.size() > 1 ? ascii_lower(args[1]) : "";
      if (args.size() == 1) {
        w.array(all.size());
        for (const auto& cs : all) write_command_info(w, cs);
      } else if (sub == "count") {
        w.integer(static_cast<long long>(all.size()));
      } else if (sub == "list") {
        w.array(all.size());
        for (const auto& cs : all) w.bulk(cs.name);
      } else if (sub == "info") {
        if (args.size() == 2) {
          w.array(all.size());
          for (const auto& cs : all) write_command_info(w, cs);
        } else {
          w.array(args.size() - 2);
          for (std::size_t i = 2; i < args.size(); ++i) {
            const CommandSpec* cs = find_command(args[i]);
            if (cs) write_command_info(w, *cs);
            else w.null_array();
          }
        }
      } else if (sub == "docs") {
        std::vector<const CommandSpec*> pick;
        if (args.size() == 2)
          for (const auto& cs : all) pick.push_back(&cs);
        for (std::size_t i = 2; i < args.size(); ++i)
          if (const CommandSpec* cs = find_command(args[i])) pick.push_back(cs);
        w.map(pick.size());
        for (const CommandSpec* cs : pick) {
          w.bulk(cs->name);
          write_command_docs(w, *cs);
        }
      } else {
        sub_unknown("COMMAND");
      }
      break;
    }
    case Cmd::kHello: {
      int proto = c->proto;
      std::size_t i = 1;
      if (args.size() > 1) {
        long long v;
        if (!parse_int64(args[1], &v)) {
          err("ERR Protocol version is not an integer or out of range");
          break;
        }
        if (v != 2 && v != 3) {
          err("NOPROTO unsupported protocol version");
          break;
        }
        proto = static_cast<int>(v);
        i = 2;
      }
      std::string setname;
      bool bad = false;
      for (; i < args.size(); ++i) {
        if (iequals(args[i], "auth") && i + 2 < args.size()) {
          err("ERR AUTH called without any password configured for the default user");
          bad = true;
          break;
        } else if (iequals(args[i], "setname") && i + 1 < args.size()) {
          setname.assign(args[++i]);
        } else {
          err("ERR Syntax error in HELLO option '" + std::string(args[i].substr(0, 64)) + "'");
          bad = true;
          break;
        }
      }
      if (bad) break;
      c->proto = proto;
      c->info->resp.store(proto);
      if (!setname.empty()) {
        std::lock_guard<std::mutex> lk(c->info->m);
        c->info->name = setname;
      }
      out.clear();
      ReplyWriter hw(&out, proto);
      hw.map(7);
      hw.bulk("server");
      hw.bulk("duet");
      hw.bulk("version");
      hw.bulk("7.0.0");
      hw.bulk("proto");
      hw.integer(proto);
      hw.bulk("id");
      hw.integer(static_cast<long long>(c->info->id));
      hw.bulk("mode");
      hw.bulk("standalone");
      hw.bulk("role");
      hw.bulk("master");
      hw.bulk("modules");
      hw.array(0);
      break;
    }
    default: err("ERR internal: command without a handler");
  }
  r->done.store(true, std::memory_order_release);
}

// ---------------------------------------------------------------------------------------------

Server::Server(const ServerConfig& config, Store* store) : cfg_(config), store_(store) {
  for (unsigned d = 0; d < cfg_.databases; ++d) dbs_.push_back(std::make_unique<Database>());
}

Server::~Server() {
  stop();
  dbs_.clear();
}

std::shared_ptr<KvSpace> Server::space_of(unsigned db) {
  if (db >= dbs_.size()) return nullptr;
  Database& d = *dbs_[db];
  std::lock_guard<std::mutex> lk(d.m);
  if (d.space) return d.space;
  const std::string name = "db" + std::to_string(db) + (d.generation ? "." + std::to_string(d.generation) : "");
  KvSpace* raw = nullptr;
  Status s = store_->create_kv(name, &raw);
  if (!s.ok()) {
    duet::log(LogLevel::kError, "cannot open database " + std::to_string(db) + ": " + s.to_string());
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> cl(config_m_);
    raw->set_threshold(cfg_.store.router.threshold);
  }
  Store* store = store_;
  d.space = std::shared_ptr<KvSpace>(raw, [store, name](KvSpace*) {
    Status st = store->drop_kv(name);
    if (!st.ok()) duet::log(LogLevel::kWarn, "dropping keyspace " + name + ": " + st.to_string());
  });
  return d.space;
}

void Server::flush_db(unsigned db) {
  if (db >= dbs_.size()) return;
  std::shared_ptr<KvSpace> old;
  {
    Database& d = *dbs_[db];
    std::lock_guard<std::mutex> lk(d.m);
    old = std::move(d.space);
    d.space.reset();
    if (old) d.generation++;
  }
  // `old` is dropped here, or by the last batch still using it.
}

Status Server::config_set(std::string_view name, std::string_view value) {
  std::lock_guard<std::mutex> lk(config_m_);
  Status s = apply_setting(&cfg_, name, value, true);
  if (!s.ok()) return s;
  if (ascii_lower(name) == "router-threshold") {
    for (auto& d : dbs_) {
      std::lock_guard<std::mutex> dl(d->m);
      if (d->space) d->space->set_threshold(cfg_.store.router.threshold);
    }
  }
  return Status::Ok();
}

std::string Server::client_list(std::uint64_t only_id) {
  std::vector<std::shared_ptr<ClientInfo>> all;
  {
    std::lock_guard<std::mutex> lk(clients_m_);
    all = client_table_;
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a->id < b->id; });
  std::string out;
  for (const auto& c : all)
    if (!only_id || c->id == only_id) out += c->line();
  return out;
}

std::string Server::info(const std::vector<std::string>& sections) {
  auto want = [&](const char* s) {
    if (sections.empty()) return true;
    for (const auto& x : sections)
      if (x == s || x == "all" || x == "everything" || x == "default") return true;
    return false;
  };
  // Engine statistics over every open database.
  KvStats total;
  std::string model;
  std::vector<std::pair<unsigned, std::uint64_t>> keyspace;
  for (unsigned d = 0; d < dbs_.size(); ++d) {
    std::shared_ptr<KvSpace> sp;
    {
      std::lock_guard<std::mutex> lk(dbs_[d]->m);
      sp = dbs_[d]->space;
    }
    if (!sp) continue;
    const KvStats st = sp->stats();
    total.hot_requests += st.hot_requests;
    total.hot_misses += st.hot_misses;
    total.cold_requests += st.cold_requests;
    total.batches += st.batches;
    total.batched_requests += st.batched_requests;
    total.model_switches += st.model_switches;
    total.store_busy_ns += st.store_busy_ns;
    total.hot_entries += st.hot_entries;
    total.memory_bytes = st.memory_bytes;
    if (model.empty()) model = st.router_model;
    if (const std::uint64_t n = sp->size()) keyspace.emplace_back(d, n);
  }
  std::uint64_t calls = 0, batches = 0, batched = 0, in = 0, outb = 0;
  for (const auto& t : threads_) {
    for (const auto& x : t->metrics.calls) calls += x.load(std::memory_order_relaxed);
    batches += t->metrics.batches.load(std::memory_order_relaxed);
    batched += t->metrics.batched.load(std::memory_order_relaxed);
    in += t->metrics.net_in.load(std::memory_order_relaxed);
    outb += t->metrics.net_out.load(std::memory_order_relaxed);
  }
  const auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count();
  std::string o;
  auto line = [&](const std::string& k, const std::string& v) { o += k + ":" + v + "\r\n"; };
  auto section = [&](const char* title) {
    if (!o.empty()) o += "\r\n";
    o += std::string("# ") + title + "\r\n";
  };
  if (want("server")) {
    section("Server");
    utsname u{};
    ::uname(&u);
    line("redis_version", "7.0.0");
    line("duet_version", "0.1.0");
    line("redis_mode", "standalone");
    line("os", std::string(u.sysname) + " " + u.release + " " + u.machine);
    line("arch_bits", "64");
    line("multiplexing_api", "epoll");
    line("process_id", std::to_string(::getpid()));
    line("tcp_port", std::to_string(port_));
    line("uptime_in_seconds", std::to_string(up));
    line("uptime_in_days", std::to_string(up / 86400));
    line("io_threads_active", std::to_string(threads_.size()));
  }
  if (want("clients")) {
    section("Clients");
    line("connected_clients", std::to_string(clients_.load()));
    line("maxclients", std::to_string(cfg_.maxclients.load()));
    line("blocked_clients", "0");
  }
  if (want("memory")) {
    section("Memory");
    line("used_memory", std::to_string(total.memory_bytes));
    char human[32];
    std::snprintf(human, sizeof human, "%.2fM", static_cast<double>(total.memory_bytes) / (1024.0 * 1024.0));
    line("used_memory_human", human);
    line("maxmemory", std::to_string(cfg_.store.memory_budget_bytes));
    line("maxmemory_policy", "noeviction");
  }
  if (want("stats")) {
    section("Stats");
    line("total_connections_received", std::to_string(total_connections_.load()));
    line("total_commands_processed", std::to_string(calls));
    line("instantaneous_ops_per_sec", std::to_string(ops_per_sec_.load()));
    line("total_net_input_bytes", std::to_string(in));
    line("total_net_output_bytes", std::to_string(outb));
    line("rejected_connections", std::to_string(rejected_.load()));
  }
  if (want("keyspace")) {
    section("Keyspace");
    for (auto [d, n] : keyspace) line("db" + std::to_string(d), "keys=" + std::to_string(n) + ",expires=0,avg_ttl=0");
  }
  if (want("duet")) {
    section("Duet");
    const std::uint64_t routed = total.hot_requests + total.cold_requests;
    const std::uint64_t hits = total.hot_requests - std::min(total.hot_requests, total.hot_misses);
    char rate[32], avg[32], store_avg[32], busy[32];
    std::snprintf(rate, sizeof rate, "%.4f", routed ? static_cast<double>(hits) / static_cast<double>(routed) : 0.0);
    std::snprintf(avg, sizeof avg, "%.1f", batches ? static_cast<double>(batched) / static_cast<double>(batches) : 0.0);
    std::snprintf(store_avg, sizeof store_avg, "%.1f",
                  total.batches ? static_cast<double>(total.batched_requests) / static_cast<double>(total.batches) : 0.0);
    std::snprintf(busy, sizeof busy, "%.3f", static_cast<double>(total.store_busy_ns) / 1e9);
    line("duet_device", store_->device_description());
    line("io_threads", std::to_string(threads_.size()));
    line("hot_cache_hit_rate", rate);
    line("hot_requests", std::to_string(total.hot_requests));
    line("hot_misses", std::to_string(total.hot_misses));
    line("cold_requests", std::to_string(total.cold_requests));
    line("hot_cache_entries", std::to_string(total.hot_entries));
    line("router_model", model.empty() ? "none (no database opened yet)" : model);
    line("model_switches", std::to_string(total.model_switches));
    line("avg_batch_size", avg);
    line("store_batches", std::to_string(total.batches));
    line("avg_store_batch_size", store_avg);
    line("store_busy_seconds", busy);
  }
  return o;
}

std::string Server::metrics_text() {
  std::vector<ThreadMetrics*> tm;
  for (auto& t : threads_) tm.push_back(&t->metrics);
  Gauges g;
  for (auto& d : dbs_) {
    std::shared_ptr<KvSpace> sp;
    {
      std::lock_guard<std::mutex> lk(d->m);
      sp = d->space;
    }
    if (!sp) continue;
    const KvStats st = sp->stats();
    g.memory_bytes = st.memory_bytes;
    g.keys += sp->size();
    g.store_busy_ns += st.store_busy_ns;
    g.hot_requests += st.hot_requests;
    g.cold_requests += st.cold_requests;
    g.model_switches += st.model_switches;
  }
  g.clients = clients_.load();
  return render_prometheus(tm, g);
}

Status Server::start() {
  started_ = std::chrono::steady_clock::now();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
  addrinfo* res = nullptr;
  if (::getaddrinfo(cfg_.bind.c_str(), std::to_string(cfg_.port).c_str(), &hints, &res) != 0 || !res)
    return Status::InvalidArgument("bind address '" + cfg_.bind + "' is not a numeric IPv4 or IPv6 address");
  listen_fd_ = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const int rc = ::bind(listen_fd_, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (rc != 0 || ::listen(listen_fd_, 511) != 0) {
    const std::string why = std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return Status::Unavailable("cannot listen on " + cfg_.bind + ":" + std::to_string(cfg_.port) + ": " + why);
  }
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = a.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&a)->sin6_port)
                                  : ntohs(reinterpret_cast<sockaddr_in*>(&a)->sin_port);
  const unsigned n = cfg_.threads ? cfg_.threads : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) threads_.push_back(std::make_unique<IoThread>(this, i));
  for (auto& t : threads_) {
    Status s = t->init();
    if (!s.ok()) return s;
  }
  if (cfg_.metrics_port) {
    metrics_ = std::make_unique<MetricsEndpoint>();
    std::string why;
    if (!metrics_->start(cfg_.metrics_bind, cfg_.metrics_port, [this] { return metrics_text(); }, &why))
      return Status::Unavailable("metrics endpoint: " + why);
  }
  space_of(0);  // open database 0 now, so a bad device or budget shows at startup
  for (auto& t : threads_) t->start();
  ticker_ = std::thread([this] {
    std::uint64_t last = 0;
    while (!draining_.load()) {
      for (int i = 0; i < 10 && !draining_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::uint64_t calls = 0;
      for (const auto& t : threads_)
        for (const auto& x : t->metrics.calls) calls += x.load(std::memory_order_relaxed);
      ops_per_sec_.store(calls - last);
      last = calls;
    }
  });
  return Status::Ok();
}

void Server::stop() {
  if (threads_.empty() || exiting_.load()) return;
  draining_.store(true, std::memory_order_release);
  for (auto& t : threads_) t->wake();
  // Let the commands already read finish (bounded: a stuck GPU must not hang shutdown).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto in_flight = [&] {
    std::uint64_t d = 0, c = 0;
    for (auto& t : threads_) {
      c += t->completed_.load();  // completions first: never counts one before its dispatch
      d += t->dispatched_.load();
    }
    return d > c;
  };
  while (in_flight() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  exiting_.store(true, std::memory_order_release);
  for (auto& t : threads_) t->wake();
  for (auto& t : threads_) t->join();
  if (ticker_.joinable()) ticker_.join();
  if (metrics_) metrics_->stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

}  // namespace duet::server
