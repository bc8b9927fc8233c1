// The command registry: every command the server knows is one CommandDef (name, arity, flags,
// key positions, the keyspace kinds it works on, its documentation and its handler), registered
// by the family file that implements it (commands/*.cpp). Dispatch, routing, the per-key batch
// runner, COMMAND (INFO, DOCS, COUNT, LIST) and the metrics all read this one table.
//
// Adding a command: add one entry to the family file it belongs to (see docs/architecture.md
// for a worked example). A family is registered once, in command_registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "duet/store.hpp"
#include "server/resp.hpp"

namespace duet::server {

class Server;
struct Session;
struct KeyOp;
struct PendingReply;

/// What a command is, as dispatch and COMMAND INFO need it. A bit set of these.
enum CommandFlag : std::uint32_t {
  // Behaviour (Duet's own).
  kReadOnly = 1u << 0,   ///< reads data only; a key command may run on the client's thread
  kWrite = 1u << 1,      ///< may change data
  kAdmin = 1u << 2,      ///< changes or reveals server settings
  kBarrier = 1u << 3,    ///< waits until the client's earlier commands have replied
  /// Runs at once on the client's thread (no key to route by). Key positions, when such a
  /// command has them (WATCH), are reported by COMMAND INFO only.
  kKeyless = 1u << 4,
  kOverwrite = 1u << 5,  ///< may overwrite a key without reading it first (KeyCommand::blind says when)
  kMultiKey = 1u << 6,   ///< takes several keys (one reply part per key)
  // Reported to clients only (Redis's COMMAND INFO flags).
  kFast = 1u << 8,
  kDenyOom = 1u << 9,
  kLoading = 1u << 10,
  kStale = 1u << 11,
  kNoScript = 1u << 12,
  kNoAuth = 1u << 13,
  kAllowBusy = 1u << 14,
  /// A container of subcommands (CONFIG, CLIENT): as in Redis, its flags belong to the
  /// subcommands, so COMMAND INFO reports none for it.
  kContainer = 1u << 15,
  kSkipSlowlog = 1u << 16,
  kSkipMonitor = 1u << 17,
  kNoMandatoryKeys = 1u << 18,  ///< may take no key (FCALL with numkeys 0)
  kMovableKeys = 1u << 19,      ///< key positions depend on the arguments (FCALL's numkeys)
};

/// Keyspace kinds as a bit set (bit = 1 << KeyspaceKind).
using KindSet = std::uint32_t;
constexpr KindSet kind_bit(KeyspaceKind k) { return KindSet{1} << static_cast<unsigned>(k); }
constexpr KindSet kAnyKind = ~KindSet{0};
/// The kinds whose databases map keys to string values and run the string and generic key
/// commands: kv, and txn (where each command is a transaction: commands/txn.cpp).
constexpr KindSet kStringKinds = kind_bit(KeyspaceKind::kKv) | kind_bit(KeyspaceKind::kTxn);

/// One argument as COMMAND DOCS describes it.
struct ArgDoc {
  const char* name;
  const char* type;   ///< key, string, integer, pattern, pure-token, ...
  const char* token;  ///< the literal word for pure tokens and named options, or null
  bool optional;
  bool multiple;
};

/// Arguments of one request; args[0] is the command name.
using Args = std::span<const std::string_view>;

/// The state of one key while a batch computes its commands (see key_batch.hpp).
struct KeyState {
  bool exists = false;
  std::string value;
};

/// Limits a key command's apply() must respect.
struct KeyEnv {
  std::size_t max_value_bytes = 0;
};

/// How the per-key replies of a command on several keys become one reply.
enum class MultiReply : std::uint8_t {
  kArray,  ///< an array of the parts (MGET)
  kSum,    ///< the sum of the integer parts (DEL, EXISTS)
  kAllOk,  ///< +OK (MSET)
};

/// The handler of a command on keys. The server routes each key to the thread that owns it;
/// that thread runs the key's commands of a batch in arrival order through apply().
struct KeyCommand {
  /// Checks the arguments that are not keys and fills `proto` (value, delta, SET options),
  /// which every key's op copies. Returns an error reply text without the leading '-' (e.g.
  /// "ERR syntax error"), or empty when the request is good. Null: nothing to check.
  std::string (*parse)(Args args, KeyOp* proto) = nullptr;
  /// Computes the command on one key: updates `key` (the state left by the earlier commands of
  /// the batch) and writes the RESP reply into *reply. Returns true when it changed the key.
  bool (*apply)(KeyState& key, const KeyOp& op, std::string* reply, const KeyEnv& env) = nullptr;
  /// Whether this op overwrites its key without reading it (needs kOverwrite); null: never.
  /// Such an op is computed after the engine's write, which returns the previous value.
  bool (*blind)(const KeyOp& op) = nullptr;
  /// For a blind op: whether its reply needs the previous value (GETSET, SET ... GET).
  bool (*needs_previous)(const KeyOp& op) = nullptr;
  /// For a blind op: its reply, given whether the key existed and its previous value (only
  /// valid when needs_previous said so).
  void (*blind_reply)(const KeyOp& op, bool found, const std::string& previous, std::string* reply) = nullptr;
  /// For kMultiKey commands: how the parts combine; `always` makes one key still use it (MGET
  /// answers an array even for one key).
  MultiReply multi = MultiReply::kArray;
  bool multi_always = false;
};

/// Finishes a deferred reply (CommandContext::defer) from any thread, exactly once: `write` gets
/// a writer in the client's protocol; `error` marks the reply an error for the metrics. The
/// reply then goes out in its place in the connection's order.
using DeferredReply = std::function<void(bool error, const std::function<void(ReplyWriter&)>& write)>;

/// What a keyless command's handler gets: the server, the client's session, the arguments and
/// the reply under construction.
struct CommandContext {
  Server& server;
  Session& session;
  Args args;
  ReplyWriter& out;
  PendingReply& reply;
  /// Replaces the reply with an error (msg starts with its code, e.g. "ERR ...").
  void error(std::string_view msg);
  /// For a reply that another thread finishes later (BATCH.CALL, as with Redis's blocking
  /// commands): the handler returns without a reply and the returned function finishes it. Only
  /// this client waits: the connection's later commands still run, their replies queue behind
  /// this one. Null where the caller cannot wait (then the handler must reply at once).
  DeferredReply defer() { return deferrer ? deferrer(*this, deferrer_arg) : nullptr; }
  DeferredReply (*deferrer)(CommandContext&, void*) = nullptr;  ///< set by the I/O thread
  void* deferrer_arg = nullptr;
  bool deferred = false;  ///< defer() was called: the reply is not final when the handler returns
};

/// The handler of a keyless command: writes the reply through ctx.out (or ctx.error).
using LocalHandler = void (*)(CommandContext& ctx);

/// One command.
struct CommandDef {
  const char* name;     ///< lower case
  int arity;            ///< Redis's: N exactly N words (with the name), -N at least N
  std::uint32_t flags;  ///< CommandFlag bits
  int first_key, last_key, step;  ///< key positions as COMMAND INFO reports them (0: none)
  /// The keyspace kinds whose databases run it (key and keyspace commands); kAnyKind for
  /// commands that do not touch a database.
  KindSet kinds;
  const char* group;
  const char* summary;
  const char* since;
  const char* complexity;
  std::vector<ArgDoc> args = {};
  LocalHandler local = nullptr;  ///< keyless commands
  KeyCommand key = {};           ///< key commands (first_key > 0)
  unsigned id = 0;               ///< position in the registry (set when registered)

