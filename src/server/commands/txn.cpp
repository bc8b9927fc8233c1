// The txn family: SnapKV's snapshot-isolation transactions on a `txn` database (docs/txn.md).
//
//   plain key commands (GET, SET, DEL, EXISTS, INCR family, MGET, MSET, APPEND, ...)
//       each its own transaction, retried on a write conflict; inside TXN BEGIN .. COMMIT they
//       read at the transaction's snapshot and buffer their writes
//   TXN BEGIN | COMMIT | ABORT          interactive transactions bound to the connection
//   MULTI, EXEC, DISCARD, WATCH, UNWATCH  Redis's semantics, built on SI
//   RANGE start end [LIMIT n]           key-value pairs in ZRANGEBYLEX-style bounds
//   SNAPSHOT KEY k | RANGE start end [LIMIT n] ...   SnapKV's SNAPSHOT: keys, values, offsets
//
// Every handler runs on the client's thread: the txn keyspace is thread-safe and a command
// costs microseconds. A connection's transaction state (TxnSession) lives in its session: a
// disconnect destroys it, which aborts an open transaction; one idle past `txn-idle-timeout`
// is aborted by its I/O thread's sweep (ten times a second).
#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "duet/txn.hpp"
#include "server/command.hpp"
#include "server/commands/replies.hpp"
#include "server/connection.hpp"
#include "server/key_batch.hpp"
#include "server/server.hpp"
#include "server/stats.hpp"

namespace duet::server {

void register_txn_commands(CommandTable& t);
void append_txn_info(const ServerStats& s, std::string* out);

namespace {

const char* const kGroup = "transactions";
constexpr KindSet kTxnKind = kind_bit(KeyspaceKind::kTxn);
/// Attempts of a command or EXEC that runs as its own transaction before it gives up with
/// -ABORT (each attempt after a conflict starts a new snapshot, after a short backoff).
constexpr int kAttempts = 64;

/// A connection's state on txn databases.
class TxnSession final : public SessionExtension {
 public:
  Txn txn;                     ///< TXN BEGIN's transaction (inactive when none is open)
  unsigned txn_db = 0;         ///< the database it was begun on
  std::uint64_t last_ns = 0;   ///< its last command (for the idle timeout)
  /// Why the connection's transaction ended without the client ending it (idle timeout,
  /// snapshot too old); while set, key commands answer -ABORT until TXN ABORT, COMMIT or BEGIN.
  std::string doomed;
  bool in_multi = false;       ///< between MULTI and EXEC or DISCARD
  bool multi_failed = false;   ///< a command was refused while queueing: EXEC answers EXECABORT
  std::vector<std::vector<std::string>> queue;  ///< MULTI's queued commands
  std::map<std::string, std::uint64_t, std::less<>> watched;  ///< WATCHed key -> timestamp
  unsigned watch_db = 0;
  Txn* exec_txn = nullptr;     ///< EXEC's transaction while it runs a queued keyless command

