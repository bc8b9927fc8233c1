// The server family: INFO, CONFIG, CLIENT and COMMAND. They report or change the server itself:
// its statistics (read through the one aggregator, server/stats.hpp), its settings, its clients
// and this registry.
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "server/command.hpp"
#include "server/commands/replies.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/server.hpp"
#include "server/stats.hpp"

namespace duet::server {

/// INFO duet's line per `batch` database (commands/batch.cpp).
void append_batch_info(const ServerStats& s, std::string* out);
/// INFO duet's line per `txn` database (commands/txn.cpp).
void append_txn_info(const ServerStats& s, std::string* out);

namespace {

const char* const kGroup = "server";

void unknown_subcommand(CommandContext& ctx, std::string_view cmd) {
  ctx.error("ERR unknown subcommand '" + std::string(ctx.args[1].substr(0, 64)) + "'. Try " + std::string(cmd) +
            " HELP.");
}

/// INFO's text for the wanted sections (all when `sections` is empty).
std::string render_info(const ServerStats& s, const std::vector<std::string>& sections) {
  auto want = [&](const char* name) {
    if (sections.empty()) return true;
    for (const auto& x : sections)
      if (x == name || x == "all" || x == "everything" || x == "default") return true;
    return false;
  };
  const KvStats& kv = s.engine.kv;
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
    line("tcp_port", std::to_string(s.port));
    line("uptime_in_seconds", std::to_string(s.uptime_s));
    line("uptime_in_days", std::to_string(s.uptime_s / 86400));
    line("io_threads_active", std::to_string(s.io_threads));
  }
  if (want("clients")) {
    section("Clients");
    line("connected_clients", std::to_string(s.clients));
    line("maxclients", std::to_string(s.maxclients));
    line("blocked_clients", "0");
  }
  if (want("memory")) {
    section("Memory");
    line("used_memory", std::to_string(kv.memory_bytes));
    char human[32];
    std::snprintf(human, sizeof human, "%.2fM", static_cast<double>(kv.memory_bytes) / (1024.0 * 1024.0));
    line("used_memory_human", human);
    line("maxmemory", std::to_string(s.maxmemory));
    line("maxmemory_policy", "noeviction");
  }
  if (want("stats")) {
    section("Stats");
    line("total_connections_received", std::to_string(s.total_connections));
    line("total_commands_processed", std::to_string(s.calls));
    line("instantaneous_ops_per_sec", std::to_string(s.ops_per_sec));
    line("total_net_input_bytes", std::to_string(s.net_in));
    line("total_net_output_bytes", std::to_string(s.net_out));
    line("rejected_connections", std::to_string(s.rejected));
  }
  if (want("keyspace")) {
    section("Keyspace");
    for (const auto& d : s.engine.databases)
      if (d.keys)  // Redis's fields, and the kind of a database that is not kv
        line("db" + std::to_string(d.db), "keys=" + std::to_string(d.keys) + ",expires=0,avg_ttl=0" +
                                              (d.kind == KeyspaceKind::kKv ? std::string()
                                                                           : std::string(",kind=") + keyspace_kind_name(d.kind)));
  }
  if (want("duet")) {
    section("Duet");
    const std::uint64_t routed = kv.hot_requests + kv.cold_requests;
    const std::uint64_t hits = kv.hot_requests - std::min(kv.hot_requests, kv.hot_misses);
    char rate[32], avg[32], store_avg[32], busy[32];
    std::snprintf(rate, sizeof rate, "%.4f", routed ? static_cast<double>(hits) / static_cast<double>(routed) : 0.0);
    std::snprintf(avg, sizeof avg, "%.1f",
                  s.batches ? static_cast<double>(s.batched) / static_cast<double>(s.batches) : 0.0);
    std::snprintf(store_avg, sizeof store_avg, "%.1f",
                  kv.batches ? static_cast<double>(kv.batched_requests) / static_cast<double>(kv.batches) : 0.0);
    std::snprintf(busy, sizeof busy, "%.3f", static_cast<double>(kv.store_busy_ns) / 1e9);
    line("duet_device", s.device);
    line("io_threads", std::to_string(s.io_threads));
    std::string per_thread;
    for (std::uint64_t n : s.thread_clients) {
      if (!per_thread.empty()) per_thread += ',';
      per_thread += std::to_string(n);
    }
    line("io_thread_clients", per_thread);
    std::string kinds;
    for (const auto& d : s.engine.databases) {
      if (!kinds.empty()) kinds += ",";
      kinds += std::to_string(d.db) + "=" + keyspace_kind_name(d.kind);
    }
    line("database_kinds", kinds);
    line("hot_cache_hit_rate", rate);
    line("hot_requests", std::to_string(kv.hot_requests));
    line("hot_misses", std::to_string(kv.hot_misses));
    line("cold_requests", std::to_string(kv.cold_requests));
    line("hot_cache_entries", std::to_string(kv.hot_entries));
    line("hot_cache_grows", std::to_string(kv.hot_grows));
    line("hot_cache_grow_recopied_buckets", std::to_string(kv.hot_grow_recopied));
    line("hot_cache_grow_longest_blocked_us", std::to_string(kv.hot_grow_longest_blocked_us));
    line("router_model", s.engine.router_model.empty() ? "none (no database opened yet)" : s.engine.router_model);
    line("router_choice", s.engine.router_choice.empty() ? "none (no database opened yet)" : s.engine.router_choice);
    line("model_switches", std::to_string(kv.model_switches));
    line("router_last_switch_us", std::to_string(kv.last_switch_us));
    line("router_longest_switch_us", std::to_string(kv.longest_switch_us));
    line("router_longest_switch_block_us", std::to_string(kv.longest_switch_block_us));
    line("router_replayed_early", std::to_string(kv.replayed_early));
    line("router_replayed_blocked", std::to_string(kv.replayed_blocked));
    line("io_thread_longest_pass_us", std::to_string(s.longest_pass_ns / 1000));
    line("io_thread_slow_passes", std::to_string(s.slow_passes));
    line("background_tasks", std::to_string(s.background_tasks));
    line("background_tasks_done", std::to_string(s.background_done));
    line("avg_batch_size", avg);
    line("batches_overlapped", std::to_string(s.batches_overlapped));
    line("direct_writes", std::to_string(s.direct_writes));
    line("store_batches", std::to_string(kv.batches));
    line("avg_store_batch_size", store_avg);
    line("store_busy_seconds", busy);
    append_batch_info(s, &o);
    append_txn_info(s, &o);
  }
  return o;
}

// INFO [section ...]
void info(CommandContext& ctx) {
  std::vector<std::string> sections;
  for (std::size_t i = 1; i < ctx.args.size(); ++i) sections.push_back(ascii_lower(ctx.args[i]));
  ctx.out.verbatim(render_info(ctx.server.stats(), sections));
}

// CONFIG GET pattern [pattern ...] | CONFIG SET name value [name value ...] | CONFIG RESETSTAT
void config(CommandContext& ctx) {
  const Args args = ctx.args;
  if (iequals(args[1], "get")) {
    if (args.size() < 3) return ctx.error("ERR wrong number of arguments for 'config|get' command");
    std::vector<std::string_view> patterns(args.begin() + 2, args.end());
    const auto kv = ctx.server.config_get(patterns);
    ctx.out.map(kv.size());
    for (const auto& [k, v] : kv) {
      ctx.out.bulk(k);
      ctx.out.bulk(v);
    }
  } else if (iequals(args[1], "set")) {
    if (args.size() < 4 || args.size() % 2 != 0)
      return ctx.error("ERR wrong number of arguments for 'config|set' command");
    std::vector<std::pair<std::string_view, std::string_view>> pairs;
    for (std::size_t i = 2; i + 1 < args.size(); i += 2) pairs.emplace_back(args[i], args[i + 1]);
    const Status st = ctx.server.config_set(pairs);
    if (st.ok()) ctx.out.simple("OK");
    else ctx.error("ERR CONFIG SET failed: " + st.message());
  } else if (iequals(args[1], "resetstat")) {
    ctx.out.simple("OK");
  } else {
    unknown_subcommand(ctx, "CONFIG");
  }
}

bool printable(std::string_view s) {
  for (char ch : s)
    if (!(ch > ' ' && ch <= '~')) return false;
  return true;
}

// CLIENT ID | GETNAME | SETNAME name | SETINFO attr value | LIST | INFO | NO-EVICT | NO-TOUCH
void client(CommandContext& ctx) {
  const Args args = ctx.args;
  ClientInfo& me = *ctx.session.info;
  const std::string sub = ascii_lower(args[1]);
  if (sub == "id" && args.size() == 2) {
    ctx.out.integer(static_cast<long long>(me.id));
  } else if (sub == "getname" && args.size() == 2) {
    std::lock_guard<std::mutex> lk(me.m);
    if (me.name.empty()) ctx.out.null();
    else ctx.out.bulk(me.name);
  } else if (sub == "setname" && args.size() == 3) {
    if (!printable(args[2]))
      return ctx.error("ERR Client names cannot contain spaces, newlines or special characters.");
    std::lock_guard<std::mutex> lk(me.m);
    me.name.assign(args[2]);
    ctx.out.simple("OK");
  } else if (sub == "setinfo" && args.size() == 4) {
    const std::string attr = ascii_lower(args[2]);
    if (!printable(args[3])) return ctx.error("ERR " + attr + " cannot contain spaces, newlines or special characters.");
    std::lock_guard<std::mutex> lk(me.m);
    if (attr == "lib-name") me.lib_name.assign(args[3]);
    else if (attr == "lib-ver") me.lib_ver.assign(args[3]);
    else return ctx.error("ERR Unrecognized option '" + std::string(args[2].substr(0, 64)) + "'");
    ctx.out.simple("OK");
  } else if (sub == "list") {
    ctx.out.verbatim(ctx.server.client_list());
  } else if (sub == "info" && args.size() == 2) {
    ctx.out.verbatim(me.line());
  } else if (sub == "no-evict" || sub == "no-touch") {
    ctx.out.simple("OK");
  } else {
    unknown_subcommand(ctx, "CLIENT");
  }
}

// COMMAND | COMMAND COUNT | LIST | INFO [name ...] | DOCS [name ...]
void command(CommandContext& ctx) {
  const Args args = ctx.args;
  const auto& all = all_commands();
  const std::string sub = args.size() > 1 ? ascii_lower(args[1]) : "";
  if (args.size() == 1) {
    ctx.out.array(all.size());
    for (const auto& c : all) write_command_info(ctx.out, c);
  } else if (sub == "count") {
    ctx.out.integer(static_cast<long long>(all.size()));
  } else if (sub == "list") {
    ctx.out.array(all.size());
    for (const auto& c : all) ctx.out.bulk(c.name);
  } else if (sub == "info") {
    if (args.size() == 2) {
      ctx.out.array(all.size());
      for (const auto& c : all) write_command_info(ctx.out, c);
    } else {
      ctx.out.array(args.size() - 2);
      for (std::size_t i = 2; i < args.size(); ++i) {
        if (const CommandDef* c = find_command(args[i])) write_command_info(ctx.out, *c);
        else ctx.out.null_array();
      }
    }
  } else if (sub == "docs") {
    std::vector<const CommandDef*> pick;
    if (args.size() == 2)
      for (const auto& c : all) pick.push_back(&c);
    for (std::size_t i = 2; i < args.size(); ++i)
      if (const CommandDef* c = find_command(args[i])) pick.push_back(c);
    ctx.out.map(pick.size());
    for (const CommandDef* c : pick) {
      ctx.out.bulk(c->name);
      write_command_docs(ctx.out, *c);
    }
  } else {
    unknown_subcommand(ctx, "COMMAND");
  }
}

}  // namespace

