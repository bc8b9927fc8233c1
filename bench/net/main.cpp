// duet_bench_net: a closed-loop RESP2 load driver for Redis-protocol servers. See --help and
// bench/README.md ("Server benchmark").
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "bench/common/process_stats.hpp"
#include "bench/common/results.hpp"
#include "driver.hpp"
#include "options.hpp"

using duet::bench::Json;
using namespace duet::bench::net;

namespace {

std::string workload_name(const Options& o) {
  std::string s;
  if (o.get_weight) s += "get" + std::to_string(o.get_weight);
  if (o.set_weight) s += std::string(s.empty() ? "" : "-") + "set" + std::to_string(o.set_weight);
  if (o.distribution == duet::bench::kv::Distribution::kUniform) return s + "-uniform";
  char theta[32];
  std::snprintf(theta, sizeof theta, "%g", o.theta);
  return s + "-" + duet::bench::kv::distribution_name(o.distribution) + theta;
}

/// Problems that fail the run: error replies, wrong reply types, wrong values, and misses of
/// loaded keys (unless allowed).
std::uint64_t problems(const PhaseStats& s, const Options& o, bool verified_phase) {
  return s.errors + s.wrong_type + s.wrong_values + (verified_phase && !o.allow_misses ? s.get_misses : 0);
}

Json latency_record(const Options& o, const std::string& workload, const char* op, const PhaseStats& s,
                    const duet::bench::kv::LatencyHistogram& h, std::uint64_t requests) {
  Json r = Json::object();
  r.set("kind", "summary");
  r.set("name", o.label + "/" + workload + "/" + op);
  r.set("system", o.label);
  r.set("workload", workload);
  r.set("op", op);
  r.set("requests", requests);
  r.set("seconds", s.seconds);
  r.set("ops_per_s", s.seconds > 0 ? static_cast<double>(requests) / s.seconds : 0.0);
  r.set("mean_us", h.mean_ns() * 1e-3);
  r.set("p50_us", h.quantile_ns(0.50) * 1e-3);
  r.set("p99_us", h.quantile_ns(0.99) * 1e-3);
  r.set("p999_us", h.quantile_ns(0.999) * 1e-3);
  r.set("max_us", static_cast<double>(h.max_ns()) * 1e-3);
  return r;
}

void print_latency(const char* name, const duet::bench::kv::LatencyHistogram& h) {
  if (!h.count()) return;
  std::printf("  %-4s %10llu requests  p50 %8.1f us  p99 %8.1f us  p99.9 %8.1f us  max %8.1f us\n", name,
              static_cast<unsigned long long>(h.count()), h.quantile_ns(0.5) * 1e-3, h.quantile_ns(0.99) * 1e-3,
              h.quantile_ns(0.999) * 1e-3, static_cast<double>(h.max_ns()) * 1e-3);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  if (const auto msg = parse_options(argc, argv, &o, &help)) {
    std::fprintf(help ? stdout : stderr, help ? "%s" : "duet_bench_net: %s\n", msg->c_str());
    return help ? 0 : 2;
  }
  const std::string date = duet::bench::utc_now();
  const std::string workload = workload_name(o);
  if (!o.quiet)
    std::printf("duet_bench_net: %s at %s:%d, %u threads, %u connections, pipeline %u, %llu keys, %zu-byte values, "
                "mix %s\n",
                o.label.c_str(), o.host.c_str(), o.port, o.threads, o.connections, o.pipeline,
                static_cast<unsigned long long>(o.keyspace), o.value_bytes, workload.c_str());
  std::fflush(stdout);

  Driver driver(o);
  std::string error;
  if (!driver.connect(&error)) {
    std::fprintf(stderr, "duet_bench_net: FATAL: %s\n", error.c_str());
    return 1;
  }

  PhaseStats loaded;
  if (o.load) {
    loaded = driver.load();
    if (!o.quiet)
      std::printf("load: %llu SETs in %.2f s (%.0f ops/s)\n", static_cast<unsigned long long>(loaded.requests),
                  loaded.seconds, loaded.ops_per_s());
    if (const auto bad = problems(loaded, o, false)) {
      // A server that cannot take the load is not worth measuring.
      std::fprintf(stderr, "duet_bench_net: FAILED: %llu bad replies to the load's SETs; first: %s\n",
                   static_cast<unsigned long long>(bad), loaded.first_problem.c_str());
      return 1;
    }
  }
  PhaseStats warm;
  if (o.warmup_seconds > 0) {
    warm = driver.run_mix(o.warmup_seconds, 0, false, o.load);
    if (!o.quiet)
      std::printf("warm-up: %llu requests in %.2f s (%.0f ops/s)\n", static_cast<unsigned long long>(warm.requests),
                  warm.seconds, warm.ops_per_s());
    if (problems(warm, o, o.load))
      std::fprintf(stderr, "duet_bench_net: ERROR during the warm-up: %s\n", warm.first_problem.c_str());
  }
  std::fflush(stdout);
  // CPU time over the measured phase alone: this process's (every client thread runs inside
  // run_mix) and, given its pid, the server's.
  const pid_t server = static_cast<pid_t>(o.server_pid);
  const double client_cpu0 = duet::bench::self_cpu_seconds();
  const auto server_cpu0 = server ? duet::bench::process_cpu_seconds(server) : std::nullopt;
  const PhaseStats run = driver.run_mix(o.seconds, o.requests, true, o.load);
  const double client_cpu = duet::bench::self_cpu_seconds() - client_cpu0;
  const auto server_cpu1 = server ? duet::bench::process_cpu_seconds(server) : std::nullopt;
  const bool have_server_cpu = server_cpu0.has_value() && server_cpu1.has_value();
  const double server_cpu = have_server_cpu ? *server_cpu1 - *server_cpu0 : 0;

  const std::uint64_t bad = problems(loaded, o, false) + problems(warm, o, o.load) + problems(run, o, o.load);
  std::printf("%s %s: %.0f ops/s (%llu requests in %.2f s), p50 %.1f us, p99 %.1f us, p99.9 %.1f us\n",
              o.label.c_str(), workload.c_str(), run.ops_per_s(), static_cast<unsigned long long>(run.requests),
              run.seconds, run.all.quantile_ns(0.5) * 1e-3, run.all.quantile_ns(0.99) * 1e-3,
              run.all.quantile_ns(0.999) * 1e-3);
  if (!o.quiet) {
    const double per = 1e6 / static_cast<double>(std::max<std::uint64_t>(run.requests, 1));
    if (have_server_cpu)
      std::printf("  CPU per request: client %.2f us, server %.2f us\n", client_cpu * per, server_cpu * per);
    else
      std::printf("  CPU per request: client %.2f us\n", client_cpu * per);
    print_latency("all", run.all);
    print_latency("get", run.get);
    print_latency("set", run.set);
    std::printf("  GET hits %llu, misses %llu; error replies %llu, wrong types %llu, wrong values %llu\n",
                static_cast<unsigned long long>(run.get_hits), static_cast<unsigned long long>(run.get_misses),
                static_cast<unsigned long long>(run.errors), static_cast<unsigned long long>(run.wrong_type),
                static_cast<unsigned long long>(run.wrong_values));
  }
  std::fflush(stdout);

  // The result file.
  Json config = Json::object();
  config.set("host", o.host);
  config.set("port", o.port);
  config.set("threads", o.threads);
  config.set("connections", o.connections);
  config.set("pipeline", o.pipeline);
  config.set("keyspace", o.keyspace);
  config.set("value_bytes", static_cast<std::uint64_t>(o.value_bytes));
  config.set("mix", mix_name(o));
  config.set("get_weight", o.get_weight);
  config.set("set_weight", o.set_weight);
  config.set("distribution", duet::bench::kv::distribution_name(o.distribution));
  config.set("theta", o.distribution == duet::bench::kv::Distribution::kUniform ? Json() : Json(o.theta));
  config.set("seconds", o.requests ? Json() : Json(o.seconds));
  config.set("requests", o.requests ? Json(o.requests) : Json());
  config.set("warmup_seconds", o.warmup_seconds);
  config.set("load", o.load);
  config.set("allow_misses", o.allow_misses);
  config.set("seed", o.seed);
  config.set("label", o.label);
  config.set("latency", "batch send to reply");

  Json records = Json::array();
  if (o.load) {
    Json r = Json::object();
    r.set("kind", "load");
    r.set("name", o.label + "/load/set");
    r.set("system", o.label);
    r.set("op", "set");
    r.set("requests", loaded.requests);
    r.set("seconds", loaded.seconds);
    r.set("ops_per_s", loaded.ops_per_s());
    r.set("errors", loaded.errors + loaded.wrong_type);
    records.push(std::move(r));
  }
  Json all = latency_record(o, workload, "all", run, run.all, run.requests);
  all.set("get_hits", run.get_hits);
  all.set("get_misses", run.get_misses);
  all.set("errors", run.errors);
  all.set("wrong_types", run.wrong_type);
  all.set("wrong_values", run.wrong_values);
  all.set("warmup_requests", warm.requests);
  const double measured = static_cast<double>(std::max<std::uint64_t>(run.requests, 1));
  all.set("client_cpu_s", client_cpu);
  all.set("client_cpu_us_per_request", client_cpu * 1e6 / measured);
  all.set("server_pid", o.server_pid ? Json(o.server_pid) : Json());
  all.set("server_cpu_s", have_server_cpu ? Json(server_cpu) : Json());
  all.set("server_cpu_us_per_request", have_server_cpu ? Json(server_cpu * 1e6 / measured) : Json());
  all.set("verified", bad == 0);
  const std::string& first = !loaded.first_problem.empty() ? loaded.first_problem
                             : !warm.first_problem.empty() ? warm.first_problem
                                                           : run.first_problem;
  all.set("first_problem", first.empty() ? Json() : Json(first));
  records.push(std::move(all));
  if (run.gets) records.push(latency_record(o, workload, "get", run, run.get, run.gets));
  if (run.sets) records.push(latency_record(o, workload, "set", run, run.set, run.sets));

  if (o.out != "none") {
    std::string path = o.out;
    if (path.size() < 5 || path.compare(path.size() - 5, 5, ".json") != 0) {
      if (!path.empty() && path.back() != '/') path += '/';
      path += "net-" + o.label + "-" + duet::bench::utc_now(true) + ".json";
    }
    const Json doc = duet::bench::result_document("net", o.device, duet::bench::commit_id(DUET_SOURCE_DIR), date,
                                                  std::move(config), std::move(records));
    if (!duet::bench::write_result_file(path, doc, &error)) {
      std::fprintf(stderr, "duet_bench_net: %s\n", error.c_str());
      return 1;
    }
    if (!o.quiet) std::printf("result: %s\n", path.c_str());
  }
  if (bad) {
    std::fprintf(stderr, "duet_bench_net: FAILED: %llu bad replies; first: %s\n", static_cast<unsigned long long>(bad),
                 first.c_str());
    return 1;
  }
  return 0;
}
