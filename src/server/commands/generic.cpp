// The generic family: commands on keys of any type (DEL, EXISTS, TYPE) and on a whole database
// (DBSIZE, FLUSHDB, FLUSHALL, SCAN). The database commands are barriers: they run once the
// client's earlier commands have replied, so they see their effects.
#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "server/command.hpp"
#include "server/commands/replies.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/server.hpp"

namespace duet::server {

namespace {

const char* const kGroup = "generic";
const char* const kServerGroup = "server";
constexpr ArgDoc kKeysDoc{"key", "key", nullptr, false, true};

// ---- DEL key [key ...] ----
bool apply_del(KeyState& k, const KeyOp&, std::string* r, const KeyEnv&) {
  put_int(r, k.exists ? 1 : 0);
  if (!k.exists) return false;
  k.exists = false;
  k.value.clear();
  return true;
}
bool always(const KeyOp&) { return true; }
void del_blind_reply(const KeyOp&, bool found, const std::string&, std::string* r) { put_int(r, found ? 1 : 0); }

// ---- EXISTS key [key ...] ----
bool apply_exists(KeyState& k, const KeyOp&, std::string* r, const KeyEnv&) {
  put_int(r, k.exists ? 1 : 0);
  return false;
}

// ---- TYPE key ----
bool apply_type(KeyState& k, const KeyOp&, std::string* r, const KeyEnv&) {
  *r = k.exists ? "+string\r\n" : "+none\r\n";
  return false;
}

// ---- DBSIZE ----
void dbsize(CommandContext& ctx) {
  auto space = ctx.server.keyspace(ctx.session.db);
  ctx.out.integer(space ? static_cast<long long>(space->size()) : 0);
}

// ---- FLUSHDB [SYNC | ASYNC], FLUSHALL [SYNC | ASYNC] ----
bool flush_args_ok(Args args) {
  return args.size() == 1 || (args.size() == 2 && (iequals(args[1], "sync") || iequals(args[1], "async")));
}
void flushdb(CommandContext& ctx) {
  if (!flush_args_ok(ctx.args)) return ctx.error("ERR syntax error");
  ctx.server.flush_db(ctx.session.db);
  ctx.out.simple("OK");
}
void flushall(CommandContext& ctx) {
  if (!flush_args_ok(ctx.args)) return ctx.error("ERR syntax error");
  for (unsigned d = 0; d < ctx.server.databases(); ++d) ctx.server.flush_db(d);
  ctx.out.simple("OK");
}

// ---- SCAN cursor [MATCH pattern] [COUNT count] [TYPE type] ----
/// A SCAN call's options, owned (a deferred call outlives the request's buffer).
struct ScanRequest {
  std::uint64_t cursor = 0;
  std::string pattern;
  std::size_t count = 10;
  bool type_ok = true;  ///< TYPE names a type this server holds (string)
};

/// One SCAN step's outcome: the keys kept by MATCH and TYPE and the next cursor, or an error.
struct ScanResult {
  Status status;
  std::vector<std::string> keys;
  std::uint64_t next = 0;
};

/// Walks one SCAN step of space (null: an empty database).
ScanResult walk_scan(Keyspace* space, const ScanRequest& q) {
  ScanResult r;
  if (space) r.status = space->scan(q.cursor, q.count, &r.keys, &r.next);
  if (!r.status.ok()) return r;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < r.keys.size(); ++i) {
    if (!q.type_ok || !(q.pattern.empty() || q.pattern == "*" || glob_match(q.pattern, r.keys[i]))) continue;
    if (kept != i) r.keys[kept] = std::move(r.keys[i]);
    ++kept;
  }
  r.keys.resize(kept);
  return r;
}

/// SCAN's reply: [next cursor, [keys...]], or the error.
void write_scan(ReplyWriter& w, const ScanResult& r) {
  if (!r.status.ok()) return w.error("ERR " + r.status.message());
  w.array(2);
  w.bulk(std::to_string(r.next));
  w.array(r.keys.size());
  for (const auto& k : r.keys) w.bulk(k);
}

void scan(CommandContext& ctx) {
  const Args args = ctx.args;
  ScanRequest q;
  auto rc = std::from_chars(args[1].data(), args[1].data() + args[1].size(), q.cursor);
  if (rc.ec != std::errc() || rc.ptr != args[1].data() + args[1].size()) return ctx.error("ERR invalid cursor");
  long long count = 10;
  bool bad = false;
  for (std::size_t i = 2; i < args.size(); i += 2) {
    if (i + 1 >= args.size()) {
      bad = true;
      break;
    }
    if (iequals(args[i], "match")) q.pattern = std::string(args[i + 1]);
    else if (iequals(args[i], "count")) {
      if (!parse_int64(args[i + 1], &count)) {
        count = -1;  // reported below, as Redis does
        break;
      }
      if (count < 1) bad = true;
    } else if (iequals(args[i], "type")) q.type_ok = iequals(args[i + 1], "string");
    else bad = true;
  }
  if (count == -1) return ctx.error("ERR value is not an integer or out of range");
  if (bad) return ctx.error("ERR syntax error");
  q.count = static_cast<std::size_t>(std::min<long long>(count, 1 << 20));
  std::shared_ptr<Keyspace> space = ctx.server.keyspace(ctx.session.db);
  // Cursor 0 first brings every key written through the Hot Cache to the store (a
  // checkpoint), which can take seconds with millions of dirty keys: it runs on the server's
  // background thread, so this I/O thread's other clients go on meanwhile. Later cursors read
  // a bounded number of slabs here.
  if (q.cursor == 0 && space && space->size() != 0 && !ctx.server.draining()) {
    DeferredReply finish = ctx.defer();
    if (finish) {
      auto task = [space, q, finish] {
        const ScanResult r = walk_scan(space.get(), q);
        finish(!r.status.ok(), [&](ReplyWriter& w) { write_scan(w, r); });
      };
      if (!ctx.server.run_in_background(task)) task();  // the server is stopping: run it here
      return;
    }
  }
  const ScanResult r = walk_scan(space.get(), q);
  if (!r.status.ok()) return ctx.error("ERR " + r.status.message());
  write_scan(ctx.out, r);
}
}  // namespace

