#include "server/io_thread.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "common/log.hpp"
#include "server/server.hpp"

namespace duet::server {

namespace {

std::string error_line(std::string_view msg) {
  std::string r;
  ReplyWriter(&r, 2).error(msg);
  return r;
}

/// Which thread owns a key, by its key_hash.
unsigned shard_of(std::uint64_t hash, unsigned n) { return static_cast<unsigned>((hash >> 7) % n); }

PendingReply::Kind reply_kind(MultiReply m) {
  switch (m) {
    case MultiReply::kSum: return PendingReply::Kind::kSum;
    case MultiReply::kAllOk: return PendingReply::Kind::kAllOk;
    default: return PendingReply::Kind::kArray;
  }
}

}  // namespace

IoThread::IoThread(Server* srv, unsigned index)
    : srv_(srv), index_(index),
      pipeline_([srv](unsigned db) { return srv->kv_space(db); }, srv->cfg_.store.limits.max_value_bytes,
                &srv->guards_),
      set_(find_command("set")),
      mset_(find_command("mset")) {}

IoThread::~IoThread() {
  if (epfd_ >= 0) ::close(epfd_);
  if (evfd_ >= 0) ::close(evfd_);
}

Status IoThread::init() {
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

void IoThread::wake() {
  if (sleeping_.exchange(false, std::memory_order_seq_cst)) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(evfd_, &one, sizeof one);
  }
}

void IoThread::engine_done(void* self) {
  auto* t = static_cast<IoThread*>(self);
  t->engine_done_.store(true, std::memory_order_seq_cst);
  t->wake();
}

void IoThread::report_if_stuck() {
  const std::uint64_t start = pass_start_ns_.load(std::memory_order_acquire);
  if (start == 0 || start == reported_pass_ns_) return;
  const std::uint64_t now = now_ns();
  if (now < start + 1'000'000'000) return;
  reported_pass_ns_ = start;
  static constexpr const char* kStages[] = {"waiting", "reading sockets", "taking other threads' work",
                                            "running engine batches", "sending replies", "housekeeping"};
  char msg[256];
  std::snprintf(msg, sizeof msg,
                "server: I/O thread %u has been in one loop pass for %.1f s (%s; %u ops queued and %u engine "
                "batches in flight when it began); its %llu clients get no replies meanwhile",
                index_, static_cast<double>(now - start) / 1e9,
                kStages[static_cast<unsigned>(stage_.load(std::memory_order_relaxed))],
                pass_queued_.load(std::memory_order_relaxed), pass_in_flight_.load(std::memory_order_relaxed),
                static_cast<unsigned long long>(metrics.open_connections.load(std::memory_order_relaxed)));
  duet::log(LogLevel::kWarn, msg);
}

void IoThread::post_ops(std::vector<KeyOp*>& ops) {
  {
    std::lock_guard<std::mutex> lk(m_);
    if (inbox_.empty()) inbox_.swap(ops);
    else inbox_.insert(inbox_.end(), ops.begin(), ops.end());
    has_work_.store(true, std::memory_order_seq_cst);
  }
  ops.clear();
  wake();
}

void IoThread::post_connection(Accepted a) {
  {
    std::lock_guard<std::mutex> lk(m_);
    fds_in_.push_back(std::move(a));
    has_work_.store(true, std::memory_order_seq_cst);
  }
  wake();
}

void IoThread::post_notes(std::vector<Note>& notes) {
  {
    std::lock_guard<std::mutex> lk(m_);
    notes_in_.insert(notes_in_.end(), notes.begin(), notes.end());
    has_work_.store(true, std::memory_order_seq_cst);
  }
  notes.clear();
  wake();
}

KeyOp* IoThread::new_op() {
  if (op_pool_.empty()) return new KeyOp;
  KeyOp* op = op_pool_.back();
  op_pool_.pop_back();
  return op;
}

void IoThread::free_op(KeyOp* op) {
  if (op_pool_.size() >= 65536) {
    delete op;
    return;
  }
  op->nx = op->xx = op->get = false;
  op->delta = 0;
  op->part = 0;
  op->path = KvPath::kNone;
  op->hash = 0;
  op->local_read = false;
  op->direct = false;
  op->guarded = false;
  op->value.clear();
  op_pool_.push_back(op);
}

void IoThread::mark_dirty(Conn* c) {
  if (!c->in_flush_list) {
    c->in_flush_list = true;
    dirty_.push_back(c);
  }
}

void IoThread::post_outgoing() {
  for (std::size_t s = 0; s < outgoing_.size(); ++s)
    if (!outgoing_[s].empty()) srv_->threads_[s]->post_ops(outgoing_[s]);
}

void IoThread::loop() {
  epoll_event evs[256];
  bool listening = true;
  // The engine wakes this loop when a batch it submitted completes, so with batches in flight
  // it sleeps in epoll_wait, serving its sockets meanwhile, instead of blocking on the oldest
  // batch. The timeout only bounds the wait should an engine not call the waker.
  constexpr int kEngineWaitMs = 1;
  set_completion_waker(&IoThread::engine_done, this);
  for (;;) {
    const bool draining = srv_->draining_.load(std::memory_order_acquire);
    if (draining && listening) {
      ::epoll_ctl(epfd_, EPOLL_CTL_DEL, srv_->listen_fd_, nullptr);
      listening = false;
    }
    if (srv_->exiting_.load(std::memory_order_acquire)) break;
    // With batches in flight, only look at the sockets (the pass goes on to complete what the
    // engine has finished), unless the last pass found nothing to do: then sleep until woken.
    int timeout = pipeline_.idle() ? 100 : wait_engine_ ? kEngineWaitMs : 0;
    wait_engine_ = false;
    sleeping_.store(true, std::memory_order_seq_cst);
    if (has_work_.load(std::memory_order_seq_cst) || engine_done_.load(std::memory_order_seq_cst)) timeout = 0;
    const int n = ::epoll_wait(epfd_, evs, 256, timeout);
    sleeping_.store(false, std::memory_order_seq_cst);
    const std::uint64_t pass_start = now_ns();
    pass_queued_.store(static_cast<std::uint32_t>(pipeline_.queued()), std::memory_order_relaxed);
    pass_in_flight_.store(static_cast<std::uint32_t>(pipeline_.in_flight()), std::memory_order_relaxed);
    stage_.store(Stage::kSockets, std::memory_order_relaxed);
    pass_start_ns_.store(pass_start, std::memory_order_release);
    const bool engine_woke = engine_done_.exchange(false, std::memory_order_acq_rel);
    for (int i = 0; i < n; ++i) {
      void* p = evs[i].data.ptr;
      if (p == &evfd_) {
        std::uint64_t v;
        [[maybe_unused]] ssize_t r = ::read(evfd_, &v, sizeof v);
      } else if (p == &srv_->listen_fd_) {
        if (!draining) accept_all();
      } else {
        Conn* c = static_cast<Conn*>(p);
        if (c->dead()) continue;
        if (evs[i].events & (EPOLLERR | EPOLLHUP)) {  // both directions gone: nothing can be sent
          close_conn(c);
          continue;
        }
        if (evs[i].events & EPOLLOUT) flush(c);
        if (!c->dead() && (evs[i].events & EPOLLIN) && !draining) on_readable(c);  // nothing new while stopping
      }
    }
    // Take what other threads sent.
    stage_.store(Stage::kInbox, std::memory_order_relaxed);
    if (has_work_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lk(m_);
      taken_.swap(inbox_);
      notes_taken_.swap(notes_in_);
      deferred_taken_.swap(deferred_in_);
      fds_taken_.swap(fds_in_);
      has_work_.store(false, std::memory_order_relaxed);
    }
    for (Accepted& a : fds_taken_) adopt(std::move(a));
    fds_taken_.clear();
    const bool took = !taken_.empty() || !notes_taken_.empty() || !deferred_taken_.empty();
    for (const Note& note : notes_taken_) {
      Conn* c = note.c;
      c->inflight -= note.n;
      c->remote[note.bucket] -= note.n;
      if (c->dead()) maybe_free(c);
      else mark_dirty(c);
    }
    notes_taken_.clear();
    for (Conn* c : deferred_taken_) {  // a deferred reply is final (run_local, defer_reply)
      c->inflight--;
      bump(completed_);
      if (c->dead()) maybe_free(c);
      else mark_dirty(c);
    }
    deferred_taken_.clear();
    for (KeyOp* op : taken_) pipeline_.add(op);
    taken_.clear();
    // Send other shards their ops before running ours, so they work meanwhile.
    post_outgoing();
    // Complete the batches the engine has finished and start new ones (several may be in
    // flight); with nothing else to do, wait for the oldest instead of spinning.
    const std::size_t max_batch = std::max<std::uint64_t>(1, srv_->cfg_.max_batch.load());
    // The engine lends each keyspace 1024 epoch participants, one per batch in flight across
    // all threads (mem/participant_pool.hpp); with every one taken a new batch would wait
    // forever. So the threads together keep at most 512 in flight.
    const std::size_t max_flight = std::max<std::size_t>(
        1, std::min<std::size_t>(srv_->cfg_.max_batches_in_flight.load(), 512 / srv_->threads_.size()));
    stage_.store(Stage::kEngine, std::memory_order_relaxed);
    bool progress = pipeline_.pump(*this, max_batch, max_flight);
    if (!progress && n == 0 && !took && !engine_woke && pipeline_.in_flight() > 0) wait_engine_ = true;
    metrics.overlapped.store(pipeline_.overlapped(), std::memory_order_relaxed);
    release_held();
    post_outgoing();
    for (std::size_t s = 0; s < notes_out_.size(); ++s)
      if (!notes_out_[s].empty()) srv_->threads_[s]->post_notes(notes_out_[s]);
    stage_.store(Stage::kReplies, std::memory_order_relaxed);
    for (std::size_t i = 0; i < dirty_.size(); ++i) {
      Conn* c = dirty_[i];
      c->in_flush_list = false;
      if (!c->dead()) flush(c);
    }
    dirty_.clear();
    stage_.store(Stage::kHousekeeping, std::memory_order_relaxed);
    if (!lingering_.empty()) expire_lingering();
    expire_sessions();
    for (Conn* c : to_free_) {
      conns_.erase(c);
      delete c;
    }
    to_free_.clear();
    const std::uint64_t pass_ns = now_ns() - pass_start;
    if (pass_ns > metrics.longest_pass_ns.load(std::memory_order_relaxed))
      metrics.longest_pass_ns.store(pass_ns, std::memory_order_relaxed);
    if (pass_ns >= 1'000'000'000) bump(metrics.slow_passes, 1);
    pass_start_ns_.store(0, std::memory_order_relaxed);
    stage_.store(Stage::kWaiting, std::memory_order_relaxed);
  }
  // Exit. Batches in flight are finished first: the engine holds views of their requests, and
  // their ops point at connections and replies.
  pipeline_.finish_all(*this);
  for (Conn* c : std::vector<Conn*>(conns_.begin(), conns_.end())) {
    if (!c->dead()) {
      flush(c);
      close_conn(c);
    }
  }
  // Ops never started (a stop that timed out) are dropped (replies that could not be sent are
  // dropped too).
  for (KeyOp* op : pipeline_.take_queued()) delete op;
  for (KeyOp* op : held_) delete op;
  held_.clear();
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
    // Counted here, by the accepting thread, so maxclients holds for a burst of connections.
    auto info = std::make_shared<ClientInfo>();
    info->id = srv_->next_client_id_.fetch_add(1);
    info->fd = fd;
    info->addr = socket_name(fd, false);
    info->laddr = socket_name(fd, true);
    info->created = std::chrono::steady_clock::now();
    info->last_ns.store(now_ns(), std::memory_order_relaxed);
    srv_->add_client(info);
    const std::size_t to = srv_->next_conn_thread_.fetch_add(1) % srv_->threads_.size();
    if (to == index_) adopt({fd, std::move(info)});
    else srv_->threads_[to]->post_connection({fd, std::move(info)});
  }
}

void IoThread::adopt(Accepted a) {
  auto* c = new Conn;
  c->fd = a.fd;
  c->owner = index_;
  c->parser = RequestParser(RespLimits{srv_->cfg_.proto_max_bulk_len.load(), srv_->cfg_.max_multibulk_len.load(),
                                       64 * 1024});
  c->session.info = std::move(a.info);
  bump(metrics.connections, 1);
  bump(metrics.open_connections, 1);
  conns_.insert(c);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = c;
  c->events = EPOLLIN;
  ::epoll_ctl(epfd_, EPOLL_CTL_ADD, a.fd, &ev);
}

void IoThread::update_events(Conn* c) {
  const std::size_t pending = c->out.size() - c->out_off;
  // Backpressure, when max-unread-output is set: stop reading a client that does not read;
  // nothing to read after its EOF.
  const std::uint64_t limit = srv_->cfg_.max_unread_output.load(std::memory_order_relaxed);
  const std::uint32_t want = (!c->peer_closed && (limit == 0 || pending <= limit) ? EPOLLIN : 0u) |
                             (pending > 0 ? EPOLLOUT : 0u);
  if (c->events == want) return;
  c->events = want;
  epoll_event ev{};
  ev.events = want;
  ev.data.ptr = c;
  ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd, &ev);
}

void IoThread::on_readable(Conn* c) {
  if (c->closing()) {
    // Waiting to send the last replies, or lingering: drain and drop input until the client
    // closes its side.
    switch (discard_input(*c)) {
      case ReadOutcome::kEof:
        c->peer_closed = true;
        if (c->phase == ConnPhase::kLingering) close_conn(c);
        else update_events(c);
        break;
      case ReadOutcome::kError: close_conn(c); break;
      default: break;
    }
    return;
  }
  std::size_t n = 0;
  switch (read_input(*c, &n)) {
    case ReadOutcome::kEof:
      // The client shut its sending side: answer what it sent, then close.
      c->peer_closed = true;
      c->phase = ConnPhase::kClosing;
      if (c->replies.empty() && !c->output_pending()) close_conn(c);
      else update_events(c);
      return;
    case ReadOutcome::kError: close_conn(c); return;
    case ReadOutcome::kAgain: return;
    case ReadOutcome::kData: break;
  }
  bump(metrics.net_in, n);
  c->session.info->last_ns.store(now_ns(), std::memory_order_relaxed);
  process_input(c);
}

void IoThread::process_input(Conn* c) {
  parse_input(*c, {srv_->cfg_.client_query_buffer_limit.load(), kMaxPendingReplies}, *this);
  mark_dirty(c);
}

void IoThread::on_request(Conn& conn, const CommandDef* def, Args args, std::uint64_t arrival_ns) {
  Conn* c = &conn;
  auto r = reply_pool_.take();
  r->start_ns = arrival_ns;
  PendingReply* rp = r.get();
  c->replies.push_back(std::move(r));
  auto fail = [&](const std::string& msg) {
    rp->bytes = error_line(msg);
    rp->error = true;
    rp->done.store(true, std::memory_order_release);
  };
  std::string error;
  const KeyspaceKind kind = srv_->database_kind(c->session.db);
  if (!def) {
    error = "ERR unknown command '" + std::string(args[0].substr(0, 128)) + "', with args beginning with: ";
    for (std::size_t i = 1; i < args.size() && i < 8; ++i) {
      error += '\'';  // appended piece by piece: "'" + std::string(...) trips GCC 12's -Wrestrict
      error.append(args[i].substr(0, 128));
      error += "' ";
    }
  } else {
    rp->cmd = def;
    c->session.info->last_cmd.store(def->name, std::memory_order_relaxed);
    if (!arity_ok(*def, args.size()))
      error = "ERR wrong number of arguments for '" + std::string(def->name) + "' command";
    else if (!(def->kinds & kind_bit(kind)))
      error = kind_error(*def, c->session.db, kind);
  }
  // A family's connection state may take the request first (MULTI queues it).
  if (c->session.extension) {
    ReplyWriter w(&rp->bytes, c->session.proto);
    CommandContext ctx{*srv_, c->session, args, w, *rp};
    if (c->session.extension->intercept(ctx, def, error)) {
      rp->done.store(true, std::memory_order_release);
      return;
    }
  }
  if (!error.empty()) return fail(error);
  if (def->is_key_command()) {
    if (kind == KeyspaceKind::kTxn) return run_local(c, rp, *def, args, run_txn_key_command);
    dispatch_keys(c, rp, *def, args);
  } else {
    run_local(c, rp, *def, args, nullptr);
  }
}

void IoThread::route(KeyOp* op) {
  op->hash = key_hash(op->key);
  const unsigned s = shard_of(op->hash, static_cast<unsigned>(srv_->threads_.size()));
  const std::size_t b = conn_bucket(op->hash);
  Conn* c = static_cast<Conn*>(op->conn);
  c->inflight++;
  bump(dispatched_);
  // A read of another thread's key runs here when none of this connection's ops in the key's
  // bucket is on another thread: the engine's read is linearizable without the owner (which
  // writes the key in one engine write per batch), and the client's earlier commands on that
  // key have all completed, so it still reads its own writes. This saves the hand-off and the
  // reply's way back. Reads of other buckets stay here even while the connection has writes
  // in flight elsewhere.
  //
  // A plain overwrite (SET without options, MSET's part) of another thread's key runs here
  // too, on the same condition, unless the owner has a read-modify-write of the key in flight
  // (WriteGuards): its effect and its reply ("OK") depend on nothing it could read, so it
  // needs the owner only to stay out of a read-modify-write's read and write, which the
  // guards ensure. Other writes (INCR, APPEND, SET NX/XX/GET, GETSET, DEL, whose replies
  // depend on the previous value) go to the owner.
  if (s == index_) {
    pipeline_.add(op);
  } else if (c->remote[b] == 0 && op->cmd->has(kReadOnly)) {
    op->local_read = true;
    c->local[b]++;
    pipeline_.add(op);
  } else if (c->remote[b] == 0 && plain_overwrite(*op) &&
             srv_->guards_.try_blind(WriteGuards::stripe_of(op->hash, op->db))) {
    op->direct = true;
    c->local[b]++;
    bump(metrics.direct_writes);
    pipeline_.add(op);
  } else {
    // A later command of a connection with such a read or write running here must not
    // overtake it on its owner thread (which could write the key before the read took effect,
    // or before the write): it waits in held_ until the connection's local ops of this bucket
    // complete.
    c->remote[b]++;
    if (c->local[b] > 0) held_.push_back(op);
    else outgoing_[s].push_back(op);
  }
}

void IoThread::release_held() {
  if (held_.empty()) return;
  const unsigned n = static_cast<unsigned>(srv_->threads_.size());
  std::size_t keep = 0;
  for (KeyOp* op : held_) {
    const Conn* c = static_cast<const Conn*>(op->conn);
    if (c->local[conn_bucket(op->hash)] == 0) outgoing_[shard_of(op->hash, n)].push_back(op);
    else held_[keep++] = op;  // the connection's later ops of this bucket stay behind it
  }
  held_.resize(keep);
}

void IoThread::dispatch_keys(Conn* c, PendingReply* r, const CommandDef& def, Args args) {
  auto fail = [&](std::string_view msg) {
    r->bytes = error_line(msg);
    r->error = true;
    r->done.store(true, std::memory_order_release);
  };
  // Key positions, as COMMAND INFO reports them.
  const std::size_t first = static_cast<std::size_t>(def.first_key);
  const std::size_t last = last_key_index(def, args.size());
  const std::size_t step = static_cast<std::size_t>(def.step);
  if (std::string e = oversized_key_error(def, args, srv_->cfg_.store.limits.max_key_bytes); !e.empty())
    return fail(e);
  if (std::string e = oversized_pair_value_error(def, args, srv_->cfg_.store.limits.max_value_bytes); !e.empty())
    return fail(e);
  // The first key's op doubles as the prototype the command's parse fills.
  KeyOp* op = new_op();
  if (def.key.parse) {
    const std::string e = def.key.parse(args, op);
    if (!e.empty()) {
      free_op(op);
      return fail(e);
    }
  }
  auto init = [&](KeyOp* o, std::size_t pos, std::uint32_t part) {
    o->cmd = &def;
    o->db = c->session.db;
    o->resp3 = c->session.proto >= 3;
    o->key.assign(args[pos]);
    if (step == 2) o->value.assign(args[pos + 1]);  // key-value pairs (MSET)
    o->reply = r;
    o->part = part;
    o->conn = c;
  };
  if (!def.has(kMultiKey)) {
    init(op, first, 0);
    return route(op);
  }
  const std::size_t n = (std::min(last, args.size() - 1) - first) / step + 1;
  if (n > 1 || def.key.multi_always) {
    r->kind = reply_kind(def.key.multi);
    r->parts.resize(n);
    r->parts_left.store(static_cast<std::uint32_t>(n), std::memory_order_relaxed);
  }
  std::vector<KeyOp*> ops;
  ops.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    KeyOp* o = k == 0 ? op : new_op();
    if (k > 0) {  // the options parse gave the first op
      o->nx = op->nx;
      o->xx = op->xx;
      o->get = op->get;
      o->delta = op->delta;
      if (step != 2) o->value = op->value;
    }
    init(o, first + k * step, static_cast<std::uint32_t>(k));
    ops.push_back(o);
  }
  for (KeyOp* o : ops) route(o);  // after parts are sized: a part may finish at once elsewhere
}

