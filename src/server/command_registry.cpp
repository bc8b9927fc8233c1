// The registry: the families' commands in one table, lookup by name, the consistency check,
// and COMMAND INFO / COMMAND DOCS rendering.
#include <cctype>
#include <string>
#include <unordered_map>

#include "server/command.hpp"
#include "server/key_batch.hpp"

namespace duet::server {

void register_batch_commands(CommandTable& t);  ///< commands/batch.cpp
void register_txn_commands(CommandTable& t);    ///< commands/txn.cpp
void register_procedure_commands(CommandTable& t);  ///< commands/procedure.cpp

namespace {

/// ASCII lower case without the C library's locale lookup (command names are ASCII).
/// (c - 'A' as unsigned is below 26 exactly for 'A'..'Z': a byte below 'A' wraps to a large value.)
inline unsigned char lower(unsigned char c) {
  return static_cast<unsigned char>(c + ((static_cast<unsigned>(c - 'A') < 26u) << 5));
}

/// Command names by name, lowered: open addressing over a power-of-two table at most a quarter
/// full, keyed by FNV-1a of the lowered bytes, so that a lookup lowers and hashes the name in
/// one pass and usually compares one entry (find_command runs for every request).
class NameTable {
 public:
  static constexpr std::size_t kMaxName = 32;
  void build(const std::vector<CommandDef>& defs) {
    std::size_t size = 64;
    while (size < 4 * defs.size()) size *= 2;
    slots_.assign(size, nullptr);
    for (const CommandDef& d : defs) {
      const std::string_view name(d.name);
      if (name.size() > kMaxName) continue;  // check_registry reports it
      std::size_t i = hash(name) & (size - 1);
      while (slots_[i]) i = (i + 1) & (size - 1);
      slots_[i] = &d;
    }
  }
  /// The command named `name` in any case, or null.
  const CommandDef* find(std::string_view name) const {
    if (name.size() > kMaxName || slots_.empty()) return nullptr;
    char low[kMaxName];
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < name.size(); ++i) {
      low[i] = static_cast<char>(lower(static_cast<unsigned char>(name[i])));
      h = (h ^ static_cast<unsigned char>(low[i])) * 0x100000001b3ull;
    }
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      const CommandDef* d = slots_[i];
      if (!d) return nullptr;
      if (std::string_view(d->name) == std::string_view(low, name.size())) return d;
    }
  }

 private:
  static std::uint64_t hash(std::string_view lowered) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : lowered) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
  }
  std::vector<const CommandDef*> slots_;
};

struct Registry {
  std::vector<CommandDef> defs;
  NameTable by_name;
};

const Registry& registry() {
  static const Registry r = [] {
    Registry out;
    CommandTable t;
    // The families, one file each under commands/. A new family is added here, once.
    register_connection_commands(t);
    register_string_commands(t);
    register_generic_commands(t);
    register_server_commands(t);
    register_batch_commands(t);
    register_txn_commands(t);
    register_procedure_commands(t);
    out.defs = std::move(t.defs());
    for (std::size_t i = 0; i < out.defs.size(); ++i) out.defs[i].id = static_cast<unsigned>(i);
    out.by_name.build(out.defs);
    return out;
  }();
  return r;
}

/// Redis's COMMAND INFO flags, in Redis's order, with the bit that carries each.
struct ReportedFlag {
  std::uint32_t bit;
  const char* name;
};
constexpr ReportedFlag kReported[] = {
    {kWrite, "write"},   {kReadOnly, "readonly"}, {kDenyOom, "denyoom"},     {kAdmin, "admin"},
    {kNoScript, "noscript"}, {kLoading, "loading"}, {kStale, "stale"},       {kSkipSlowlog, "skip_slowlog"},
    {kFast, "fast"},
    {kNoAuth, "no_auth"}, {kAllowBusy, "allow_busy"},
    {kSkipMonitor, "skip_monitor"}, {kNoMandatoryKeys, "no_mandatory_keys"}, {kMovableKeys, "movablekeys"},
};

}  // namespace

void CommandTable::add(CommandDef def) { defs_.push_back(std::move(def)); }

void CommandContext::error(std::string_view msg) {
  std::string* b = out.buffer();
  b->clear();
  out.error(msg);
  reply.error = true;
}

const std::vector<CommandDef>& all_commands() { return registry().defs; }

const CommandDef* find_command(std::string_view name) { return registry().by_name.find(name); }

