// `duet server`: settings, store, signals, and the serve-until-stopped loop.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "common/log.hpp"
#include "server/server.hpp"

namespace duet::server {

namespace {

/// The write end of the pipe that carries a stop signal's number to run_server.
int g_stop_pipe = -1;

/// SIGTERM and SIGINT: hands the signal to the main thread through the pipe (async-signal-safe).
/// A handler rather than sigwait alone, because threads that libraries start before main (the
/// OpenBLAS pool) do not block the signals: under their default action a SIGTERM delivered to
/// one of them killed the server without its orderly stop.
void on_stop_signal(int sig) {
  const int saved = errno;
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_stop_pipe, &b, 1);
  errno = saved;
}

}  // namespace

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
  // SIGTERM and SIGINT run on_stop_signal, on whichever thread the kernel picks (threads this
  // process starts from here on block them; threads libraries started earlier may not), and
  // this thread waits on the pipe it writes.
  int stop_pipe[2];
  if (pipe2(stop_pipe, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "duet server: cannot create the signal pipe: %s\n", std::strerror(errno));
    return 1;
  }
  g_stop_pipe = stop_pipe[1];
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
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
    // The main thread takes the signals too while it waits (a blocked signal would otherwise
    // go only to the library threads).
    pthread_sigmask(SIG_UNBLOCK, &stop_signals, nullptr);
    unsigned char b = 0;
    while (read(stop_pipe[0], &b, 1) != 1) {
      if (errno != EINTR) break;
    }
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    const int sig = b;
    duet::log(LogLevel::kInfo, std::string("server: ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
                                   " received, stopping (answering the commands already read)");
    server.stop();
  }
  store.reset();
  duet::log(LogLevel::kInfo, "server: stopped");
  return code;
}

}  // namespace duet::server
