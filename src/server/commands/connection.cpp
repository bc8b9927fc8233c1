// The connection family: PING, ECHO, SELECT, HELLO, QUIT. They change or report the client's
// session (its database, its protocol, its name) and never touch data.
#include <mutex>
#include <string>

#include "server/command.hpp"
#include "server/commands/replies.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/server.hpp"

namespace duet::server {

namespace {

const char* const kGroup = "connection";

void ping(CommandContext& ctx) {
  if (ctx.args.size() > 2) return ctx.error("ERR wrong number of arguments for 'ping' command");
  if (ctx.args.size() == 2) ctx.out.bulk(ctx.args[1]);
  else ctx.out.simple("PONG");
}

void echo(CommandContext& ctx) { ctx.out.bulk(ctx.args[1]); }

void quit(CommandContext& ctx) {
  ctx.out.simple("OK");
  ctx.session.close_requested = true;
}

void select(CommandContext& ctx) {
  long long db;
  if (!parse_int64(ctx.args[1], &db)) return ctx.error("ERR value is not an integer or out of range");
  if (db < 0 || db >= static_cast<long long>(ctx.server.databases())) return ctx.error("ERR DB index is out of range");
  ctx.session.db = static_cast<unsigned>(db);
  ctx.session.info->db.store(ctx.session.db);
  ctx.out.simple("OK");
}

// HELLO [protover [SETNAME clientname]]
void hello(CommandContext& ctx) {
  const Args args = ctx.args;
  int proto = ctx.session.proto;
  std::size_t i = 1;
  if (args.size() > 1) {
    long long v;
    if (!parse_int64(args[1], &v)) return ctx.error("ERR Protocol version is not an integer or out of range");
    if (v != 2 && v != 3) return ctx.error("NOPROTO unsupported protocol version");
    proto = static_cast<int>(v);
    i = 2;
  }
  std::string setname;
  for (; i < args.size(); ++i) {
    if (iequals(args[i], "auth") && i + 2 < args.size())
      return ctx.error("ERR AUTH called without any password configured for the default user");
    if (iequals(args[i], "setname") && i + 1 < args.size()) setname.assign(args[++i]);
    else return ctx.error("ERR Syntax error in HELLO option '" + std::string(args[i].substr(0, 64)) + "'");
  }
  ctx.session.proto = proto;
  ctx.session.info->resp.store(proto);
  if (!setname.empty()) {
    std::lock_guard<std::mutex> lk(ctx.session.info->m);
    ctx.session.info->name = setname;
  }
  std::string* out = ctx.out.buffer();
  out->clear();
  ReplyWriter hw(out, proto);  // the reply already speaks the new protocol
  hw.map(7);
  hw.bulk("server");
  hw.bulk("duet");
  hw.bulk("version");
  hw.bulk("7.0.0");
  hw.bulk("proto");
  hw.integer(proto);
  hw.bulk("id");
  hw.integer(static_cast<long long>(ctx.session.info->id));
  hw.bulk("mode");
  hw.bulk("standalone");
  hw.bulk("role");
  hw.bulk("master");
  hw.bulk("modules");
  hw.array(0);
}

}  // namespace

void register_connection_commands(CommandTable& t) {
  t.add({.name = "ping", .arity = -1, .flags = kKeyless | kFast, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kAnyKind, .group = kGroup, .summary = "Returns the server's liveliness response.",
         .since = "1.0.0", .complexity = "O(1)", .args = {{"message", "string", nullptr, true, false}},
         .local = ping});
  t.add({.name = "echo", .arity = 2, .flags = kKeyless | kLoading | kStale | kFast, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Returns the given string.", .since = "1.0.0",
         .complexity = "O(1)", .args = {{"message", "string", nullptr, false, false}}, .local = echo});
  t.add({.name = "select", .arity = 2, .flags = kKeyless | kLoading | kStale | kFast, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Changes the selected database.",
         .since = "1.0.0", .complexity = "O(1)", .args = {{"index", "integer", nullptr, false, false}},
         .local = select});
  t.add({.name = "hello", .arity = -1,
         .flags = kKeyless | kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Handshakes: chooses RESP2 or RESP3.",
         .since = "6.0.0", .complexity = "O(1)",
         .args = {{"protover", "integer", nullptr, true, false}, {"clientname", "string", "SETNAME", true, false}},
         .local = hello});
  t.add({.name = "quit", .arity = -1,
         .flags = kKeyless | kNoScript | kLoading | kStale | kFast | kNoAuth | kAllowBusy, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kAnyKind, .group = kGroup, .summary = "Closes the connection.",
         .since = "1.0.0", .complexity = "O(1)", .args = {}, .local = quit});
}

}  // namespace duet::server