void IoThread::batch_done(std::size_t ops, std::size_t sent) {
  bump(metrics.batches, 1);
  bump(metrics.batched, sent);
  metrics.batch_size.observe(static_cast<double>(ops));
  batch_done_ns_ = now_ns();
}

void IoThread::op_done(KeyOp* op, std::string& reply) {
  const double secs = static_cast<double>(batch_done_ns_ - op->reply->start_ns) / 1e9;
  if (op->path == KvPath::kHot) metrics.hot_latency.observe(secs);
  else if (op->path == KvPath::kCold) metrics.cold_latency.observe(secs);
  complete(op, reply);
}

void IoThread::complete(KeyOp* op, std::string& part) {
  Conn* c = static_cast<Conn*>(op->conn);
  PendingReply* r = op->reply;
  const auto b = static_cast<std::uint32_t>(conn_bucket(op->hash));
  const bool local = op->local_read || op->direct;
  if (r->finish_part(op->part, part)) r->done.store(true, std::memory_order_release);
  bump(completed_);
  free_op(op);
  if (c->owner == index_) {
    c->inflight--;
    if (local) c->local[b]--;
    if (c->dead()) maybe_free(c);
    else mark_dirty(c);
  } else {
    auto& notes = notes_out_[c->owner];
    if (!notes.empty() && notes.back().c == c && notes.back().bucket == b) notes.back().n++;
    else notes.push_back(Note{c, 1, b});
  }
}

