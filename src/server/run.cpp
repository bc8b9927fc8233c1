// `duet server`: settings, store, signals, and the serve-until-stopped loop.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>

#include "common/log.hpp"
#include "server/server.hpp"

namespace duet::server {

int run_server(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(server_usage(), stdout);
      return 0;
    }
  }
  ServerConfig cfg;
  Status s = parse_server_args(&cfg, argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "duet server: %s\n%s", s.message().c_str(), server_usage());
    return 2;
  }
  if (cfg.log_level != "info") {
    s = apply_setting(&cfg, "loglevel", cfg.log_level, false);  // parse_server_args accepted it already
    if (!s.ok()) {
      std::fprintf(stderr, "duet server: %s\n", s.message().c_str());
      return 2;
    }
  }
  // Every thread started from here on inherits the blocked signals; this one waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  setenv("DUET_GPU_SYNC", cfg.gpu_sync.c_str(), 1);  // read when the GPU is first opened
  // --device auto on a machine with a GPU: the store measures which processor serves this
  // server's shape of work faster (its I/O threads, each with batches in flight) and says so in
  // the log and in INFO's duet_device.
  cfg.store.measure_auto_device = true;
  cfg.store.auto_probe.threads = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
  std::unique_ptr<Store> store;
  s = Store::open(cfg.store, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "duet server: cannot open the store: %s\n", s.to_string().c_str());
    return 1;
  }
  int code = 0;
  {
    Server server(cfg, store.get());
    s = server.start();
    if (!s.ok()) {
      std::fprintf(stderr, "duet server: %s\n", s.message().c_str());
      return 1;
    }
    const unsigned threads = cfg.threads ? cfg.threads : std::max(1u, std::thread::hardware_concurrency());
    duet::log(LogLevel::kInfo, "server: device " + store->device_description() + "; " + std::to_string(threads) +
                                   " I/O threads; " + std::to_string(cfg.databases) + " databases");
    if (cfg.metrics_port)
      duet::log(LogLevel::kInfo, "server: metrics at http://" + cfg.metrics_bind + ":" +
                                     std::to_string(cfg.metrics_port) + "/metrics");
    duet::log(LogLevel::kInfo, "server: listening on " + cfg.bind + ":" + std::to_string(server.port()) +
                                   ", ready to accept connections");
    int sig = 0;
    sigwait(&stop_signals, &sig);
    duet::log(LogLevel::kInfo, std::string("server: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                                   " received, stopping (answering the commands already read)");
    server.stop();
  }
  store.reset();
  duet::log(LogLevel::kInfo, "server: stopped");
  return code;
}

}  // namespace duet::server