std::string check_registry(const std::vector<CommandDef>& defs) {
  std::string problems;
  auto bad = [&](const CommandDef& d, const std::string& what) { problems += std::string(d.name) + ": " + what + "\n"; };
  std::unordered_map<std::string_view, int> seen;
  for (const CommandDef& d : defs) {
    const std::string_view name(d.name);
    if (name.empty()) bad(d, "empty name");
    for (char ch : name)
      if (std::tolower(static_cast<unsigned char>(ch)) != ch) bad(d, "name is not lower case");
    if (++seen[name] > 1) bad(d, "registered twice");
    if (d.arity == 0) bad(d, "arity 0 (must count the name)");
    if (!d.summary || !d.since || !d.group || !d.complexity) bad(d, "documentation missing");
    const bool keyed = d.is_key_command();
    if (keyed) {
      if (!d.key.apply) bad(d, "key command without KeyCommand::apply");
      if (d.local) bad(d, "key command with a keyless handler");
      if (d.step < 1) bad(d, "key command with step < 1");
      if ((d.last_key < 0) != d.has(kMultiKey)) bad(d, "multi-key flag disagrees with last_key");
      if (d.has(kOverwrite) != (d.key.blind != nullptr)) bad(d, "overwrite flag disagrees with KeyCommand::blind");
      if (d.key.blind && !d.key.blind_reply) bad(d, "blind ops without a blind_reply");
      if (d.has(kReadOnly) == d.has(kWrite)) bad(d, "a key command is exactly one of readonly and write");
      if (d.kinds == kAnyKind || d.kinds == 0) bad(d, "a key command names the keyspace kinds it runs on");
    } else {
      if (!d.has(kKeyless)) bad(d, "no key positions and no keyless flag");
      if (!d.local) bad(d, "keyless command without a handler");
      if (d.key.apply) bad(d, "keyless command with a key handler");
      if (d.has(kOverwrite) || d.has(kMultiKey)) bad(d, "keyless command with key flags");
      if (d.first_key > 0 && d.step < 1) bad(d, "reported key positions with step < 1");
    }
  }
  return problems;
}

std::vector<const char*> reported_flags(const CommandDef& c) {
  std::vector<const char*> out;
  if (c.has(kContainer)) return out;  // as Redis: the subcommands carry the flags
  for (const ReportedFlag& f : kReported)
    if (c.has(f.bit)) out.push_back(f.name);
  return out;
}

std::size_t last_key_index(const CommandDef& c, std::size_t argc) {
  return c.last_key < 0 ? argc - static_cast<std::size_t>(-c.last_key) : static_cast<std::size_t>(c.last_key);
}

std::string oversized_key_error(const CommandDef& c, Args args, std::size_t max_key) {
  if (c.first_key <= 0) return {};
  const std::size_t last = last_key_index(c, args.size()), step = static_cast<std::size_t>(c.step);
  for (std::size_t i = static_cast<std::size_t>(c.first_key); i <= last && i < args.size(); i += step)
    if (args[i].size() > max_key)
      return "ERR key of " + std::to_string(args[i].size()) + " bytes is over max-key-bytes (" +
             std::to_string(max_key) + ")";
  return {};
}

std::string oversized_pair_value_error(const CommandDef& c, Args args, std::size_t max_value) {
  if (c.first_key <= 0 || c.step != 2) return {};
  const std::size_t last = last_key_index(c, args.size());
  for (std::size_t i = static_cast<std::size_t>(c.first_key); i <= last && i + 1 < args.size(); i += 2)
    if (args[i + 1].size() > max_value)
      return "ERR value of " + std::to_string(args[i + 1].size()) + " bytes is over max-value-bytes (" +
             std::to_string(max_value) + ")";
  return {};
}

std::string kind_error(const CommandDef& c, unsigned db, KeyspaceKind kind) {
  if (c.kinds & kind_bit(kind)) return {};
  return "ERR '" + std::string(c.name) + "' is not supported by database " + std::to_string(db) +
         ", whose keyspace kind is '" + keyspace_kind_name(kind) + "'";
}

void write_command_info(ReplyWriter& w, const CommandDef& c) {
  const auto flags = reported_flags(c);
  w.array(10);
  w.bulk(c.name);
  w.integer(c.arity);
  w.set(flags.size());
  for (const char* f : flags) w.simple(f);
  w.integer(c.first_key);
  w.integer(c.last_key);
  w.integer(c.step);
  w.set(0);    // ACL categories
  w.array(0);  // tips
  w.array(0);  // key specifications
  w.array(0);  // subcommands
}

void write_command_docs(ReplyWriter& w, const CommandDef& c) {
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
