#include "server/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/log.hpp"
#include "compute/compute.hpp"

namespace duet::server {

ServerConfig::ServerConfig(const ServerConfig& o)
    : bind(o.bind), port(o.port), threads(o.threads), databases(o.databases),
      database_kinds(o.database_kinds), default_kind(o.default_kind), kind_overrides(o.kind_overrides),
      metrics_port(o.metrics_port),
      metrics_bind(o.metrics_bind), log_level(o.log_level), gpu_sync(o.gpu_sync), store(o.store),
      procedure_enable(o.procedure_enable), procedure_dir(o.procedure_dir),
      procedure_max_attempts(o.procedure_max_attempts), procedure_backoff_max_us(o.procedure_backoff_max_us),
      procedure_compute_device(o.procedure_compute_device), procedure_threads(o.procedure_threads), maxclients(o.maxclients.load()),
      proto_max_bulk_len(o.proto_max_bulk_len.load()), client_query_buffer_limit(o.client_query_buffer_limit.load()),
      max_unread_output(o.max_unread_output.load()),
      max_multibulk_len(o.max_multibulk_len.load()), max_batch(o.max_batch.load()),
      max_batches_in_flight(o.max_batches_in_flight.load()), txn_idle_timeout_ms(o.txn_idle_timeout_ms.load()) {}

KeyspaceKind ServerConfig::database_kind(unsigned db) const {
  for (const auto& [d, k] : kind_overrides)
    if (d == db) return k;
  return default_kind;
}

namespace {

/// Parses `database-kinds` ("KIND" and "INDEX=KIND" entries, comma-separated) into c.
Status set_database_kinds(ServerConfig* c, std::string_view v) {
  KeyspaceKind def = KeyspaceKind::kKv;
  std::vector<std::pair<unsigned, KeyspaceKind>> overrides;
  bool have_default = false;
  std::size_t at = 0;
  while (at <= v.size()) {
    const std::size_t comma = std::min(v.find(',', at), v.size());
    const std::string_view entry = v.substr(at, comma - at);
    at = comma + 1;
    if (entry.empty()) return Status::InvalidArgument("database-kinds: empty entry in '" + std::string(v) + "'");
    const std::size_t eq = entry.find('=');
    KeyspaceKind kind;
    const std::string_view kind_text = eq == std::string_view::npos ? entry : entry.substr(eq + 1);
    if (Status s = parse_keyspace_kind(kind_text, &kind); !s.ok())
      return Status::InvalidArgument("database-kinds: " + s.message());
    if (eq == std::string_view::npos) {
      if (have_default) return Status::InvalidArgument("database-kinds: more than one default kind");
      have_default = true;
      def = kind;
      continue;
    }
    unsigned db = 0;
    const std::string_view index = entry.substr(0, eq);
    auto r = std::from_chars(index.data(), index.data() + index.size(), db);
    if (r.ec != std::errc() || r.ptr != index.data() + index.size() || db >= 1024)
      return Status::InvalidArgument("database-kinds: '" + std::string(index) + "' is not a database index (0-1023)");
    overrides.emplace_back(db, kind);
  }
  c->database_kinds = std::string(v);
  c->default_kind = def;
  c->kind_overrides = std::move(overrides);
  return Status::Ok();
}

}  // namespace

bool parse_size(std::string_view t, std::uint64_t* out) {
  std::uint64_t v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr == t.data()) return false;
  const std::string unit = ascii_lower(std::string_view(r.ptr, static_cast<std::size_t>(t.data() + t.size() - r.ptr)));
  std::uint64_t mul = 1;
  if (unit.empty() || unit == "b") mul = 1;
  else if (unit == "k") mul = 1000;
  else if (unit == "kb") mul = 1024;
  else if (unit == "m") mul = 1000 * 1000;
  else if (unit == "mb") mul = 1024 * 1024;
  else if (unit == "g") mul = 1000ull * 1000 * 1000;
  else if (unit == "gb") mul = 1024ull * 1024 * 1024;
  else return false;
  if (v > UINT64_MAX / mul) return false;
  *out = v * mul;
  return true;
}