  bool intercept(CommandContext& ctx, const CommandDef* def, std::string_view error) override;
  void expire(Server& srv, std::uint64_t now) override {
    const std::uint64_t limit_ms = srv.txn_idle_timeout_ms();
    if (!txn.active() || limit_ms == 0 || now - last_ns < limit_ms * 1000000) return;
    txn.abort();
    doomed = "the transaction was idle for more than " + std::to_string(limit_ms) +
             " ms (txn-idle-timeout) and was aborted; end it with TXN ABORT";
  }
  void clear_multi() {
    in_multi = multi_failed = false;
    queue.clear();
    watched.clear();
  }
};

TxnSession& session_of(Session& s) {
  if (auto* t = dynamic_cast<TxnSession*>(s.extension.get())) return *t;
  s.extension = std::make_unique<TxnSession>();
  return static_cast<TxnSession&>(*s.extension);
}

std::shared_ptr<TxnSpace> space_of(CommandContext& ctx) {
  std::string why;
  auto s = std::dynamic_pointer_cast<TxnSpace>(ctx.server.keyspace(ctx.session.db, &why));
  if (!s) ctx.error("ERR the txn keyspace of this database cannot be opened: " + why);
  return s;
}

/// The -ABORT error reply (a transaction that ended without committing).
std::string abort_reply(std::string_view why) {
  std::string r;
  ReplyWriter(&r, 2).error("ABORT " + std::string(why));
  return r;
}

/// The -ABORT reply of a commit that did not commit.
std::string commit_failure(const CommitResult& r) {
  if (r.outcome == TxnOutcome::kSnapshotTooOld)
    return abort_reply("snapshot too old: the transaction was aborted to bound memory");
  return abort_reply("conflict on key '" + r.conflict_key.substr(0, 128) +
                     "': a newer version committed first; the transaction was aborted, retry it");
}

/// How running one command inside a transaction ended.
enum class Ran {
  kOk,       ///< the reply is the command's (possibly an error reply, as INCR on text gives)
  kRefused,  ///< bad input (oversized key or value): an error reply; the transaction is intact
  kLost,     ///< the transaction ended (snapshot too old): the reply is -ABORT
};

/// Runs key command `def` with `args` inside `t`: reads each key at the snapshot (overlaid by
/// t's writes), computes the command with its family's apply (the same code as the kv
/// keyspace's), buffers what it changed. The reply goes to *reply (appended).
Ran run_key_command(Txn& t, const CommandDef& def, Args args, int proto, std::size_t max_key,
                    std::size_t max_value, std::string* reply) {
  const std::size_t first = static_cast<std::size_t>(def.first_key);
  const std::size_t last = last_key_index(def, args.size());
  const std::size_t step = static_cast<std::size_t>(def.step);
  if (std::string e = oversized_key_error(def, args, max_key); !e.empty()) {
    *reply += '-' + e + "\r\n";
    return Ran::kRefused;
  }
  KeyOp proto_op;
  if (def.key.parse) {
    const std::string e = def.key.parse(args, &proto_op);
    if (!e.empty()) {
      *reply += '-' + e + "\r\n";
      return Ran::kRefused;
    }
  }
  proto_op.resp3 = proto >= 3;
  const KeyEnv env{max_value};
  const std::size_t n = (std::min(last, args.size() - 1) - first) / step + 1;
  const bool combined = def.has(kMultiKey) && (n > 1 || def.key.multi_always);
  std::vector<std::string> parts(n);
  KeyState st;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t pos = first + k * step;
    KeyOp op = proto_op;
    if (step == 2) op.value.assign(args[pos + 1]);
    bool found = false;
    Status s = t.get(args[pos], &st.value, &found);
    if (!s.ok()) {
      if (!t.active()) {
        *reply += abort_reply(s.message());
        return Ran::kLost;
      }
      *reply += "-ERR " + s.message() + "\r\n";
      return Ran::kRefused;
    }
    st.exists = found;
    if (def.key.apply(st, op, &parts[k], env)) {
      s = st.exists ? t.put(args[pos], st.value) : t.del(args[pos]);
      if (!s.ok()) {  // an oversized value: what the command buffered before stays buffered
        *reply += "-ERR " + s.message() + "\r\n";
        return Ran::kRefused;
      }
    }
  }
  if (!combined) {
    *reply += parts[0];
    return Ran::kOk;
  }
  switch (def.key.multi) {
    case MultiReply::kArray:
      *reply += '*' + std::to_string(n) + "\r\n";
      for (const auto& p : parts) *reply += p;
      break;
    case MultiReply::kSum: {
      long long sum = 0;
      for (const auto& p : parts) sum += std::strtoll(p.c_str() + 1, nullptr, 10);  // ":N\r\n"
      put_int(reply, sum);
      break;
    }
    case MultiReply::kAllOk: *reply += kOkReply; break;
  }
  return Ran::kOk;
}

void backoff(int attempt) {
  if (attempt < 4) std::this_thread::yield();
  else std::this_thread::sleep_for(std::chrono::microseconds(1 << std::min(attempt, 10)));
}

/// Commands MULTI may queue on a txn database besides key commands.
bool queueable(const CommandDef& def) {
  static const std::string_view kOk[] = {"range", "snapshot", "ping", "echo"};
  if (def.is_key_command()) return true;
  for (auto n : kOk)
    if (n == def.name) return true;
  return false;
}

bool TxnSession::intercept(CommandContext& ctx, const CommandDef* def, std::string_view error) {
  if (!in_multi) return false;
  if (def != nullptr && (def->name == std::string_view("exec") || def->name == std::string_view("discard")))
    return false;  // run by their handlers
  if (def != nullptr && def->name == std::string_view("multi")) {
    ctx.error("ERR MULTI calls can not be nested");
    return true;
  }
  if (def != nullptr && def->name == std::string_view("watch")) {
    ctx.error("ERR WATCH inside MULTI is not allowed");
    return true;
  }
  if (!error.empty()) {
    multi_failed = true;
    ctx.error(error);
    return true;
  }
  if (!queueable(*def)) {
    multi_failed = true;
    ctx.error("ERR '" + std::string(def->name) + "' cannot be queued by MULTI on a txn database");
    return true;
  }
  queue.emplace_back(ctx.args.begin(), ctx.args.end());
  ctx.out.simple("QUEUED");
  return true;
}

std::size_t max_key_of(CommandContext& ctx) { return ctx.server.limits().max_key_bytes; }
std::size_t max_value_of(CommandContext& ctx) { return ctx.server.limits().max_value_bytes; }

// ---- RANGE start end [LIMIT n] and SNAPSHOT's range bounds ----

/// Parses a ZRANGEBYLEX-style bound: "-", "+", "[key" (inclusive) or "(key" (exclusive).
bool parse_bound(std::string_view b, bool is_start, TxnRange* r) {
  std::string& key = is_start ? r->start : r->end;
  bool& incl = is_start ? r->start_inclusive : r->end_inclusive;
  bool& unb = is_start ? r->start_unbounded : r->end_unbounded;
  if (b == "-" || b == "+") {
    if ((b == "-") != is_start) return false;  // "+" as a start or "-" as an end matches nothing: refuse
    unb = true;
    return true;
  }
  if (b.empty() || (b[0] != '[' && b[0] != '(')) return false;
  incl = b[0] == '[';
  key.assign(b.substr(1));
  return true;
}

/// Parses `start end` at args[i], i+1 and an optional `LIMIT n` after; *next is the first
/// argument after them. Writes the error and returns false on bad input.
bool parse_range(CommandContext& ctx, std::size_t i, TxnRange* r, std::size_t* limit, std::size_t* next) {
  *r = TxnRange{};
  if (i + 1 >= ctx.args.size()) {
    ctx.error("ERR syntax error: a range needs a start and an end");
    return false;
  }
  if (!parse_bound(ctx.args[i], true, r) || !parse_bound(ctx.args[i + 1], false, r)) {
    ctx.error("ERR min or max not valid string range item: use -, +, [key or (key");
    return false;
  }
  *limit = 0;
  *next = i + 2;
  if (*next < ctx.args.size() && iequals(ctx.args[*next], "limit")) {
    long long n = 0;
    if (*next + 1 >= ctx.args.size() || !parse_int64(ctx.args[*next + 1], &n) || n < 0) {
      ctx.error("ERR LIMIT takes a non-negative integer");
      return false;
    }
    *limit = static_cast<std::size_t>(n);
    *next += 2;
  }
  return true;
}

/// Runs `body(txn)` in EXEC's transaction, the connection's open one, or its own read
/// transaction; writes an error reply instead when none can be had.
template <class Body>
void with_read_txn(CommandContext& ctx, Body&& body) {
  TxnSession& ts = session_of(ctx.session);
  if (ts.exec_txn != nullptr) return body(*ts.exec_txn);
  if (!ts.doomed.empty()) return ctx.error("ABORT " + ts.doomed);
  if (ts.txn.active()) {
    if (ts.txn_db != ctx.session.db)
      return ctx.error("ERR the open transaction belongs to database " + std::to_string(ts.txn_db));
    ts.last_ns = now_ns();
    return body(ts.txn);
  }
  auto space = space_of(ctx);
  if (!space) return;
  Txn t;
  if (Status s = space->begin(&t); !s.ok()) return ctx.error("ERR " + s.message());
  body(t);
  t.abort();
}

void write_pairs(ReplyWriter& w, const std::vector<std::pair<std::string, std::string>>& kv) {
  w.array(kv.size() * 2);
  for (const auto& [k, v] : kv) {
    w.bulk(k);
    w.bulk(v);
  }
}

void range(CommandContext& ctx) {
  TxnRange r;
  std::size_t limit = 0, next = 0;
  if (!parse_range(ctx, 1, &r, &limit, &next)) return;
  if (next != ctx.args.size()) return ctx.error("ERR syntax error");
  with_read_txn(ctx, [&](Txn& t) {
    std::vector<std::pair<std::string, std::string>> kv;
    const Status s = t.scan(r, limit, &kv);
    if (!s.ok()) return ctx.error((t.active() ? "ERR " : "ABORT ") + s.message());
    write_pairs(ctx.out, kv);
  });
}

// SNAPSHOT KEY k | RANGE start end [LIMIT n] ... -> [keys, values, offsets, resume]:
// keys and values are arrays over the slots (an absent point's value is null), offsets has
// one entry per argument plus one (argument j filled slots offsets[j] .. offsets[j+1]), and
// resume has one entry per argument: null, or the exclusive bound to continue a range its
// LIMIT cut ("(key").
void snapshot(CommandContext& ctx) {
  std::vector<SnapshotArg> sargs;
  for (std::size_t i = 1; i < ctx.args.size();) {
    if (iequals(ctx.args[i], "key") && i + 1 < ctx.args.size()) {
      sargs.push_back(SnapshotArg::point(std::string(ctx.args[i + 1])));
      i += 2;
    } else if (iequals(ctx.args[i], "range")) {
      TxnRange r;
      std::size_t limit = 0, next = 0;
      if (!parse_range(ctx, i + 1, &r, &limit, &next)) return;
      sargs.push_back(SnapshotArg::of(std::move(r), limit));
      i = next;
    } else {
      return ctx.error("ERR syntax error: SNAPSHOT takes KEY key and RANGE start end [LIMIT n] arguments");
    }
  }
  with_read_txn(ctx, [&](Txn& t) {
    TxnSnapshot snap;
    const Status s = t.snapshot(sargs, &snap);
    if (!s.ok()) return ctx.error((t.active() ? "ERR " : "ABORT ") + s.message());
    ReplyWriter& w = ctx.out;
    w.array(4);
    w.array(snap.size());
    for (std::size_t i = 0; i < snap.size(); ++i) w.bulk(snap.key(i));
    w.array(snap.size());
    for (std::size_t i = 0; i < snap.size(); ++i)
      if (snap.present[i]) w.bulk(snap.value(i));
      else w.null();
    w.array(snap.arg_offsets.size());
    for (auto o : snap.arg_offsets) w.integer(static_cast<long long>(o));
    w.array(sargs.size());
    for (std::size_t j = 0; j < sargs.size(); ++j)
      if (j < snap.more.size() && snap.more[j]) w.bulk("(" + snap.resume[j]);
      else w.null();
  });
}

// ---- TXN BEGIN | COMMIT | ABORT ----
void txn_command(CommandContext& ctx) {
  TxnSession& ts = session_of(ctx.session);
  const std::string_view sub = ctx.args[1];
  if (ctx.args.size() != 2) return ctx.error("ERR wrong number of arguments for 'txn' command");
  if (iequals(sub, "begin")) {
    if (ts.txn.active()) return ctx.error("ERR TXN BEGIN inside an open transaction: COMMIT or ABORT it first");
    if (!ts.watched.empty()) return ctx.error("ERR TXN BEGIN with WATCHed keys: UNWATCH first");
    auto space = space_of(ctx);
    if (!space) return;
    if (Status s = space->begin(&ts.txn); !s.ok()) return ctx.error("ERR " + s.message());
    ts.doomed.clear();
    ts.txn_db = ctx.session.db;
    ts.last_ns = now_ns();
    return ctx.out.simple("OK");
  }
  if (iequals(sub, "commit")) {
    if (!ts.doomed.empty()) {
      const std::string why = std::move(ts.doomed);
      ts.doomed.clear();
      return ctx.error("ABORT " + why);
    }
    if (!ts.txn.active()) return ctx.error("ERR TXN COMMIT without TXN BEGIN");
    CommitResult r;
    if (Status s = ts.txn.commit(&r); !s.ok()) return ctx.error("ABORT " + s.message());
    if (r.outcome == TxnOutcome::kCommitted) return ctx.out.simple("OK");
    *ctx.out.buffer() = commit_failure(r);
    ctx.reply.error = true;
    return;
  }
  if (iequals(sub, "abort")) {
    if (!ts.txn.active() && ts.doomed.empty()) return ctx.error("ERR TXN ABORT without TXN BEGIN");
    ts.txn.abort();
    ts.doomed.clear();
    return ctx.out.simple("OK");
  }
  ctx.error("ERR unknown TXN subcommand '" + std::string(sub.substr(0, 64)) + "': use BEGIN, COMMIT or ABORT");
}

// ---- MULTI, EXEC, DISCARD, WATCH, UNWATCH ----
void multi(CommandContext& ctx) {
  TxnSession& ts = session_of(ctx.session);
  if (ts.txn.active() || !ts.doomed.empty())
    return ctx.error("ERR MULTI inside an open transaction (TXN BEGIN): COMMIT or ABORT it first");
  if (!ts.watched.empty() && ts.watch_db != ctx.session.db)
    return ctx.error("ERR the WATCHed keys belong to database " + std::to_string(ts.watch_db));
  ts.in_multi = true;
  ts.multi_failed = false;
  ts.queue.clear();
  ctx.out.simple("OK");
}

void discard(CommandContext& ctx) {
  TxnSession& ts = session_of(ctx.session);
  if (!ts.in_multi) return ctx.error("ERR DISCARD without MULTI");
  ts.clear_multi();
  ctx.out.simple("OK");
}

void exec(CommandContext& ctx) {
  TxnSession& ts = session_of(ctx.session);
  if (!ts.in_multi) return ctx.error("ERR EXEC without MULTI");
  if (ts.multi_failed) {
    ts.clear_multi();
    return ctx.error("EXECABORT Transaction discarded because of previous errors.");
  }
  auto space = space_of(ctx);
  if (!space) return ts.clear_multi();
  // The queued commands' argument views, once.
  std::vector<std::vector<std::string_view>> cmds;
  std::vector<const CommandDef*> defs;
  for (const auto& q : ts.queue) {
    cmds.emplace_back(q.begin(), q.end());
    defs.push_back(find_command(q[0]));
  }
  std::string body;
  for (int attempt = 0;; ++attempt) {
    Txn t;
    if (Status s = space->begin(&t); !s.ok()) {
      ts.clear_multi();
      return ctx.error("ERR " + s.message());
    }
    for (const auto& [k, since] : ts.watched) (void)t.watch(k, since);  // sizes checked by WATCH
    body.clear();
    bool lost = false;
    for (std::size_t i = 0; i < cmds.size() && !lost; ++i) {
      const CommandDef& def = *defs[i];
      if (def.is_key_command()) {
        lost = run_key_command(t, def, cmds[i], ctx.session.proto, max_key_of(ctx), max_value_of(ctx), &body) ==
               Ran::kLost;
        continue;
      }
      // A keyless command: its own handler, inside this transaction (RANGE, SNAPSHOT read
      // the connection's transaction, which for EXEC is t).
      PendingReply sub;
      ReplyWriter w(&sub.bytes, ctx.session.proto);
      CommandContext sctx{ctx.server, ctx.session, cmds[i], w, sub};
      ts.exec_txn = &t;
      def.local(sctx);
      ts.exec_txn = nullptr;
      lost = !t.active();
      body += sub.bytes;
    }
    if (lost) {
      ts.clear_multi();
      *ctx.out.buffer() = abort_reply("snapshot too old: the transaction was aborted to bound memory");
      ctx.reply.error = true;
      return;
    }
    CommitResult r;
    if (Status s = t.commit(&r); !s.ok()) {
      ts.clear_multi();
      return ctx.error("ABORT " + s.message());
    }
    if (r.outcome == TxnOutcome::kCommitted) {
      ctx.out.array(cmds.size());
      *ctx.out.buffer() += body;
      break;
    }
    if (r.outcome == TxnOutcome::kConflict && ts.watched.count(r.conflict_key)) {
      ctx.out.null_array();  // a WATCHed key changed: Redis's EXEC answers nil
      break;
    }
    if (r.outcome != TxnOutcome::kConflict || attempt + 1 >= kAttempts) {
      ts.clear_multi();
      *ctx.out.buffer() = commit_failure(r);
      ctx.reply.error = true;
      return;
    }
    backoff(attempt);  // a conflict on a key nobody WATCHed: run the block again on a new snapshot
  }
  ts.clear_multi();
}

void watch(CommandContext& ctx) {
  TxnSession& ts = session_of(ctx.session);
  if (ts.txn.active()) return ctx.error("ERR WATCH inside an open transaction (TXN BEGIN)");
  if (!ts.watched.empty() && ts.watch_db != ctx.session.db)
    return ctx.error("ERR the WATCHed keys belong to database " + std::to_string(ts.watch_db));
  auto space = space_of(ctx);
  if (!space) return;
  const std::uint64_t now = space->now();
  if (std::string e = oversized_key_error(*find_command("watch"), ctx.args, max_key_of(ctx)); !e.empty())
    return ctx.error(e);
  for (std::size_t i = 1; i < ctx.args.size(); ++i) ts.watched.emplace(std::string(ctx.args[i]), now);  // keeps an earlier WATCH
  ts.watch_db = ctx.session.db;
  ctx.out.simple("OK");
}

void unwatch(CommandContext& ctx) {
  session_of(ctx.session).watched.clear();
  ctx.out.simple("OK");
}

}  // namespace