void IoThread::flush(Conn* c) {
  const FlushResult r = flush_replies(*c, metrics, reply_pool_, kMaxPendingReplies);
  if (r == FlushResult::kSendFailed) {
    close_conn(c);
    return;
  }
  update_events(c);
  if (r == FlushResult::kAllSent) finish_close(c);
  else if (r == FlushResult::kParseAgain) process_input(c);
}

void IoThread::finish_close(Conn* c) {
  if (c->peer_closed || srv_->draining_.load(std::memory_order_acquire)) {
    close_conn(c);
    return;
  }
  if (c->phase == ConnPhase::kLingering) return;
  start_linger(*c, now_ns() + kLingerNs);
  lingering_.push_back(c);
}

void IoThread::expire_lingering() {
  const std::uint64_t now = now_ns();
  std::size_t keep = 0;
  for (Conn* c : lingering_) {
    if (!c->dead() && now >= c->linger_until_ns) close_conn(c);
    if (!c->dead()) lingering_[keep++] = c;
  }
  lingering_.resize(keep);
}

void IoThread::expire_sessions() {
  const std::uint64_t now = now_ns();
  if (now < next_expire_ns_) return;
  next_expire_ns_ = now + 100'000'000;
  for (Conn* c : conns_)
    if (!c->dead() && c->session.extension) c->session.extension->expire(*srv_, now);
}