bool glob_match(std::string_view p, std::string_view s, bool nocase) {
  auto fold = [nocase](char c) { return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c; };
  std::size_t pi = 0, si = 0;
  std::size_t star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    bool matched = false;
    std::size_t next_pi = pi;
    if (pi < p.size()) {
      const char pc = p[pi];
      if (pc == '*') {
        star_p = pi++;
        star_s = si;
        continue;
      }
      if (pc == '?') {
        matched = true;
        next_pi = pi + 1;
      } else if (pc == '[') {
        std::size_t j = pi + 1;
        bool negate = false;
        if (j < p.size() && p[j] == '^') {
          negate = true;
          ++j;
        }
        bool hit = false;
        while (j < p.size() && p[j] != ']') {
          if (p[j] == '\\' && j + 1 < p.size()) {
            if (fold(p[j + 1]) == fold(s[si])) hit = true;
            j += 2;
          } else if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            char lo = fold(p[j]), hi = fold(p[j + 2]);
            if (lo > hi) std::swap(lo, hi);
            const char c = fold(s[si]);
            if (c >= lo && c <= hi) hit = true;
            j += 3;
          } else {
            if (fold(p[j]) == fold(s[si])) hit = true;
            ++j;
          }
        }
        matched = hit != negate;
        next_pi = j < p.size() ? j + 1 : j;
      } else if (pc == '\\' && pi + 1 < p.size()) {
        matched = fold(p[pi + 1]) == fold(s[si]);
        next_pi = pi + 2;
      } else {
        matched = fold(pc) == fold(s[si]);
        next_pi = pi + 1;
      }
    }
    if (matched) {
      pi = next_pi;
      ++si;
    } else if (star_p != std::string_view::npos) {
      pi = star_p + 1;
      si = ++star_s;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {

/// One setting: its name, whether CONFIG SET may change it, how to read and write it.
struct Setting {
  const char* name;
  bool live;
  std::function<std::string(const ServerConfig&)> get;
  std::function<Status(ServerConfig*, std::string_view)> set;  // null: fixed
};

/// The shortest text that reads back as exactly `v` (CONFIG GET of a real-valued setting).
std::string shortest_text(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

Status bad(std::string_view name, std::string_view value, const char* want) {
  return Status::InvalidArgument("argument '" + std::string(value) + "' for '" + std::string(name) + "' is invalid: " +
                                 want);
}

template <typename T>
Status set_uint(std::string_view name, std::string_view v, T* field, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t x;
  if (!parse_size(v, &x) || x < lo || x > hi)
    return bad(name, v, ("expected a number from " + std::to_string(lo) + " to " + std::to_string(hi)).c_str());
  *field = static_cast<T>(x);
  return Status::Ok();
}

/// "yes" or "no" in any case into *field; InvalidArgument naming the setting otherwise.
Status set_yes_no(std::string_view name, std::string_view v, bool* field) {
  const std::string b = ascii_lower(v);
  if (b != "yes" && b != "no") return bad(name, v, "expected yes or no");
  *field = b == "yes";
  return Status::Ok();
}

Status set_atomic(std::string_view name, std::string_view v, std::atomic<std::uint64_t>* field, std::uint64_t lo,
                  std::uint64_t hi) {
  std::uint64_t x = 0;
  Status s = set_uint(name, v, &x, lo, hi);
  if (s.ok()) field->store(x);
  return s;
}

const std::vector<Setting>& settings() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> t;
    auto fixed = [&](const char* n, std::function<std::string(const ServerConfig&)> g) {
      t.push_back({n, false, std::move(g), nullptr});
    };
    t.push_back({"bind", false, [](const ServerConfig& c) { return c.bind; },
                 [](ServerConfig* c, std::string_view v) {
                   c->bind = std::string(v);
                   return Status::Ok();
                 }});
    t.push_back({"port", false, [](const ServerConfig& c) { return std::to_string(c.port); },
                 [](ServerConfig* c, std::string_view v) { return set_uint("port", v, &c->port, 1, 65535); }});
    t.push_back({"threads", false, [](const ServerConfig& c) { return std::to_string(c.threads); },
                 [](ServerConfig* c, std::string_view v) { return set_uint("threads", v, &c->threads, 0, 1024); }});
    t.push_back({"databases", false, [](const ServerConfig& c) { return std::to_string(c.databases); },
                 [](ServerConfig* c, std::string_view v) { return set_uint("databases", v, &c->databases, 1, 1024); }});
    t.push_back({"database-kinds", false, [](const ServerConfig& c) { return c.database_kinds; },
                 [](ServerConfig* c, std::string_view v) { return set_database_kinds(c, v); }});
    // `db-kind INDEX KIND` (redis.conf style, one line per database): adds INDEX=KIND to
    // database-kinds. CONFIG GET db-kind answers database-kinds' value.
    t.push_back({"db-kind", false, [](const ServerConfig& c) { return c.database_kinds; },
                 [](ServerConfig* c, std::string_view v) {
                   const std::size_t sp = v.find(' ');
                   if (sp == std::string_view::npos)
                     return Status::InvalidArgument("db-kind: expected 'INDEX KIND' (e.g. 'db-kind 2 txn'), got '" +
                                                    std::string(v) + "'");
                   return set_database_kinds(c, c->database_kinds + "," + std::string(v.substr(0, sp)) + "=" +
                                                    std::string(v.substr(sp + 1)));
                 }});
    t.push_back({"metrics-port", false, [](const ServerConfig& c) { return std::to_string(c.metrics_port); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("metrics-port", v, &c->metrics_port, 0, 65535);
                 }});
    t.push_back({"metrics-bind", false, [](const ServerConfig& c) { return c.metrics_bind; },
                 [](ServerConfig* c, std::string_view v) {
                   c->metrics_bind = std::string(v);
                   return Status::Ok();
                 }});
    t.push_back({"loglevel", true, [](const ServerConfig& c) { return c.log_level; },
                 [](ServerConfig* c, std::string_view v) {
                   const std::string l = ascii_lower(v);
                   if (l == "debug") set_log_level(LogLevel::kDebug);
                   else if (l == "info" || l == "verbose" || l == "notice") set_log_level(LogLevel::kInfo);
                   else if (l == "warn" || l == "warning") set_log_level(LogLevel::kWarn);
                   else if (l == "error") set_log_level(LogLevel::kError);
                   else return bad("loglevel", v, "expected debug, info, warn or error");
                   c->log_level = l;
                   return Status::Ok();
                 }});
    t.push_back({"device", false, [](const ServerConfig& c) { return std::string(device_choice_name(c.store.device)); },
                 [](ServerConfig* c, std::string_view v) { return parse_device_choice(v, &c->store.device); }});
    t.push_back({"gpu-sync", false, [](const ServerConfig& c) { return c.gpu_sync; },
                 [](ServerConfig* c, std::string_view v) {
                   const std::string m = ascii_lower(v);
                   if (m != "auto" && m != "spin" && m != "yield" && m != "blocking")
                     return bad("gpu-sync", v, "expected auto, spin, yield or blocking");
                   c->gpu_sync = m;
                   return Status::Ok();
                 }});
    t.push_back({"maxmemory", false, [](const ServerConfig& c) { return std::to_string(c.store.memory_budget_bytes); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("maxmemory", v, &c->store.memory_budget_bytes, 0, UINT64_MAX);
                 }});
    t.push_back({"expected-keys", false, [](const ServerConfig& c) { return std::to_string(c.store.expected_keys); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("expected-keys", v, &c->store.expected_keys, 1, 1ull << 40);
                 }});
    t.push_back({"hot-cache-entries", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.hot_cache_entries); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("hot-cache-entries", v, &c->store.hot_cache_entries, 1, 1ull << 36);
                 }});
    t.push_back({"orchestrators", false, [](const ServerConfig& c) { return std::to_string(c.store.orchestrators); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("orchestrators", v, &c->store.orchestrators, 0, 256);
                 }});
    t.push_back({"max-key-bytes", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.limits.max_key_bytes); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("max-key-bytes", v, &c->store.limits.max_key_bytes, 1, 512ull << 20);
                 }});
    t.push_back({"max-value-bytes", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.limits.max_value_bytes); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("max-value-bytes", v, &c->store.limits.max_value_bytes, 1, 4ull << 30);
                 }});
    t.push_back({"router", false, [](const ServerConfig& c) { return std::string(router_mode_name(c.store.router.mode)); },
                 [](ServerConfig* c, std::string_view v) { return parse_router_mode(v, &c->store.router.mode); }});
    t.push_back({"router-threshold", true, [](const ServerConfig& c) { return shortest_text(c.store.router.threshold); },
                 [](ServerConfig* c, std::string_view v) {
                   double d = 0;
                   auto r = std::from_chars(v.data(), v.data() + v.size(), d);
                   if (r.ec != std::errc() || r.ptr != v.data() + v.size() || !(d >= 0))
                     return bad("router-threshold", v, "expected a number >= 0");
                   c->store.router.threshold = d;
                   return Status::Ok();
                 }});
    t.push_back({"router-train-requests", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.router.train_requests); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("router-train-requests", v, &c->store.router.train_requests, 1, 1ull << 40);
                 }});
    t.push_back({"router-sample-every", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.router.sample_every); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("router-sample-every", v, &c->store.router.sample_every, 1, 1u << 20);
                 }});
    t.push_back({"maxclients", true, [](const ServerConfig& c) { return std::to_string(c.maxclients.load()); },
                 [](ServerConfig* c, std::string_view v) { return set_atomic("maxclients", v, &c->maxclients, 1, 1u << 20); }});
    t.push_back({"proto-max-bulk-len", true,
                 [](const ServerConfig& c) { return std::to_string(c.proto_max_bulk_len.load()); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_atomic("proto-max-bulk-len", v, &c->proto_max_bulk_len, 1024, 4ull << 30);
                 }});
    t.push_back({"client-query-buffer-limit", true,
                 [](const ServerConfig& c) { return std::to_string(c.client_query_buffer_limit.load()); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_atomic("client-query-buffer-limit", v, &c->client_query_buffer_limit, 1024 * 1024,
                                     8ull << 30);
                 }});
    t.push_back({"max-unread-output", true,
                 [](const ServerConfig& c) { return std::to_string(c.max_unread_output.load()); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_atomic("max-unread-output", v, &c->max_unread_output, 0, UINT64_MAX);
                 }});
    t.push_back({"max-multibulk-len", true,
                 [](const ServerConfig& c) { return std::to_string(c.max_multibulk_len.load()); },
                 [](ServerConfig* c, std::string_view v) {
                   // At least 16, so a client can always send the CONFIG SET that raises it again.
                   return set_atomic("max-multibulk-len", v, &c->max_multibulk_len, 16, 1u << 30);
                 }});
    t.push_back({"max-batch", true, [](const ServerConfig& c) { return std::to_string(c.max_batch.load()); },
                 [](ServerConfig* c, std::string_view v) { return set_atomic("max-batch", v, &c->max_batch, 1, 1u << 20); }});
    t.push_back({"max-batches-in-flight", true,
                 [](const ServerConfig& c) { return std::to_string(c.max_batches_in_flight.load()); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_atomic("max-batches-in-flight", v, &c->max_batches_in_flight, 1, 256);
                 }});
    t.push_back({"txn-clock", false,
                 [](const ServerConfig& c) { return std::string(txn_clock_name(c.store.txn_clock)); },
                 [](ServerConfig* c, std::string_view v) {
                   if (!parse_txn_clock(v, &c->store.txn_clock).ok()) return bad("txn-clock", v, "expected counter or tsc");
                   return Status::Ok();
                 }});
    t.push_back({"txn-idle-timeout", true,
                 [](const ServerConfig& c) { return std::to_string(c.txn_idle_timeout_ms.load()); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_atomic("txn-idle-timeout", v, &c->txn_idle_timeout_ms, 0, 7ull * 24 * 3600 * 1000);
                 }});
    // Native procedures (commands/procedure.cpp): fixed, so that no client can turn them on.
    t.push_back({"procedure-enable", false, [](const ServerConfig& c) { return std::string(c.procedure_enable ? "yes" : "no"); },
                 [](ServerConfig* c, std::string_view v) { return set_yes_no("procedure-enable", v, &c->procedure_enable); }});
    t.push_back({"procedure-dir", false, [](const ServerConfig& c) { return c.procedure_dir; },
                 [](ServerConfig* c, std::string_view v) {
                   c->procedure_dir = std::string(v);
                   return Status::Ok();
                 }});
    t.push_back({"procedure-max-attempts", false,
                 [](const ServerConfig& c) { return std::to_string(c.procedure_max_attempts); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("procedure-max-attempts", v, &c->procedure_max_attempts, 1, 1000000);
                 }});
    t.push_back({"procedure-threads", false, [](const ServerConfig& c) { return std::to_string(c.procedure_threads); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("procedure-threads", v, &c->procedure_threads, 0, 1024);
                 }});
    t.push_back({"procedure-backoff-max-us", false,
                 [](const ServerConfig& c) { return std::to_string(c.procedure_backoff_max_us); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("procedure-backoff-max-us", v, &c->procedure_backoff_max_us, 2, 1000000);
                 }});
    t.push_back({"procedure-compute-device", false, [](const ServerConfig& c) { return c.procedure_compute_device; },
                 [](ServerConfig* c, std::string_view v) {
                   compute::Device d = compute::Device::kAuto;
                   if (!compute::parse_device(v, &d)) return bad("procedure-compute-device", v, "expected auto, cpu or gpu");
                   c->procedure_compute_device = compute::device_name(d);
                   return Status::Ok();
                 }});
    // Epic's database in each `batch` database (BATCH.CALL; docs/epic.md): fixed at startup.
    t.push_back({"epic-procedures", false,
                 [](const ServerConfig& c) { return std::string(epic_procedures_name(c.store.epic.procedures)); },
                 [](ServerConfig* c, std::string_view v) { return parse_epic_procedures(v, &c->store.epic.procedures); }});
    t.push_back({"epic-placement", false,
                 [](const ServerConfig& c) { return std::string(epic_placement_name(c.store.epic.placement)); },
                 [](ServerConfig* c, std::string_view v) { return parse_epic_placement(v, &c->store.epic.placement); }});
    t.push_back({"epic-exec-order", false,
                 [](const ServerConfig& c) { return std::string(epic_exec_order_name(c.store.epic.exec_order)); },
                 [](ServerConfig* c, std::string_view v) { return parse_epic_exec_order(v, &c->store.epic.exec_order); }});
    t.push_back({"epic-place-by-contention", false,
                 [](const ServerConfig& c) { return std::string(c.store.epic.place_by_contention ? "yes" : "no"); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_yes_no("epic-place-by-contention", v, &c->store.epic.place_by_contention);
                 }});
    t.push_back({"epic-min-device-epoch-ops", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.epic.min_device_epoch_ops); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("epic-min-device-epoch-ops", v, &c->store.epic.min_device_epoch_ops, 0, 1ull << 40);
                 }});
    t.push_back({"epic-max-device-epoch-ops", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.epic.max_device_epoch_ops); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("epic-max-device-epoch-ops", v, &c->store.epic.max_device_epoch_ops, 0, 1ull << 40);
                 }});
    t.push_back({"epic-max-attempts", false, [](const ServerConfig& c) { return std::to_string(c.store.epic.max_attempts); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("epic-max-attempts", v, &c->store.epic.max_attempts, 1, 1000);
                 }});
    t.push_back({"epic-tables", false, [](const ServerConfig& c) { return format_epic_tables(c.store.epic.tables); },
                 [](ServerConfig* c, std::string_view v) { return parse_epic_tables(v, &c->store.epic.tables); }});
    t.push_back({"epic-threads", false, [](const ServerConfig& c) { return std::to_string(c.store.epic.threads); },
                 [](ServerConfig* c, std::string_view v) { return set_uint("epic-threads", v, &c->store.epic.threads, 0, 64); }});
    t.push_back({"epic-epoch-size", false, [](const ServerConfig& c) { return std::to_string(c.store.epic.epoch_size); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("epic-epoch-size", v, &c->store.epic.epoch_size, 1, 1u << 19);
                 }});
    t.push_back({"epic-epoch-max-wait-us", false,
                 [](const ServerConfig& c) { return std::to_string(c.store.epic.epoch_max_wait_us); },
                 [](ServerConfig* c, std::string_view v) {
                   return set_uint("epic-epoch-max-wait-us", v, &c->store.epic.epoch_max_wait_us, 0, 60'000'000);
                 }});
    // Fixed answers clients and tools ask about (redis-benchmark reads these two).
    fixed("save", [](const ServerConfig&) { return std::string(); });
    fixed("appendonly", [](const ServerConfig&) { return std::string("no"); });
    return t;
  }();
  return table;
}

}  // namespace

