#include "server/metrics.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "server/command.hpp"
#include "server/stats.hpp"

namespace duet::server {

namespace {

const std::vector<double>& latency_bounds() {
  static const std::vector<double> b{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1};
  return b;
}
const std::vector<double>& batch_bounds() {
  static const std::vector<double> b{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536};
  return b;
}

std::string fmt(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

void emit_histogram(std::string* out, const std::string& name, const std::string& labels,
                    const std::vector<double>& bounds, const std::vector<std::uint64_t>& buckets, double sum) {
  std::uint64_t cum = 0;
  const std::string sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cum += buckets[i];
    *out += name + "_bucket{" + labels + sep + "le=\"" + fmt(bounds[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += buckets[bounds.size()];
  *out += name + "_bucket{" + labels + sep + "le=\"+Inf\"} " + std::to_string(cum) + "\n";
  const std::string l = labels.empty() ? "" : "{" + labels + "}";
  *out += name + "_sum" + l + " " + fmt(sum) + "\n";
  *out += name + "_count" + l + " " + std::to_string(cum) + "\n";
}

}  // namespace

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds_->begin(), bounds_->end(), v);
  bump(counts_[static_cast<std::size_t>(it - bounds_->begin())]);
  bump(sum_micro_, static_cast<std::uint64_t>(v * 1e6));
}

void Histogram::add_to(std::vector<std::uint64_t>* buckets, double* sum) const {
  buckets->resize(counts_.size());
  for (std::size_t i = 0; i < counts_.size(); ++i) (*buckets)[i] += counts_[i].load(std::memory_order_relaxed);
  *sum += static_cast<double>(sum_micro_.load(std::memory_order_relaxed)) / 1e6;
}

ThreadMetrics::ThreadMetrics()
    : calls(all_commands().size()), errors(all_commands().size()), hot_latency(&latency_bounds()),
      cold_latency(&latency_bounds()), batch_size(&batch_bounds()) {
  for (std::size_t i = 0; i < all_commands().size(); ++i)
    latency.push_back(std::make_unique<Histogram>(&latency_bounds()));
}

std::string render_prometheus(const std::vector<ThreadMetrics*>& threads, const ServerStats& s) {
  std::string out;
  out.reserve(64 * 1024);
  out += "# HELP duet_commands_total Commands executed, by command.\n# TYPE duet_commands_total counter\n";
  for (const CommandDef& c : all_commands()) {
    std::uint64_t n = 0;
    for (const ThreadMetrics* t : threads) n += t->calls[c.id].load(std::memory_order_relaxed);
    out += std::string("duet_commands_total{cmd=\"") + c.name + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP duet_command_errors_total Commands answered with an error, by command.\n"
         "# TYPE duet_command_errors_total counter\n";
  for (const CommandDef& c : all_commands()) {
    std::uint64_t n = 0;
    for (const ThreadMetrics* t : threads) n += t->errors[c.id].load(std::memory_order_relaxed);
    out += std::string("duet_command_errors_total{cmd=\"") + c.name + "\"} " + std::to_string(n) + "\n";
  }
  out += "# HELP duet_command_duration_seconds Time from a command's parse to its reply, by command.\n"
         "# TYPE duet_command_duration_seconds histogram\n";
  for (const CommandDef& c : all_commands()) {
    std::vector<std::uint64_t> b;
    double sum = 0;
    for (const ThreadMetrics* t : threads) t->latency[c.id]->add_to(&b, &sum);
    emit_histogram(&out, "duet_command_duration_seconds", std::string("cmd=\"") + c.name + "\"", latency_bounds(), b,
                   sum);
  }
  out += "# HELP duet_request_duration_seconds Key commands' latency by the engine path that answered them.\n"
         "# TYPE duet_request_duration_seconds histogram\n";
  for (int hot = 1; hot >= 0; --hot) {
    std::vector<std::uint64_t> b;
    double sum = 0;
    for (const ThreadMetrics* t : threads) (hot ? t->hot_latency : t->cold_latency).add_to(&b, &sum);
    emit_histogram(&out, "duet_request_duration_seconds", hot ? "path=\"hot\"" : "path=\"cold\"", latency_bounds(), b,
                   sum);
  }
  out += "# HELP duet_batch_size Engine requests per batch a server thread sent.\n# TYPE duet_batch_size histogram\n";
  {
    std::vector<std::uint64_t> b;
    double sum = 0;
    for (const ThreadMetrics* t : threads) t->batch_size.add_to(&b, &sum);
    emit_histogram(&out, "duet_batch_size", "", batch_bounds(), b, sum);
  }
  std::uint64_t conns = 0;
  for (const ThreadMetrics* t : threads) conns += t->connections.load(std::memory_order_relaxed);
  auto counter = [&](const char* name, const char* help, std::uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " + fmt(v) + "\n";
  };
  counter("duet_connections_total", "Connections accepted.", conns);
  const KvStats& kv = s.engine.kv;
  counter("duet_net_input_bytes_total", "Bytes read from clients.", s.net_in);
  counter("duet_net_output_bytes_total", "Bytes written to clients.", s.net_out);
  counter("duet_hot_requests_total", "Engine requests answered by the Hot Cache.", kv.hot_requests);
  counter("duet_cold_requests_total", "Engine requests answered by the Canonical Store.", kv.cold_requests);
  counter("duet_model_switches_total", "Router models installed.", kv.model_switches);
  gauge("duet_store_busy_seconds_total", "Time the Canonical Store spent running batches (GPU time on a GPU).",
        static_cast<double>(kv.store_busy_ns) / 1e9);
  gauge("duet_memory_bytes", "Host bytes charged to the memory budget.", static_cast<double>(kv.memory_bytes));
  gauge("duet_keys", "Keys in all databases.", static_cast<double>(s.engine.keys));
  gauge("duet_connected_clients", "Open client connections.", static_cast<double>(s.clients));
  return out;
}

bool MetricsEndpoint::start(const std::string& bind, int port, std::function<std::string()> render,
                            std::string* error) {
  render_ = std::move(render);
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, bind.c_str(), &a.sin_addr) != 1) {
    *error = "metrics-bind '" + bind + "' is not an IPv4 address";
    return false;
  }
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0) {
    *error = "cannot listen on " + bind + ":" + std::to_string(port) + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{2, 0};
      ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        req.append(buf, static_cast<std::size_t>(n));
      }
      std::string body, status = "200 OK";
      if (req.rfind("GET /metrics", 0) == 0) {
        body = render_();
      } else {
        status = "404 Not Found";
        body = "duet serves metrics at /metrics\n";
      }
      const std::string resp = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
      std::size_t sent = 0;
      while (sent < resp.size()) {
        const ssize_t n = ::send(c, resp.data() + sent, resp.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += static_cast<std::size_t>(n);
      }
      ::close(c);
    }
  });
  return true;
}

void MetricsEndpoint::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace duet::server
