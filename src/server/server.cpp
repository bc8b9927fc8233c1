// The server's lifecycle (listen, start, graceful stop), its databases, its settings, its
// client table and the statistics aggregator. Connections live in connection.cpp, the event
// loop and routing in io_thread.cpp, commands in commands/.
#include "server/server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/log.hpp"
#include "sched/thread_name.hpp"
#include "server/connection.hpp"
#include "server/io_thread.hpp"

namespace duet::server {

namespace {

void set_threshold(KvSpace& kv, double threshold) {
  const Status s = kv.router().set_threshold(threshold);  // the setting was checked when it was set
  if (!s.ok()) duet::log(LogLevel::kWarn, "router-threshold: " + s.to_string());
}

/// The store's name for database db's keyspace.
std::string keyspace_name(unsigned db) { return "db" + std::to_string(db); }

}  // namespace

Server::Server(const ServerConfig& config, Store* store) : cfg_(config), store_(store) {
  for (unsigned d = 0; d < cfg_.databases; ++d) {
    dbs_.push_back(std::make_unique<Database>());
    dbs_.back()->kind = cfg_.database_kind(d);
  }
}

Server::~Server() {
  stop();
  dbs_.clear();
}

KeyspaceKind Server::database_kind(unsigned db) const {
  return db < dbs_.size() ? dbs_[db]->kind : KeyspaceKind::kKv;
}

std::shared_ptr<Keyspace> Server::keyspace(unsigned db, std::string* why) {
  if (db >= dbs_.size()) {
    if (why) *why = "no database " + std::to_string(db);
    return nullptr;
  }
  Database& d = *dbs_[db];
  std::lock_guard<std::mutex> lk(d.m);
  if (d.space) return d.space;
  std::shared_ptr<Keyspace> space;
  const Status s = store_->create(keyspace_name(db), d.kind, &space);
  if (!s.ok()) {
    duet::log(LogLevel::kError, "cannot open database " + std::to_string(db) + ": " + s.to_string());
    if (why) *why = s.message();
    return nullptr;
  }
  if (space->kind() == KeyspaceKind::kKv) {
    std::lock_guard<std::mutex> cl(config_m_);
    set_threshold(static_cast<KvSpace&>(*space), cfg_.store.router.threshold);
  }
  d.space = std::move(space);
  return d.space;
}

std::shared_ptr<KvSpace> Server::kv_space(unsigned db) {
  std::shared_ptr<Keyspace> s = keyspace(db);
  if (!s || s->kind() != KeyspaceKind::kKv) return nullptr;
  return std::static_pointer_cast<KvSpace>(std::move(s));
}

void Server::flush_db(unsigned db) {
  if (db >= dbs_.size()) return;
  std::shared_ptr<Keyspace> old;
  {
    Database& d = *dbs_[db];
    std::lock_guard<std::mutex> lk(d.m);
    old = std::move(d.space);
    d.space.reset();
    if (old) {
      // The store forgets the name at once (the next use creates a new, empty keyspace under
      // it); the old keyspace lives while a batch still holds a handle to it.
      const Status s = store_->drop(keyspace_name(db));
      if (!s.ok()) duet::log(LogLevel::kWarn, "flushing database " + std::to_string(db) + ": " + s.to_string());
    }
  }
  // `old` is freed here, or by the last batch still using it.
}

std::vector<std::pair<std::string, std::string>> Server::config_get(const std::vector<std::string_view>& patterns) {
  std::vector<std::pair<std::string, std::string>> kv;
  std::lock_guard<std::mutex> lk(config_m_);
  for (std::string_view p : patterns) {
    for (auto& e : duet::server::config_get(cfg_, p)) {
      bool dup = false;
      for (const auto& q : kv) dup = dup || q.first == e.first;
      if (!dup) kv.push_back(std::move(e));
    }
  }
  return kv;
}

Status Server::config_set(std::span<const std::pair<std::string_view, std::string_view>> pairs) {
  std::lock_guard<std::mutex> lk(config_m_);
  // Each setting's value before this call, to put back if a later pair is refused (CONFIG GET's
  // text of a setting reads back to the same value).
  std::vector<std::pair<std::string_view, std::string>> before;
  bool threshold = false;
  for (const auto& [name, value] : pairs) {
    const auto old = duet::server::config_get(cfg_, name);
    Status s = apply_setting(&cfg_, name, value, true);
    if (!s.ok()) {
      for (auto it = before.rbegin(); it != before.rend(); ++it) (void)apply_setting(&cfg_, it->first, it->second, true);
      return s;
    }
    if (!old.empty()) before.emplace_back(name, old.front().second);
    threshold = threshold || ascii_lower(name) == "router-threshold";
  }
  if (threshold) {
    for (auto& d : dbs_) {
      std::lock_guard<std::mutex> dl(d->m);
      if (d->space && d->space->kind() == KeyspaceKind::kKv)
        set_threshold(static_cast<KvSpace&>(*d->space), cfg_.store.router.threshold);
    }
  }
  return Status::Ok();
}

void Server::add_client(const std::shared_ptr<ClientInfo>& info) {
  {
    std::lock_guard<std::mutex> lk(clients_m_);
    client_table_.push_back(info);
  }
  clients_.fetch_add(1);
  total_connections_.fetch_add(1);
}

void Server::remove_client(const std::shared_ptr<ClientInfo>& info) {
  {
    std::lock_guard<std::mutex> lk(clients_m_);
    auto& t = client_table_;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == info) {
        t[i] = t.back();
        t.pop_back();
        break;
      }
    }
  }
  clients_.fetch_sub(1);
}