void run_txn_key_command(CommandContext& ctx, const CommandDef& def) {
  TxnSession& ts = session_of(ctx.session);
  std::string* out = ctx.out.buffer();
  if (!ts.doomed.empty()) {
    *out = abort_reply(ts.doomed);
    ctx.reply.error = true;
    return;
  }
  const std::size_t max_key = max_key_of(ctx), max_value = max_value_of(ctx);
  if (ts.txn.active()) {
    if (ts.txn_db != ctx.session.db)
      return ctx.error("ERR the open transaction belongs to database " + std::to_string(ts.txn_db));
    ts.last_ns = now_ns();
    const Ran r = run_key_command(ts.txn, def, ctx.args, ctx.session.proto, max_key, max_value, out);
    if (r == Ran::kLost) ts.doomed = "snapshot too old: the transaction was aborted to bound memory";
    ctx.reply.error = r != Ran::kOk;
    return;
  }
  auto space = space_of(ctx);
  if (!space) return;
  for (int attempt = 0;; ++attempt) {
    Txn t;
    if (Status s = space->begin(&t); !s.ok()) return ctx.error("ERR " + s.message());
    out->clear();
    const Ran r = run_key_command(t, def, ctx.args, ctx.session.proto, max_key, max_value, out);
    if (r != Ran::kOk) {
      ctx.reply.error = true;
      return;
    }
    CommitResult c;
    if (Status s = t.commit(&c); !s.ok()) return ctx.error("ABORT " + s.message());
    if (c.outcome == TxnOutcome::kCommitted) return;
    if (c.outcome != TxnOutcome::kConflict || attempt + 1 >= kAttempts) {
      *out = commit_failure(c);
      ctx.reply.error = true;
      return;
    }
    backoff(attempt);
  }
}

