// `duet bench ch --systems server`'s client side (ch_server.hpp).
#include "bench/compute/ch_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "net/resp_client.hpp"

extern char** environ;

namespace duet::bench {

using compute::ch::Kind;
using compute::ch::Op;
using compute::ch::OpResult;

namespace {

std::size_t decode(const char* p, std::size_t n, RespValue* v);

// *v from reply r, parsed from p[0..n) (an array's elements are decoded from the bytes after its
// header line).
void fill(const net::Reply& r, const char* p, std::size_t n, RespValue* v) {
  v->type = r.type;
  v->nil = r.nil;
  v->integer = r.integer;
  v->text.assign(r.text);
  v->elems.clear();
  if (r.type == '*' && !r.nil) {
    std::size_t off = std::string_view(p, n).find("\r\n") + 2;
    v->elems.resize(static_cast<std::size_t>(r.integer));
    for (RespValue& e : v->elems) off += decode(p + off, n - off, &e);
  }
}

// Decodes the complete reply at p[0..n) (checked by parse_reply) into *v; returns its length.
std::size_t decode(const char* p, std::size_t n, RespValue* v) {
  std::size_t used = 0;
  net::Reply r;
  std::string err;
  net::parse_reply(p, n, &used, &r, &err);
  fill(r, p, n, v);
  return used;
}

int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (s >= 0 && bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) close(s);
  return port;
}

std::string tail_of(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

}  // namespace

Status RespConnection::open(int port, std::unique_ptr<RespConnection>* out) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    close(fd);
    return Status::Unavailable("connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(e));
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  out->reset(new RespConnection(fd));
  return Status::Ok();
}

RespConnection::~RespConnection() { close(fd_); }

void RespConnection::send(std::span<const std::string_view> argv) {
  out_ += '*' + std::to_string(argv.size()) + "\r\n";
  for (std::string_view a : argv) {
    out_ += '$' + std::to_string(a.size()) + "\r\n";
    out_.append(a);
    out_ += "\r\n";
  }
}

Status RespConnection::flush() {
  std::size_t off = 0;
  while (off < out_.size()) {
    const ssize_t n = ::send(fd_, out_.data() + off, out_.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Unavailable(std::string("send: ") + std::strerror(errno));
    off += static_cast<std::size_t>(n);
  }
  out_.clear();
  return Status::Ok();
}

Status RespConnection::receive(RespValue* out) {
  for (;;) {
    std::size_t used = 0;
    net::Reply r;
    std::string err;
    const char* p = in_.data() + in_pos_;
    const std::size_t n = in_.size() - in_pos_;
    const net::ParseResult pr = net::parse_reply(p, n, &used, &r, &err);
    if (pr == net::ParseResult::kProtocolError) return Status::Internal("the server's reply is not RESP2: " + err);
    if (pr == net::ParseResult::kReply) {
      fill(r, p, n, out);
      in_pos_ += used;
      if (in_pos_ == in_.size()) in_.clear(), in_pos_ = 0;
      return Status::Ok();
    }
    if (in_pos_ > 0) in_.erase(0, in_pos_), in_pos_ = 0;
    char buf[65536];
    const ssize_t got = recv(fd_, buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return Status::Unavailable("the server closed the connection");
    in_.append(buf, static_cast<std::size_t>(got));
  }
}

Status RespConnection::call(std::span<const std::string_view> argv, RespValue* out) {
  send(argv);
  if (Status s = flush(); !s.ok()) return s;
  return receive(out);
}

ChServerConfig default_ch_server_config() {
  ChServerConfig c;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path dir = self.parent_path();
  if (self.filename() == "duet") {
    c.server_bin = self.string();
    c.proc_lib = (dir / "bench" / "libduet_ch_proc.so").string();
  } else {
    c.server_bin = (dir.parent_path() / "duet").string();
    c.proc_lib = (dir / "libduet_ch_proc.so").string();
  }
  return c;
}

Status ChServer::start(const ChServerConfig& c, std::unique_ptr<ChServer>* out) {
  namespace fs = std::filesystem;
  if (access(c.server_bin.c_str(), X_OK) != 0)
    return Status::InvalidArgument("no server binary at " + c.server_bin + " (--server-bin)");
  if (access(c.proc_lib.c_str(), R_OK) != 0)
    return Status::InvalidArgument("no procedure library at " + c.proc_lib + " (--proc; build target duet_ch_proc)");
  std::unique_ptr<ChServer> s(new ChServer());
  s->port_ = free_port();
  s->log_ = (fs::temp_directory_path() / ("duet-bench-ch-server-" + std::to_string(getpid()) + ".log")).string();
  const fs::path lib = fs::absolute(c.proc_lib);
  std::vector<std::string> args{c.server_bin, "server", "--port", std::to_string(s->port_), "--database-kinds", "txn",
                                "--procedure-enable", "yes", "--procedure-dir", lib.parent_path().string()};
  if (c.threads) args.insert(args.end(), {"--threads", std::to_string(c.threads)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, s->log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const int rc = posix_spawn(&s->pid_, c.server_bin.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return Status::Unavailable("cannot start " + c.server_bin + ": " + std::strerror(rc));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::unique_ptr<RespConnection> conn;
  for (;;) {
    if (RespConnection::open(s->port_, &conn).ok()) break;
    int st = 0;
    if (waitpid(s->pid_, &st, WNOHANG) == s->pid_) {
      s->pid_ = -1;
      return Status::Unavailable("the server exited at start: " + tail_of(s->log_));
    }
    if (std::chrono::steady_clock::now() > deadline)
      return Status::Unavailable("the server did not answer within 30 s: " + tail_of(s->log_));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string file = lib.filename().string();
  const std::string_view load[] = {"PROCEDURE", "LOAD", file};
  RespValue v;
  if (Status st = conn->call(load, &v); !st.ok()) return st;
  if (v.is_error()) return Status::Unavailable("PROCEDURE LOAD " + file + ": " + v.text);
  *out = std::move(s);
  return Status::Ok();
}

ChServer::~ChServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
  if (!log_.empty()) std::filesystem::remove(log_);
}

Status ChServer::load(const compute::ch::Scale& sc, unsigned threads) {
  if (threads == 0) threads = 1;
  std::vector<Status> st(threads);
  std::vector<std::thread> th;
  for (unsigned p = 0; p < threads; ++p) {
    th.emplace_back([&, p] {
      std::unique_ptr<RespConnection> c;
      if (st[p] = RespConnection::open(port_, &c); !st[p].ok()) return;
      std::vector<std::string> kv;  // key, value, key, value, ...
      auto flush = [&]() -> Status {
        std::vector<std::string_view> argv{"FCALL", "ch.load", "0"};
        for (auto& x : kv) argv.push_back(x);
        RespValue v;
        if (Status s = c->call(argv, &v); !s.ok()) return s;
        if (v.is_error()) return Status::Internal("ch.load: " + v.text);
        kv.clear();
        return Status::Ok();
      };
      st[p] = compute::ch::generate(sc, p, threads, [&](std::string_view k, std::string_view v) -> Status {
        kv.emplace_back(k);
        kv.emplace_back(v);
        return kv.size() >= 2 * 512 ? flush() : Status::Ok();
      });
      if (st[p].ok() && !kv.empty()) st[p] = flush();
    });
  }
  for (auto& t : th) t.join();
  for (const Status& s : st)
    if (!s.ok()) return s;
  return Status::Ok();
}

Status ChServer::procedure_counts(std::uint64_t* calls, std::uint64_t* retries) {
  std::unique_ptr<RespConnection> c;
  if (Status s = RespConnection::open(port_, &c); !s.ok()) return s;
  const std::string_view list[] = {"PROCEDURE", "LIST"};
  RespValue v;
  if (Status s = c->call(list, &v); !s.ok()) return s;
  if (v.is_error()) return Status::Internal("PROCEDURE LIST: " + v.text);
  *calls = *retries = 0;
  for (const RespValue& entry : v.elems)  // each a flat field, value list (RESP2)
    for (std::size_t i = 0; i + 1 < entry.elems.size(); i += 2) {
      const RespValue& f = entry.elems[i];
      const RespValue& x = entry.elems[i + 1];
      if (f.text == "calls") *calls += static_cast<std::uint64_t>(x.integer);
      if (f.text == "retries") *retries += static_cast<std::uint64_t>(x.integer);
    }
  return Status::Ok();
}

bool run_ch_op(RespConnection& c, const Op& op, OpResult* r, std::string* err) {
  *r = OpResult{};
  r->attempts = 1;
  const std::vector<std::string> args = compute::ch::op_args(op);
  const bool ro = op.kind == Kind::kOrderStatus || op.kind == Kind::kStockLevel;
  std::vector<std::string_view> argv{ro ? "FCALL_RO" : "FCALL", compute::ch::procedure_name(op.kind), "0"};
  for (auto& a : args) argv.push_back(a);
  RespValue v;
  if (Status s = c.call(argv, &v); !s.ok()) return *err = s.to_string(), false;
  if (v.is_error()) {
    if (v.text.rfind("ROLLBACK", 0) == 0) return r->rolled_back = true, true;
    return *err = std::string(compute::ch::procedure_name(op.kind)) + ": " + v.text, false;
  }
  r->committed = true;
  r->commit_ts = 1;
  switch (op.kind) {
    case Kind::kNewOrder:
      if (v.elems.size() != 2) return *err = "ch.new_order: unexpected reply", false;
      r->o_id = static_cast<std::uint32_t>(v.elems[0].integer);
      r->value = v.elems[1].integer;
      break;
    case Kind::kDelivery:
      if (v.elems.size() != compute::ch::kDistricts) return *err = "ch.delivery: unexpected reply", false;
      for (std::size_t d = 0; d < compute::ch::kDistricts; ++d) {
        r->delivered[d] = static_cast<std::uint32_t>(v.elems[d].integer);
        r->value += r->delivered[d] != 0;
      }
      break;
    case Kind::kOrderStatus:
    case Kind::kStockLevel: r->value = v.integer; break;
    case Kind::kPayment: break;
  }
  return true;
}

}  // namespace duet::bench
