// The command table: every command the server knows, with the metadata COMMAND, COMMAND
// INFO and COMMAND DOCS report (redis-cli builds its hints from COMMAND DOCS).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "server/resp.hpp"

namespace duet::server {

/// Command identities. Key commands run on the shard that owns their key(s).
enum class Cmd : std::uint8_t {
  kPing, kEcho, kGet, kSet, kGetSet, kDel, kExists, kMget, kMset, kIncr, kDecr, kIncrBy, kDecrBy, kAppend,
  kStrlen, kType, kDbsize, kFlushdb, kFlushall, kScan, kSelect, kInfo, kConfig, kClient, kCommand, kHello,
  kQuit, kCount_
};

/// One argument as COMMAND DOCS describes it.
struct ArgDoc {
  const char* name;
  const char* type;   ///< key, string, integer, pattern, pure-token, ...
  const char* token;  ///< the literal word for pure tokens and named options, or null
  bool optional;
  bool multiple;
};

/// A command's metadata. Arity follows Redis: N exactly N words (with the name), -N at least N.
struct CommandSpec {
  const char* name;  ///< lower case
  Cmd cmd;
  int arity;
  std::vector<const char*> flags;  ///< write, readonly, fast, ...
  int first_key, last_key, step;
  const char* group;
  const char* summary;
  const char* since;
  const char* complexity;
  std::vector<ArgDoc> args;
};

/// The command named `name` (any case), or null.
const CommandSpec* find_command(std::string_view name);
/// Every command, in table order.
const std::vector<CommandSpec>& all_commands();
/// Whether an argument count (with the name) fits the arity.
inline bool arity_ok(const CommandSpec& c, std::size_t argc) {
  return c.arity >= 0 ? argc == static_cast<std::size_t>(c.arity) : argc >= static_cast<std::size_t>(-c.arity);
}
/// Writes COMMAND INFO's 10-element entry for c.
void write_command_info(ReplyWriter& w, const CommandSpec& c);
/// Writes COMMAND DOCS's value for c (a map: summary, since, group, complexity, arguments).
void write_command_docs(ReplyWriter& w, const CommandSpec& c);

}  // namespace duet::server