/// Whether the connection has an interactive transaction open (TXN BEGIN), or one that ended
/// without the client ending it: FCALL (commands/procedure.cpp) is refused then.
bool txn_open_on(Session& s) {
  const auto* t = dynamic_cast<const TxnSession*>(s.extension.get());
  return t != nullptr && (t->txn.active() || !t->doomed.empty());
}

void append_txn_info(const ServerStats& s, std::string* out) {
  for (const auto& d : s.engine.databases) {
    if (d.kind != KeyspaceKind::kTxn) continue;
    const TxnStats& t = d.txn;
    *out += "txn_db" + std::to_string(d.db) + ":commits=" + std::to_string(t.commits) +
            ",conflicts=" + std::to_string(t.conflicts) + ",snapshot_too_old=" + std::to_string(t.too_old) +
            ",read_only=" + std::to_string(t.read_only) + ",versions=" + std::to_string(t.versions) +
            ",obsolete_versions=" + std::to_string(t.obsolete_versions) + ",collections=" +
            std::to_string(t.collections) + ",reclaimed=" + std::to_string(t.reclaimed) +
            ",bytes=" + std::to_string(t.bytes) + ",ts=" + std::to_string(t.ts) +
            ",clock=" + txn_clock_name(t.clock) +
            (t.clock == TxnClock::kTsc ? ",tsc_boundary_cycles=" + std::to_string(t.tsc_boundary_cycles) : std::string()) +
            "\r\n";
  }
}