std::string Server::client_list() {
  std::vector<std::shared_ptr<ClientInfo>> all;
  {
    std::lock_guard<std::mutex> lk(clients_m_);
    all = client_table_;
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a->id < b->id; });
  std::string out;
  for (const auto& c : all) out += c->line();
  return out;
}

ServerStats Server::stats() {
  ServerStats s;
  // Engine statistics over every open database.
  for (unsigned d = 0; d < dbs_.size(); ++d) {
    std::shared_ptr<Keyspace> sp;
    {
      std::lock_guard<std::mutex> lk(dbs_[d]->m);
      sp = dbs_[d]->space;
    }
    if (!sp) continue;
    const std::uint64_t keys = sp->size();
    s.engine.databases.push_back({d, sp->kind(), keys, {}, {}});
    if (sp->kind() == KeyspaceKind::kBatch) s.engine.databases.back().batch = static_cast<BatchSpace&>(*sp).stats();
    if (sp->kind() == KeyspaceKind::kTxn) s.engine.databases.back().txn = static_cast<TxnSpace&>(*sp).stats();
    s.engine.keys += keys;
    if (sp->kind() != KeyspaceKind::kKv) continue;
    const KvStats st = static_cast<KvSpace&>(*sp).stats();
    KvStats& t = s.engine.kv;
    t.hot_requests += st.hot_requests;
    t.hot_misses += st.hot_misses;
    t.cold_requests += st.cold_requests;
    t.batches += st.batches;
    t.batched_requests += st.batched_requests;
    t.model_switches += st.model_switches;
    t.last_switch_us = std::max(t.last_switch_us, st.last_switch_us);
    t.longest_switch_us = std::max(t.longest_switch_us, st.longest_switch_us);
    t.longest_switch_block_us = std::max(t.longest_switch_block_us, st.longest_switch_block_us);
    t.replayed_early += st.replayed_early;
    t.replayed_blocked += st.replayed_blocked;
    t.store_busy_ns += st.store_busy_ns;
    t.hot_entries += st.hot_entries;
    t.hot_grows += st.hot_grows;
    t.hot_grow_recopied += st.hot_grow_recopied;
    t.hot_grow_longest_blocked_us = std::max(t.hot_grow_longest_blocked_us, st.hot_grow_longest_blocked_us);
    t.memory_bytes = st.memory_bytes;  // the store's budget, shared by every keyspace
    if (s.engine.router_model.empty()) s.engine.router_model = st.router_model;
    if (s.engine.router_choice.empty()) s.engine.router_choice = st.router_choice;
  }
  for (const auto& t : threads_) {
    for (const auto& x : t->metrics.calls) s.calls += x.load(std::memory_order_relaxed);
    s.batches += t->metrics.batches.load(std::memory_order_relaxed);
    s.batched += t->metrics.batched.load(std::memory_order_relaxed);
    s.batches_overlapped += t->metrics.overlapped.load(std::memory_order_relaxed);
    s.direct_writes += t->metrics.direct_writes.load(std::memory_order_relaxed);
    s.longest_pass_ns = std::max(s.longest_pass_ns, t->metrics.longest_pass_ns.load(std::memory_order_relaxed));
    s.slow_passes += t->metrics.slow_passes.load(std::memory_order_relaxed);
    s.net_in += t->metrics.net_in.load(std::memory_order_relaxed);
    s.net_out += t->metrics.net_out.load(std::memory_order_relaxed);
  }
  s.background_done = background_.done();  // before tasks: never done > tasks
  s.background_tasks = background_.posted();
  s.clients = clients_.load();
  s.total_connections = total_connections_.load();
  s.rejected = rejected_.load();
  s.ops_per_sec = ops_per_sec_.load();
  s.maxclients = cfg_.maxclients.load();
  s.maxmemory = cfg_.store.memory_budget_bytes;
  s.io_threads = static_cast<unsigned>(threads_.size());
  for (const auto& t : threads_) s.thread_clients.push_back(t->metrics.open_connections.load(std::memory_order_relaxed));
  s.port = port_;
  s.uptime_s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - started_).count();
  s.device = store_->device_description();
  return s;
}