void IoThread::close_conn(Conn* c) {
  if (c->dead()) return;
  c->phase = ConnPhase::kClosed;
  c->session.extension.reset();  // a disconnect aborts the connection's open transaction
  ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  metrics.open_connections.fetch_sub(1, std::memory_order_relaxed);
  srv_->remove_client(c->session.info);
  maybe_free(c);
}

void IoThread::maybe_free(Conn* c) {
  if (c->phase != ConnPhase::kClosed || c->inflight != 0) return;
  c->phase = ConnPhase::kReleased;
  to_free_.push_back(c);  // deleted at the end of the loop pass: c may still be in a list
}

namespace {
struct DeferArg {
  IoThread* thread;
  Conn* conn;
};
}  // namespace

void IoThread::run_local(Conn* c, PendingReply* r, const CommandDef& def, Args args,
                         void (*key_handler)(CommandContext&, const CommandDef&)) {
  ReplyWriter w(&r->bytes, c->session.proto);
  CommandContext ctx{*srv_, c->session, args, w, *r};
  DeferArg arg{this, c};
  ctx.deferrer = &IoThread::defer_reply;
  ctx.deferrer_arg = &arg;
  if (key_handler) key_handler(ctx, def);
  else def.local(ctx);
  if (c->session.close_requested && c->phase == ConnPhase::kOpen) c->phase = ConnPhase::kClosing;
  if (!ctx.deferred) r->done.store(true, std::memory_order_release);
}

DeferredReply IoThread::defer_reply(CommandContext& ctx, void* conn_and_thread) {
  const DeferArg a = *static_cast<DeferArg*>(conn_and_thread);
  ctx.deferred = true;
  a.conn->inflight++;
  bump(a.thread->dispatched_);  // Server::stop waits for it like a key op
  PendingReply* r = &ctx.reply;
  const int proto = a.conn->session.proto;
  return [t = a.thread, c = a.conn, r, proto](bool error, const std::function<void(ReplyWriter&)>& write) {
    r->bytes.clear();
    ReplyWriter w(&r->bytes, proto);
    write(w);
    r->error = error;
    r->done.store(true, std::memory_order_release);
    t->post_deferred(c);
  };
}

void IoThread::post_deferred(Conn* c) {
  {
    std::lock_guard<std::mutex> lk(m_);
    deferred_in_.push_back(c);
    has_work_.store(true, std::memory_order_seq_cst);
  }
  wake();
}

}  // namespace duet::server