void register_txn_commands(CommandTable& t) {
  const ArgDoc start{"start", "string", nullptr, false, false}, end{"end", "string", nullptr, false, false},
      limit{"count", "integer", "LIMIT", true, false};
  t.add({.name = "txn", .arity = 2, .flags = kWrite | kKeyless | kNoScript, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kTxnKind, .group = kGroup,
         .summary = "Begins, commits or aborts the connection's snapshot-isolation transaction.", .since = "0.1.0",
         .complexity = "O(1) to begin and abort; O(N log N) to commit N written keys",
         .args = {{"subcommand", "string", nullptr, false, false}}, .local = txn_command});
  t.add({.name = "multi", .arity = 1, .flags = kKeyless | kFast | kNoScript | kLoading | kStale | kAllowBusy, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kTxnKind, .group = kGroup,
         .summary = "Starts a transaction block: later commands are queued until EXEC.", .since = "1.2.0",
         .complexity = "O(1)", .local = multi});
  t.add({.name = "exec", .arity = 1, .flags = kKeyless | kNoScript | kLoading | kStale | kSkipSlowlog, .first_key = 0,
         .last_key = 0, .step = 0, .kinds = kTxnKind, .group = kGroup,
         .summary = "Runs the queued commands as one snapshot-isolation transaction.", .since = "1.2.0",
         .complexity = "Depends on the queued commands", .local = exec});
  t.add({.name = "discard", .arity = 1, .flags = kKeyless | kFast | kNoScript | kLoading | kStale | kAllowBusy,
         .first_key = 0, .last_key = 0, .step = 0, .kinds = kTxnKind, .group = kGroup,
         .summary = "Drops the queued commands of a transaction block.", .since = "2.0.0",
         .complexity = "O(N) in the queued commands", .local = discard});
  t.add({.name = "watch", .arity = -2, .flags = kKeyless | kFast | kNoScript | kLoading | kStale | kAllowBusy,
         .first_key = 1, .last_key = -1, .step = 1, .kinds = kTxnKind, .group = kGroup,
         .summary = "Makes the next EXEC fail when any of these keys changes first.", .since = "2.2.0",
         .complexity = "O(1) per key", .args = {{"key", "key", nullptr, false, true}}, .local = watch});
  t.add({.name = "unwatch", .arity = 1, .flags = kKeyless | kFast | kNoScript | kLoading | kStale | kAllowBusy,
         .first_key = 0, .last_key = 0, .step = 0, .kinds = kTxnKind, .group = kGroup,
         .summary = "Forgets the WATCHed keys.", .since = "2.2.0", .complexity = "O(1)", .local = unwatch});
  t.add({.name = "range", .arity = -3, .flags = kReadOnly | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kTxnKind, .group = kGroup,
         .summary = "Key-value pairs between two ZRANGEBYLEX-style bounds, in key order.", .since = "0.1.0",
         .complexity = "O(log N + M) for M pairs returned", .args = {start, end, limit}, .local = range});
  t.add({.name = "snapshot", .arity = -3, .flags = kReadOnly | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kTxnKind, .group = kGroup,
         .summary = "Reads points and ranges at one snapshot into keys, values and offsets.", .since = "0.1.0",
         .complexity = "O(P + log N + M) for P points and M range pairs",
         .args = {{"point", "key", "KEY", true, true}, {"range", "string", "RANGE", true, true}},
         .local = snapshot});
}

}  // namespace duet::server
