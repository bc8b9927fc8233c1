// The procedure family: native procedures (docs/compute.md, "Procedures"; docs/server.md).
//
//   PROCEDURE LOAD path | LIST | DELETE library    admin: LOAD and DELETE only with
//                                                  `procedure-enable yes`, files only from
//                                                  inside `procedure-dir`
//   FCALL name numkeys key... arg...               on a txn database: the procedure in its own
//   FCALL_RO name numkeys key... arg...            transaction, re-run on write conflicts
//
// The procedures live in one ProcedureRegistry per process (a server process runs one server),
// created at the first PROCEDURE or FCALL with the settings the server started with. Handlers
// run on the client's thread: FCALL for as long as the procedure runs (a procedure flagged
// DUET_PROC_LONG on the procedure threads instead, its reply deferred), PROCEDURE DELETE until
// the calls in flight of the library have returned.
#include <atomic>
#include <climits>
#include <memory>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "duet/procedure.hpp"
#include "duet/txn.hpp"
#include "server/command.hpp"
#include "server/commands/replies.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/server.hpp"

namespace duet::server {

void register_procedure_commands(CommandTable& t);
bool txn_open_on(Session& s);  ///< commands/txn.cpp

namespace {

const char* const kGroup = "scripting";

std::string setting(Server& srv, std::string_view name) {
  for (auto& [k, v] : srv.config_get({name}))
    if (k == name) return v;
  return {};
}

/// The process's registry, opened at first use with the server's settings (null, with the
/// error written, when they are unusable). After the first use it is one atomic load: FCALL
/// takes no lock here.
ProcedureRegistry* registry(CommandContext& ctx) {
  static std::atomic<ProcedureRegistry*> ready{nullptr};
  if (ProcedureRegistry* r = ready.load(std::memory_order_acquire)) return r;
  static std::mutex m;
  static std::shared_ptr<ProcedureRegistry> reg;  // kept for the process
  std::lock_guard<std::mutex> lk(m);
  if (!reg) {
    ProcedureConfig c;
    c.max_attempts = static_cast<unsigned>(std::strtoul(setting(ctx.server, "procedure-max-attempts").c_str(), nullptr, 10));
    c.backoff_max_us =
        static_cast<std::uint32_t>(std::strtoul(setting(ctx.server, "procedure-backoff-max-us").c_str(), nullptr, 10));
    c.compute_device = setting(ctx.server, "procedure-compute-device");
    if (Status s = ProcedureRegistry::open(c, &reg); !s.ok()) {
      ctx.error("ERR " + s.message());
      return nullptr;
    }
    ready.store(reg.get(), std::memory_order_release);
  }
  return reg.get();
}

/// The file `name` names inside procedure-dir, or an error text. The name is taken relative to
/// the directory (an absolute path is refused), must not contain a ".." component, and its
/// real path (symbolic links resolved) must lie inside the directory's real path.
std::string resolve(const std::string& dir, std::string_view name, std::string* path) {
  if (dir.empty()) return "ERR no procedure-dir is configured: set it at startup to the directory of procedure libraries";
  if (name.empty() || name.find('\0') != std::string_view::npos) return "ERR procedure library path is empty or has a NUL byte";
  if (name.front() == '/') return "ERR procedure library path must be relative to procedure-dir";
  for (std::size_t at = 0; at <= name.size();) {
    const std::size_t slash = std::min(name.find('/', at), name.size());
    if (name.substr(at, slash - at) == "..") return "ERR procedure library path must not contain '..'";
    at = slash + 1;
  }
  char real_dir[PATH_MAX], real_file[PATH_MAX];
  if (!::realpath(dir.c_str(), real_dir)) return "ERR procedure-dir '" + dir + "' cannot be resolved";
  const std::string joined = std::string(real_dir) + "/" + std::string(name);
  if (!::realpath(joined.c_str(), real_file))
    return "ERR no procedure library '" + std::string(name.substr(0, 200)) + "' in procedure-dir";
  const std::string prefix = std::string(real_dir) + "/";
  if (std::string_view(real_file).substr(0, prefix.size()) != prefix)
    return "ERR procedure library '" + std::string(name.substr(0, 200)) + "' resolves outside procedure-dir";
  *path = real_file;
  return {};
}

// PROCEDURE LOAD path | LIST | DELETE library | HELP
void procedure(CommandContext& ctx) {
  const Args a = ctx.args;
  const std::string sub = ascii_lower(a[1]);
  if (sub == "help" && a.size() == 2) {
    static const char* const kHelp[] = {
        "PROCEDURE LOAD <path>", "    Loads a procedure library from procedure-dir (procedure-enable yes).",
        "PROCEDURE LIST", "    Lists the loaded procedures: name, library, flags, calls, retries, failures.",
        "PROCEDURE DELETE <library>", "    Unloads a library once its calls in flight have returned.",
        "FCALL <name> <numkeys> [key ...] [arg ...]", "    Runs a procedure in a transaction on a txn database."};
    ctx.out.array(std::size(kHelp));
    for (const char* l : kHelp) ctx.out.simple(l);
    return;
  }
  if (sub == "list" && a.size() == 2) {
    auto reg = registry(ctx);
    if (!reg) return;
    const auto procs = reg->list();
    ctx.out.array(procs.size());
    for (const auto& p : procs) {
      ctx.out.map(6);
      ctx.out.bulk("name");
      ctx.out.bulk(p.name);
      ctx.out.bulk("library");
      ctx.out.bulk(p.library);
      ctx.out.bulk("flags");
      ctx.out.array((p.read_only ? 1 : 0) + (p.runs_long ? 1 : 0));
      if (p.read_only) ctx.out.bulk("no-writes");
      if (p.runs_long) ctx.out.bulk("long");
      ctx.out.bulk("calls");
      ctx.out.integer(static_cast<long long>(p.calls));
      ctx.out.bulk("retries");
      ctx.out.integer(static_cast<long long>(p.retries));
      ctx.out.bulk("failures");
      ctx.out.integer(static_cast<long long>(p.failures));
    }
    return;
  }
  if ((sub == "load" || sub == "delete") && a.size() == 3) {
    if (setting(ctx.server, "procedure-enable") != "yes")
      return ctx.error(std::string("ERR PROCEDURE ") + (sub == "load" ? "LOAD" : "DELETE") +
                       " is disabled: start the server with procedure-enable yes");
    auto reg = registry(ctx);
    if (!reg) return;
    if (sub == "load") {
      std::string path;
      if (std::string e = resolve(setting(ctx.server, "procedure-dir"), a[2], &path); !e.empty()) return ctx.error(e);
      std::string lib;
      if (Status s = reg->load(path, &lib); !s.ok()) return ctx.error("ERR " + s.message());
      return ctx.out.bulk(lib);
    }
    if (Status s = reg->unload(a[2]); !s.ok()) return ctx.error("ERR " + s.message());
    return ctx.out.simple("OK");
  }
  if (sub == "load" || sub == "delete" || sub == "list" || sub == "help")
    return ctx.error("ERR wrong number of arguments for 'procedure|" + sub + "' command");
  ctx.error("ERR unknown subcommand '" + std::string(a[1].substr(0, 64)) + "'. Try PROCEDURE HELP.");
}

void write_reply(ReplyWriter& w, const ProcReply& r) {
  switch (r.kind) {
    case ProcReply::Kind::kNil: return w.null();
    case ProcReply::Kind::kInt: return w.integer(static_cast<long long>(r.i));
    case ProcReply::Kind::kBulk: return w.bulk(r.s);
    case ProcReply::Kind::kSimple: return w.simple(r.s);
    case ProcReply::Kind::kError: return w.error(r.s);
    case ProcReply::Kind::kArray:
      w.array(r.items.size());
      for (const auto& x : r.items) write_reply(w, x);
      return;
  }
}

/// Whether a call that returned s with *out answers an error.
bool answer_is_error(const Status& s, const CallOutcome& out) {
  return !s.ok() || out.end != CallOutcome::End::kCommitted || out.reply.kind == ProcReply::Kind::kError;
}

/// Writes the answer of a call that returned s with *out (an aborted call's error, or the
/// procedure's reply); returns answer_is_error(s, out).
bool write_answer(ReplyWriter& w, const Status& s, const CallOutcome& out) {
  if (!s.ok()) {
    if (s.code() == StatusCode::kNotFound) w.error("ERR Function not found: " + s.message());
    else w.error("ERR " + s.message());
  } else if (out.end != CallOutcome::End::kCommitted) {
    w.error(out.reply.s);  // aborted: nothing applied
  } else {
    write_reply(w, out.reply);
  }
  return answer_is_error(s, out);
}

void fcall_common(CommandContext& ctx, bool read_only) {
  const Args a = ctx.args;
  const char* cmd = read_only ? "fcall_ro" : "fcall";
  long long numkeys = 0;
  if (!parse_int64(a[2], &numkeys) || numkeys < 0)
    return ctx.error("ERR numkeys must be a non-negative integer");
  if (static_cast<unsigned long long>(numkeys) > a.size() - 3)
    return ctx.error(std::string("ERR Number of keys can't be greater than number of args (") + cmd + ")");
  if (txn_open_on(ctx.session))
    return ctx.error("ERR FCALL inside an open transaction (TXN BEGIN): COMMIT or ABORT it first");
  const std::size_t max_key = ctx.server.limits().max_key_bytes;
  for (long long i = 0; i < numkeys; ++i)
    if (a[3 + i].size() > max_key)
      return ctx.error("ERR key is too large: " + std::to_string(a[3 + i].size()) + " bytes, max-key-bytes is " +
                       std::to_string(max_key));
  std::string why;
  auto space = std::dynamic_pointer_cast<TxnSpace>(ctx.server.keyspace(ctx.session.db, &why));
  if (!space) return ctx.error("ERR the txn keyspace of this database cannot be opened: " + why);
  auto reg = registry(ctx);
  if (!reg) return;
  const std::size_t nkeys = static_cast<std::size_t>(numkeys);
  // A long procedure (DUET_PROC_LONG) runs on the procedure threads, so that this I/O thread's
  // other clients go on; its words are copied, since the request's buffer is reused.
  if (reg->runs_long(a[1]) && !ctx.server.draining()) {
    if (DeferredReply finish = ctx.defer()) {
      // name, numkeys, keys, args
      auto words = std::make_shared<std::vector<std::string>>(a.begin() + 1, a.end());
      auto task = [reg, space, words, nkeys, read_only, finish] {
        const std::vector<std::string_view> v(words->begin(), words->end());
        CallOutcome out;
        const Status s = reg->call(space, v[0], std::span(v).subspan(2, nkeys), std::span(v).subspan(2 + nkeys),
                                   read_only, &out);
        finish(answer_is_error(s, out), [&](ReplyWriter& w) { write_answer(w, s, out); });
      };
      if (!ctx.server.run_procedure(task)) task();  // the server is stopping: run it here
      return;
    }
  }
  const std::span<const std::string_view> keys(a.data() + 3, nkeys);
  const std::span<const std::string_view> args(a.data() + 3 + nkeys, a.size() - 3 - nkeys);
  CallOutcome out;
  const Status s = reg->call(space, a[1], keys, args, read_only, &out);
  ctx.reply.error = write_answer(ctx.out, s, out);
}

void fcall(CommandContext& ctx) { fcall_common(ctx, false); }
void fcall_ro(CommandContext& ctx) { fcall_common(ctx, true); }

}  // namespace

void register_procedure_commands(CommandTable& t) {
  const std::vector<ArgDoc> fargs = {{"function", "string", nullptr, false, false},
                                     {"numkeys", "integer", nullptr, false, false},
                                     {"key", "key", nullptr, true, true},
                                     {"arg", "string", nullptr, true, true}};
  t.add({.name = "procedure", .arity = -2, .flags = kKeyless | kAdmin | kNoScript, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kAnyKind, .group = kGroup,
         .summary = "Loads, lists or unloads native procedure libraries.", .since = "0.1.0",
         .complexity = "O(N) in the loaded procedures; DELETE waits for the library's calls in flight",
         .args = {{"subcommand", "string", nullptr, false, false}, {"argument", "string", nullptr, true, false}},
         .local = procedure});
  // Flags as Redis 7 reports them for FCALL and FCALL_RO (a test compares).
  constexpr std::uint32_t kFcallFlags = kKeyless | kNoScript | kStale | kSkipMonitor | kNoMandatoryKeys | kMovableKeys;
  t.add({.name = "fcall", .arity = -3, .flags = kFcallFlags, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kind_bit(KeyspaceKind::kTxn), .group = kGroup,
         .summary = "Runs a native procedure in a snapshot-isolation transaction, re-run on write conflicts.",
         .since = "0.1.0", .complexity = "Depends on the procedure", .args = fargs, .local = fcall});
  t.add({.name = "fcall_ro", .arity = -3, .flags = kReadOnly | kFcallFlags, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kind_bit(KeyspaceKind::kTxn), .group = kGroup,
         .summary = "Runs a read-only native procedure in a snapshot-isolation transaction.", .since = "0.1.0",
         .complexity = "Depends on the procedure", .args = fargs, .local = fcall_ro});
}

}  // namespace duet::server
