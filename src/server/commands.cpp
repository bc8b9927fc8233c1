#include "server/commands.hpp"

#include <cctype>
#include <string>

namespace duet::server {

namespace {

constexpr ArgDoc key{"key", "key", nullptr, false, false};
constexpr ArgDoc keys{"key", "key", nullptr, false, true};
constexpr ArgDoc value{"value", "string", nullptr, false, false};

std::vector<CommandSpec> build() {
  using F = std::vector<const char*>;
  const char* const str = "string";
  const char* const gen = "generic";
  const char* const conn = "connection";
  const char* const srv = "server";
  return {
      {"ping", Cmd::kPing, -1, F{"fast"}, 0, 0, 0, conn, "Returns the server's liveliness response.", "1.0.0", "O(1)",
       {{"message", "string", nullptr, true, false}}},
      {"echo", Cmd::kEcho, 2, F{"fast"}, 0, 0, 0, conn, "Returns the given string.", "1.0.0", "O(1)",
       {{"message", "string", nullptr, false, false}}},
      {"get", Cmd::kGet, 2, F{"readonly", "fast"}, 1, 1, 1, str, "Returns the string value of a key.", "1.0.0",
       "O(1)", {key}},
      {"set", Cmd::kSet, -3, F{"write", "denyoom"}, 1, 1, 1, str,
       "Sets the string value of a key; NX/XX make it conditional, GET returns the old value.", "1.0.0", "O(1)",
       {key, value, {"nx", "pure-token", "NX", true, false}, {"xx", "pure-token", "XX", true, false},
        {"get", "pure-token", "GET", true, false}}},
      {"getset", Cmd::kGetSet, 3, F{"write", "denyoom", "fast"}, 1, 1, 1, str,
       "Returns the previous string value of a key after setting it to a new value.", "1.0.0", "O(1)", {key, value}},
      {"del", Cmd::kDel, -2, F{"write"}, 1, -1, 1, gen, "Deletes one or more keys.", "1.0.0", "O(N)", {keys}},
      {"exists", Cmd::kExists, -2, F{"readonly", "fast"}, 1, -1, 1, gen, "Determines whether one or more keys exist.",
       "1.0.0", "O(N)", {keys}},
      {"mget", Cmd::kMget, -2, F{"readonly", "fast"}, 1, -1, 1, str, "Atomically (per key) returns the values of keys.",
       "1.0.0", "O(N)", {keys}},
      {"mset", Cmd::kMset, -3, F{"write", "denyoom"}, 1, -1, 2, str, "Sets the string values of one or more keys.",
       "1.0.1", "O(N)", {{"key", "key", nullptr, false, true}, {"value", "string", nullptr, false, true}}},
      {"incr", Cmd::kIncr, 2, F{"write", "denyoom", "fast"}, 1, 1, 1, str,
       "Increments the integer value of a key by one.", "1.0.0", "O(1)", {key}},
      {"decr", Cmd::kDecr, 2, F{"write", "denyoom", "fast"}, 1, 1, 1, str,
       "Decrements the integer value of a key by one.", "1.0.0", "O(1)", {key}},
      {"incrby", Cmd::kIncrBy, 3, F{"write", "denyoom", "fast"}, 1, 1, 1, str,
       "Increments the integer value of a key by a number.", "1.0.0", "O(1)",
       {key, {"increment", "integer", nullptr, false, false}}},
      {"decrby", Cmd::kDecrBy, 3, F{"write", "denyoom", "fast"}, 1, 1, 1, str,
       "Decrements the integer value of a key by a number.", "1.0.0", "O(1)",
       {key, {"decrement", "integer", nullptr, false, false}}},
      {"append", Cmd::kAppend, 3, F{"write", "denyoom", "fast"}, 1, 1, 1, str,
       "Appends a string to the value of a key; creates the key if needed.", "2.0.0", "O(1)", {key, value}},
      {"strlen", Cmd::kStrlen, 2, F{"readonly", "fast"}, 1, 1, 1, str, "Returns the length of a string value.",
       "2.2.0", "O(1)", {key}},
      {"type", Cmd::kType, 2, F{"readonly", "fast"}, 1, 1, 1, gen, "Determines the type of value stored at a key.",
       "1.0.0", "O(1)", {key}},
      {"dbsize", Cmd::kDbsize, 1, F{"readonly", "fast"}, 0, 0, 0, srv, "Returns the number of keys in the database.",
       "1.0.0", "O(1)", {}},
      {"flushdb", Cmd::kFlushdb, -1, F{"write"}, 0, 0, 0, srv, "Removes all keys from the current database.",
       "1.0.0", "O(N)", {{"flush-type", "pure-token", "SYNC", true, false}}},
      {"flushall", Cmd::kFlushall, -1, F{"write"}, 0, 0, 0, srv, "Removes all keys from all databases.", "1.0.0",
       "O(N)", {{"flush-type", "pure-token", "SYNC", true, false}}},
      {"scan", Cmd::kScan, -2, F{"readonly"}, 0, 0, 0, gen, "Iterates over the key names in the database.", "2.8.0",
       "O(1) for every call. O(N) for a complete iteration.",
       {{"cursor", "integer", nullptr, false, false},
        {"pattern", "pattern", "MATCH", true, false},
        {"count", "integer", "COUNT", true, false},
        {"type", "string", "TYPE", true, false}}},
      {"select", Cmd::kSelect, 2, F{"loading", "fast"}, 0, 0, 0, conn, "Changes the selected database.", "1.0.0",
       "O(1)", {{"index", "integer", nullptr, false, false}}},
      {"info", Cmd::kInfo, -1, F{"loading"}, 0, 0, 0, srv, "Returns information and statistics about the server.",
       "1.0.0", "O(1)", {{"section", "string", nullptr, true, true}}},
      {"config", Cmd::kConfig, -2, F{"admin"}, 0, 0, 0, srv, "CONFIG GET pattern / CONFIG SET name value.", "2.0.0",
       "O(N)", {{"subcommand", "string", nullptr, false, false}, {"arg", "string", nullptr, true, true}}},
      {"client", Cmd::kClient, -2, F{"loading"}, 0, 0, 0, conn,
       "CLIENT ID / GETNAME / SETNAME / LIST / INFO / SETINFO.", "2.4.0", "O(1)",
       {{"subcommand", "string", nullptr, false, false}, {"arg", "string", nullptr, true, true}}},
      {"command", Cmd::kCommand, -1, F{"loading"}, 0, 0, 0, srv, "Returns detailed information about commands.",
       "2.8.13", "O(N)", {{"subcommand", "string", nullptr, true, false}, {"arg", "string", nullptr, true, true}}},
      {"hello", Cmd::kHello, -1, F{"fast", "no-auth"}, 0, 0, 0, conn, "Handshakes: chooses RESP2 or RESP3.", "6.0.0",
       "O(1)", {{"protover", "integer", nullptr, true, false}, {"clientname", "string", "SETNAME", true, false}}},
      {"quit", Cmd::kQuit, -1, F{"fast", "no-auth"}, 0, 0, 0, conn, "Closes the connection.", "1.0.0", "O(1)", {}},
  };
}

}  // namespace

const std::vector<CommandSpec>& all_commands() {
  static const std::vector<CommandSpec> table = build();
  return table;
}

const CommandSpec* find_command(std::string_view name) {
  if (name.size() > 16) return nullptr;
  char buf[16];
  for (std::size_t i = 0; i < name.size(); ++i) buf[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
  const std::string_view lname(buf, name.size());
  for (const CommandSpec& c : all_commands())
    if (lname == c.name) return &c;
  return nullptr;
}

void write_command_info(ReplyWriter& w, const CommandSpec& c) {
  w.array(10);
  w.bulk(c.name);
  w.integer(c.arity);
  w.set(c.flags.size());
  for (const char* f : c.flags) w.simple(f);
  w.integer(c.first_key);
  w.integer(c.last_key);
  w.integer(c.step);
  w.set(0);    // ACL categories
  w.array(0);  // tips
  w.array(0);  // key specifications
  w.array(0);  // subcommands
}

void write_command_docs(ReplyWriter& w, const CommandSpec& c) {
  w.map(5);
  w.bulk("summary");
  w.bulk(c.summary);
  w.bulk("since");
  w.bulk(c.since);
  w.bulk("group");
  w.bulk(c.group);
  w.bulk("complexity");
  w.bulk(c.complexity);
  w.bulk("arguments");
  w.array(c.args.size());
  for (const ArgDoc& a : c.args) {
    const std::size_t flags = (a.optional ? 1 : 0) + (a.multiple ? 1 : 0);
    w.map(2 + (a.token ? 1 : 0) + (flags ? 1 : 0));
    w.bulk("name");
    w.bulk(a.name);
    w.bulk("type");
    w.bulk(a.type);
    if (a.token) {
      w.bulk("token");
      w.bulk(a.token);
    }
    if (flags) {
      w.bulk("flags");
      w.array(flags);
      if (a.optional) w.simple("optional");
      if (a.multiple) w.simple("multiple");
    }
  }
}

}  // namespace duet::server