Status apply_setting(ServerConfig* c, std::string_view name, std::string_view value, bool live) {
  const std::string n = ascii_lower(name);
  if (!live && (n == "save" || n == "appendonly")) {
    // Common in redis.conf files; Duet keeps no data on disk, so only "off" values mean anything.
    if (!(value.empty() || ascii_lower(value) == "no"))
      log(LogLevel::kWarn, "setting '" + n + " " + std::string(value) + "' ignored: Duet does not persist data");
    return Status::Ok();
  }
  const std::string_view key = n == "io-threads" ? std::string_view("threads") : std::string_view(n);
  for (const Setting& s : settings()) {
    if (key != s.name) continue;
    if (!s.set || (live && !s.live))
      return Status::InvalidArgument("can't set immutable config '" + n + "' (set it at startup)");
    return s.set(c, value);
  }
  return Status::InvalidArgument("unknown setting '" + std::string(name) + "'");
}

Status load_config_file(ServerConfig* c, const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("cannot read config file '" + path + "'");
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    std::vector<std::string> words;
    std::istringstream ls(line);
    for (std::string w; ls >> w;) words.push_back(w);
    if (words.empty() || words[0][0] == '#') continue;
    std::string value = words.size() > 1 ? words[1] : "";
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    if (words.size() > 2 && ascii_lower(words[0]) == "save") value = line.substr(line.find(words[1]));
    else if (words.size() > 2)
      return Status::InvalidArgument(path + ":" + std::to_string(no) + ": expected 'name value'");
    Status s = apply_setting(c, words[0], value, false);
    if (!s.ok()) return Status::InvalidArgument(path + ":" + std::to_string(no) + ": " + s.message());
  }
  return Status::Ok();
}