void register_server_commands(CommandTable& t) {
  t.add({.name = "info", .arity = -1, .flags = kKeyless | kLoading | kStale, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Returns information and statistics about the server.",
         .since = "1.0.0", .complexity = "O(1)", .args = {{"section", "string", nullptr, true, true}}, .local = info});
  t.add({.name = "config", .arity = -2, .flags = kKeyless | kAdmin | kContainer, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "CONFIG GET pattern / CONFIG SET name value.",
         .since = "2.0.0", .complexity = "O(N)",
         .args = {{"subcommand", "string", nullptr, false, false}, {"arg", "string", nullptr, true, true}},
         .local = config});
  t.add({.name = "client", .arity = -2, .flags = kKeyless | kContainer, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kAnyKind, .group = "connection", .summary = "CLIENT ID / GETNAME / SETNAME / LIST / INFO / SETINFO.",
         .since = "2.4.0", .complexity = "O(1)",
         .args = {{"subcommand", "string", nullptr, false, false}, {"arg", "string", nullptr, true, true}},
         .local = client});
  t.add({.name = "command", .arity = -1, .flags = kKeyless | kLoading | kStale, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Returns detailed information about commands.",
         .since = "2.8.13", .complexity = "O(N)",
         .args = {{"subcommand", "string", nullptr, true, false}, {"arg", "string", nullptr, true, true}},
         .local = command});
}

}  // namespace duet::server