  bool has(std::uint32_t f) const { return (flags & f) != 0; }
  /// Whether dispatch routes it by its keys (KeyCommand); a kKeyless command never is.
  bool is_key_command() const { return first_key > 0 && !has(kKeyless); }
};

/// The registry under construction; each family adds its commands.
class CommandTable {
 public:
  void add(CommandDef def);
  std::vector<CommandDef>& defs() { return defs_; }

 private:
  std::vector<CommandDef> defs_;
};

// The families (one file each under commands/). Each adds its commands to the table.
void register_string_commands(CommandTable& t);      ///< commands/strings.cpp
void register_generic_commands(CommandTable& t);     ///< commands/generic.cpp: keys and databases
void register_connection_commands(CommandTable& t);  ///< commands/connection.cpp
void register_server_commands(CommandTable& t);      ///< commands/server_admin.cpp

/// Runs key command `def` (ctx.args) on a txn database: inside the connection's open
/// transaction (TXN BEGIN), or as its own transaction, retried on write conflicts. The same
/// per-key semantics as on kv databases (the family's KeyCommand::apply). commands/txn.cpp.
void run_txn_key_command(CommandContext& ctx, const CommandDef& def);

/// Every command, in registration order (built once, on first use; thread-safe).
const std::vector<CommandDef>& all_commands();
/// The command named `name` (any case), or null. O(1) average.
const CommandDef* find_command(std::string_view name);
/// Whether an argument count (with the name) fits the arity.
inline bool arity_ok(const CommandDef& c, std::size_t argc) {
  return c.arity >= 0 ? argc == static_cast<std::size_t>(c.arity) : argc >= static_cast<std::size_t>(-c.arity);
}
/// Checks the registry's own consistency: empty when good, else what is wrong (each command
/// has exactly the handler its kind needs, key commands have key positions, names are
/// unique and lower case, flags agree with the handler). Run by the tests.
std::string check_registry(const std::vector<CommandDef>& defs);
/// The flag names COMMAND INFO reports for c (Redis's spelling and order).
std::vector<const char*> reported_flags(const CommandDef& c);
/// Writes COMMAND INFO's 10-element entry for c.
void write_command_info(ReplyWriter& w, const CommandDef& c);
/// Writes COMMAND DOCS's value for c (a map: summary, since, group, complexity, arguments).
void write_command_docs(ReplyWriter& w, const CommandDef& c);
/// The index of c's last key argument in a request of argc words (COMMAND INFO's last_key; a
/// negative one counts from the end).
std::size_t last_key_index(const CommandDef& c, std::size_t argc);
/// The error text (without the leading '-') for the first key argument of `args`, at c's key
/// positions, that is longer than max_key bytes; empty when none is.
std::string oversized_key_error(const CommandDef& c, Args args, std::size_t max_key);
/// For a command of key-value pairs (step 2: MSET), the error text for the first value that is
/// longer than max_value bytes; empty when none is or c is not such a command. Checked before
/// any key is touched, so such a command changes nothing.
std::string oversized_pair_value_error(const CommandDef& c, Args args, std::size_t max_value);
/// The error reply for a command on a database whose kind does not run it, or empty when it
/// does. E.g. "ERR 'get' is not supported by database 3, whose keyspace kind is 'txn'".
std::string kind_error(const CommandDef& c, unsigned db, KeyspaceKind kind);

}  // namespace duet::server