Status parse_server_args(ServerConfig* c, int argc, char** argv) {
  // The file first, wherever --config stands; flags then override it.
  for (int i = 0; i < argc; ++i) {
    const std::string_view a = argv[i];
    std::string path;
    if (a == "--config" && i + 1 < argc) path = argv[i + 1];
    else if (a.substr(0, 9) == "--config=") path = std::string(a.substr(9));
    else continue;
    Status s = load_config_file(c, path);
    if (!s.ok()) return s;
  }
  for (int i = 0; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a.substr(0, 2) != "--") return Status::InvalidArgument("unexpected argument '" + std::string(a) + "'");
    a.remove_prefix(2);
    std::string_view value;
    if (const auto eq = a.find('='); eq != std::string_view::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else {
      if (i + 1 >= argc) return Status::InvalidArgument("--" + std::string(a) + " needs a value");
      value = argv[++i];
    }
    if (a == "config") continue;
    Status s = apply_setting(c, a, value, false);
    if (!s.ok()) return s;
  }
  for (const auto& [db, kind] : c->kind_overrides)
    if (db >= c->databases)
      return Status::InvalidArgument("database-kinds: database " + std::to_string(db) + " is beyond databases (" +
                                     std::to_string(c->databases) + ")");
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> config_get(const ServerConfig& c, std::string_view pattern) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Setting& s : settings())
    if (glob_match(pattern, s.name, true)) out.emplace_back(s.name, s.get(c));
  return out;
}