std::string Server::metrics_text() {
  std::vector<ThreadMetrics*> tm;
  for (auto& t : threads_) tm.push_back(&t->metrics);
  return render_prometheus(tm, stats());
}

Status Server::start() {
  started_ = std::chrono::steady_clock::now();
  if (!cfg_.store.epic.tables.empty()) {
    if (Status s = EpicDatabase::check(cfg_.store.epic); !s.ok()) return Status(s.code(), "epic settings: " + s.message());
    // Each batch database charges its tables to the memory budget when it opens; tables that
    // could never fit are refused now rather than at a client's first command.
    const std::uint64_t bytes = EpicDatabase::host_bytes(cfg_.store.epic), budget = effective_memory_budget(cfg_.store);
    if (bytes > budget)
      return Status::ResourceExhausted("epic settings: the tables take " + std::to_string(bytes) +
                                       " bytes in each batch database, more than the memory budget of " +
                                       std::to_string(budget) + " bytes (maxmemory)");
    // Batch databases open on first use; a placement they would refuse is refused now.
    const std::string device = store_->device_description();
    const EpicPlacement p = cfg_.store.epic.placement;
    if ((p == EpicPlacement::kGpu || p == EpicPlacement::kGpuExec) && device.rfind("gpu", 0) != 0)
      return Status::Unavailable(std::string("epic placement ") + epic_placement_name(p) +
                                 " was requested but the store runs on the CPU (" + device + ")");
  }
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
    bool started = false;
    try {
      started = metrics_->start(cfg_.metrics_bind, cfg_.metrics_port, [this] { return metrics_text(); }, &why);
    } catch (const std::system_error& e) {
      why = std::string("cannot start its thread: ") + e.what();
    }
    if (!started) return Status::Unavailable("metrics endpoint: " + why);
  }
  // Database 0 opens now: a device, budget or size that cannot work stops the server with the
  // reason instead of failing every command.
  if (std::string why; !keyspace(0, &why)) return Status::ResourceExhausted("database 0 cannot be opened: " + why);
  // Threads the system refuses (a process or address-space limit) stop the server with the
  // reason; stop() joins those already started.
  try {
    start_threads();
  } catch (const std::system_error& e) {
    return Status::ResourceExhausted("cannot start the server's threads (threads " + std::to_string(n) +
                                     ", procedure-threads " + std::to_string(procedure_threads()) +
                                     "): " + e.what());
  }
  return Status::Ok();
}

unsigned Server::procedure_threads() const {
  return cfg_.procedure_threads ? cfg_.procedure_threads : std::max(1u, std::thread::hardware_concurrency());
}

void Server::start_threads() {
  background_.start(1, "duet-background");
  procedures_.start(procedure_threads(), "duet-procedure");
  for (auto& t : threads_) t->start();  // after the task queues: their commands may queue tasks
  ticker_ = std::thread([this] {
    std::uint64_t last = 0;
    while (!draining_.load()) {
      for (int i = 0; i < 10 && !draining_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::uint64_t calls = 0;
      for (const auto& t : threads_)
        for (const auto& x : t->metrics.calls) calls += x.load(std::memory_order_relaxed);
      ops_per_sec_.store(calls - last);
      last = calls;
      for (const auto& t : threads_) t->report_if_stuck();
    }
  });
}

void Server::flush_epic() {
  for (auto& d : dbs_) {
    std::shared_ptr<Keyspace> space;
    {
      std::lock_guard<std::mutex> lk(d->m);
      space = d->space;
    }
    if (space && space->kind() == KeyspaceKind::kBatch)
      if (EpicDatabase* e = static_cast<BatchSpace&>(*space).epic()) e->flush();
  }
}

bool Server::run_in_background(std::function<void()> task) { return background_.post(std::move(task)); }

bool Server::run_procedure(std::function<void()> task) { return procedures_.post(std::move(task)); }

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
  // Epic's callbacks finish BATCH.CALL replies on these threads, so every call submitted must
  // have run while they are alive. New calls are refused once draining: the calls waiting run
  // now (their replies then go out in the wait below), and a call that slipped in before the
  // refusal runs at the second flush, after the threads stopped and before they are freed.
  flush_epic();
  while (in_flight() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // Queued tasks finish deferred replies on the I/O threads: they all run while those live.
  procedures_.stop();
  background_.stop();
  exiting_.store(true, std::memory_order_release);
  for (auto& t : threads_) t->wake();
  for (auto& t : threads_) t->join();
  flush_epic();
  if (ticker_.joinable()) ticker_.join();
  if (metrics_) metrics_->stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

}  // namespace duet::server