void register_generic_commands(CommandTable& t) {
  t.add({.name = "del", .arity = -2, .flags = kWrite | kOverwrite | kMultiKey, .first_key = 1, .last_key = -1,
         .step = 1, .kinds = kStringKinds, .group = kGroup, .summary = "Deletes one or more keys.", .since = "1.0.0",
         .complexity = "O(N)", .args = {kKeysDoc},
         .key = {.apply = apply_del, .blind = always, .blind_reply = del_blind_reply, .multi = MultiReply::kSum}});
  t.add({.name = "exists", .arity = -2, .flags = kReadOnly | kFast | kMultiKey, .first_key = 1, .last_key = -1,
         .step = 1, .kinds = kStringKinds, .group = kGroup, .summary = "Determines whether one or more keys exist.",
         .since = "1.0.0", .complexity = "O(N)", .args = {kKeysDoc},
         .key = {.apply = apply_exists, .multi = MultiReply::kSum}});
  t.add({.name = "type", .arity = 2, .flags = kReadOnly | kFast, .first_key = 1, .last_key = 1, .step = 1,
         .kinds = kStringKinds, .group = kGroup, .summary = "Determines the type of value stored at a key.", .since = "1.0.0",
         .complexity = "O(1)", .args = {{"key", "key", nullptr, false, false}}, .key = {.apply = apply_type}});
  t.add({.name = "dbsize", .arity = 1, .flags = kReadOnly | kFast | kKeyless | kBarrier, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kAnyKind, .group = kServerGroup,
         .summary = "Returns the number of keys in the database.", .since = "1.0.0", .complexity = "O(1)", .args = {},
         .local = dbsize});
  t.add({.name = "flushdb", .arity = -1, .flags = kWrite | kKeyless | kBarrier, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kServerGroup, .summary = "Removes all keys from the current database.",
         .since = "1.0.0", .complexity = "O(N)", .args = {{"flush-type", "pure-token", "SYNC", true, false}},
         .local = flushdb});
  t.add({.name = "flushall", .arity = -1, .flags = kWrite | kKeyless | kBarrier, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kServerGroup, .summary = "Removes all keys from all databases.",
         .since = "1.0.0", .complexity = "O(N)", .args = {{"flush-type", "pure-token", "SYNC", true, false}},
         .local = flushall});
  t.add({.name = "scan", .arity = -2, .flags = kReadOnly | kKeyless | kBarrier, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Iterates over the key names in the database.",
         .since = "2.8.0", .complexity = "O(1) for every call. O(N) for a complete iteration.",
         .args = {{"cursor", "integer", nullptr, false, false},
                  {"pattern", "pattern", "MATCH", true, false},
                  {"count", "integer", "COUNT", true, false},
                  {"type", "string", "TYPE", true, false}},
         .local = scan});
}

}  // namespace duet::server