const char* server_usage() {
  return "usage: duet server [--config FILE] [--SETTING VALUE ...]\n"
         "Serves the Redis protocol (RESP2/RESP3) in front of Duet's keyspaces.\n"
         "  --bind ADDR                 listen address (127.0.0.1)\n"
         "  --port N                    TCP port (6379)\n"
         "  --threads N                 I/O and execution threads (0: every core)\n"
         "  --device auto|cpu|gpu       where the Canonical Store runs (auto)\n"
         "  --databases N               SELECT range (16)\n"
         "  --database-kinds SPEC       keyspace kind per database: KIND[,INDEX=KIND...] (kv)\n"
         "  --db-kind 'INDEX KIND'      one database's kind (adds to --database-kinds)\n"
         "  --txn-idle-timeout MS       abort an interactive transaction idle this long (60000; 0: never)\n"
         "  --txn-clock counter|tsc     txn databases' timestamp source (counter; docs/txn.md)\n"
         "  --maxmemory BYTES           memory budget for keys and values (0: half of RAM)\n"
         "  --maxclients N              connections at once (10000)\n"
         "  --proto-max-bulk-len BYTES  largest argument (512mb)\n"
         "  --client-query-buffer-limit BYTES  largest unanswered input of one client (1gb)\n"
         "  --max-unread-output BYTES   stop reading a client with more unsent replies (0: no limit)\n"
         "  --max-key-bytes / --max-value-bytes BYTES  engine limits (64kb / 512mb)\n"
         "  --router learned|all-cold|all-hot, --router-threshold X, --hot-cache-entries N\n"
         "  --router-train-requests N   sampled requests before a new router model is installed (312500)\n"
         "  --expected-keys N           keys each database is sized for up front (1048576)\n"
         "  --metrics-port N            serve Prometheus metrics at http://BIND:N/metrics (off)\n"
         "  --gpu-sync auto|spin|yield|blocking  how threads wait for the GPU (blocking)\n"
         "  --loglevel debug|info|warn|error\n"
         "Settings and CONFIG GET/SET are described in docs/server.md.\n";
}

}  // namespace duet::server
