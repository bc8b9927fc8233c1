// The batch family: OranguTAN's transfers on a `batch` database (docs/batch.md).
//   BATCH.CREATE account balance gas [account balance gas ...]   -> OK (all or none)
//   BATCH.BLOCK profile sender receiver amount [...]            -> array of outcomes
//   BATCH.TRANSFER sender receiver amount [profile]             -> outcome, once its block commits
//   BATCH.BALANCE account                                       -> integer
//   BATCH.ACCOUNT account                                       -> map (RESP3) / flat array (RESP2)
//   BATCH.STATS                                                 -> map: abort rate, fallback share, latency
// and Epic's stored procedures, on a batch database opened with Epic tables (docs/epic.md):
//   BATCH.CALL proc numreads key.. numwrites key.. [arg ...]    -> the output words, at its epoch's end
//   BATCH.CALLPIECES numpieces proc numreads key.. numwrites key.. numargs arg.. [proc ...]
//                                                               -> the pieces' folded output words, likewise
//   BATCH.GET table key                                         -> the record's words, or nil
//   BATCH.FLUSH                                                 -> OK once every earlier call has run (deferred too)
//   BATCH.LOAD table key word [word ...]                        -> OK (bulk load, before the first call)
// A key is `table:key` (the table by name or number, the key an unsigned 64-bit integer); args
// are unsigned 32-bit integers. BATCH.CALL replies with the procedure's four output words when
// it committed, `-ABORTED reason N` when its procedure aborted (N: out[0]), `-ILLEGAL ...` when
// it broke the procedure rules; only the calling client waits for its epoch.
// INFO duet adds a line per open batch database (append_batch_info).
// Accounts are unsigned 64-bit integers; outcomes are "committed", "gas-only" and "aborted".
// These handlers wait for their block on the client's thread (a block takes microseconds to
// milliseconds; BATCH.TRANSFER waits up to the single-transfer window as well).
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "duet/batch.hpp"
#include "server/command.hpp"
#include "server/connection.hpp"
#include "server/server.hpp"
#include "server/stats.hpp"

namespace duet::server {

void register_batch_commands(CommandTable& t);

namespace {

const char* const kGroup = "batch";
constexpr KindSet kBatchKind = kind_bit(KeyspaceKind::kBatch);

/// `v` with three decimals ("12.503"), for INFO's millisecond and nanosecond figures.
std::string three_decimals(double v) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

bool parse_u64(std::string_view s, std::uint64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}
bool parse_i64(std::string_view s, std::int64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

std::shared_ptr<BatchSpace> space_of(CommandContext& ctx) {
  std::string why;
  auto s = std::dynamic_pointer_cast<BatchSpace>(ctx.server.keyspace(ctx.session.db, &why));
  if (!s) ctx.error("ERR the batch keyspace of this database cannot be opened: " + why);
  return s;
}

/// Reads `account` at args[i]; on failure writes the error naming it and returns false.
bool account_arg(CommandContext& ctx, std::size_t i, std::uint64_t* out) {
  if (parse_u64(ctx.args[i], out)) return true;
  ctx.error("ERR account '" + std::string(ctx.args[i].substr(0, 64)) + "' is not an unsigned 64-bit integer");
  return false;
}

void status_error(CommandContext& ctx, const Status& s) {
  ctx.error((s.code() == StatusCode::kNotFound ? "ERR " : "ERR ") + s.message());
}

void create(CommandContext& ctx) {
  if ((ctx.args.size() - 1) % 3 != 0) return ctx.error("ERR wrong number of arguments for 'batch.create' command");
  std::vector<AccountInit> in;
  for (std::size_t i = 1; i < ctx.args.size(); i += 3) {
    AccountInit a;
    if (!account_arg(ctx, i, &a.key)) return;
    if (!parse_i64(ctx.args[i + 1], &a.balance) || !parse_i64(ctx.args[i + 2], &a.gas_cost))
      return ctx.error("ERR account " + std::to_string(a.key) + ": balance and gas must be integers");
    in.push_back(a);
  }
  auto s = space_of(ctx);
  if (!s) return;
  const Status st = s->create_accounts(in);
  if (!st.ok()) return status_error(ctx, st);
  ctx.out.simple("OK");
}

void write_outcome(ReplyWriter& w, TransferOutcome o) { w.simple(transfer_outcome_name(o)); }

void block(CommandContext& ctx) {
  if ((ctx.args.size() - 2) % 3 != 0) return ctx.error("ERR wrong number of arguments for 'batch.block' command");
  TransferProfile profile;
  if (Status p = parse_transfer_profile(ctx.args[1], &profile); !p.ok()) return ctx.error("ERR " + p.message());
  std::vector<Transfer> txs;
  txs.reserve((ctx.args.size() - 2) / 3);
  for (std::size_t i = 2; i < ctx.args.size(); i += 3) {
    Transfer t;
    if (!account_arg(ctx, i, &t.sender) || !account_arg(ctx, i + 1, &t.receiver)) return;
    if (!parse_i64(ctx.args[i + 2], &t.amount))
      return ctx.error("ERR transaction " + std::to_string(txs.size()) + ": amount is not an integer");
    txs.push_back(t);
  }
  auto s = space_of(ctx);
  if (!s) return;
  const BlockResult r = s->submit_block(profile, std::move(txs)).get();
  if (!r.status.ok()) return status_error(ctx, r.status);
  ctx.out.array(r.outcomes.size());
  for (TransferOutcome o : r.outcomes) write_outcome(ctx.out, o);
}

void transfer(CommandContext& ctx) {
  if (ctx.args.size() > 5) return ctx.error("ERR wrong number of arguments for 'batch.transfer' command");
  Transfer t;
  if (!account_arg(ctx, 1, &t.sender) || !account_arg(ctx, 2, &t.receiver)) return;
  if (!parse_i64(ctx.args[3], &t.amount)) return ctx.error("ERR amount is not an integer");
  TransferProfile profile = TransferProfile::kSmallCoin;
  if (ctx.args.size() == 5)
    if (Status p = parse_transfer_profile(ctx.args[4], &profile); !p.ok()) return ctx.error("ERR " + p.message());
  auto s = space_of(ctx);
  if (!s) return;
  const TransferResult r = s->submit_transfer(profile, t).get();
  if (!r.status.ok()) return status_error(ctx, r.status);
  write_outcome(ctx.out, r.outcome);
}

void balance(CommandContext& ctx) {
  std::uint64_t key;
  if (!account_arg(ctx, 1, &key)) return;
  auto s = space_of(ctx);
  if (!s) return;
  std::int64_t b = 0;
  if (Status st = s->balance(key, &b); !st.ok()) return status_error(ctx, st);
  ctx.out.integer(b);
}

void account(CommandContext& ctx) {
  std::uint64_t key;
  if (!account_arg(ctx, 1, &key)) return;
  auto s = space_of(ctx);
  if (!s) return;
  AccountState a;
  if (Status st = s->account(key, &a); !st.ok()) return status_error(ctx, st);
  ctx.out.map(5);
  ctx.out.bulk("balance");
  ctx.out.integer(a.balance);
  ctx.out.bulk("seq_num");
  ctx.out.integer(a.seq_num);
  ctx.out.bulk("sent_events");
  ctx.out.integer(a.sent_events);
  ctx.out.bulk("rec_events");
  ctx.out.integer(a.rec_events);
  ctx.out.bulk("gas_cost");
  ctx.out.integer(a.gas_cost);
}

/// The figures BATCH.STATS and INFO report, as (name, value) rows; the engine's description first.
std::vector<std::pair<const char*, std::string>> stat_rows(const BatchStats& b) {
  const double txs = b.transfers ? double(b.transfers) : 1.0;
  return {
      {"engine", b.engine},
      {"blocks", std::to_string(b.blocks)},
      {"transfers", std::to_string(b.transfers)},
      {"refused_blocks", std::to_string(b.refused_blocks)},
      {"abort_rate", std::to_string((b.aborted + b.gas_only) / txs)},
      {"fast_path_failure_rate", std::to_string(b.fast_path_failures / txs)},
      {"fallback_share", std::to_string(b.blocks ? double(b.fallback_blocks) / b.blocks : 0.0)},
      {"rerun_share", std::to_string(b.rerun_transfers / txs)},
      {"latency_p50_us", std::to_string(b.latency_p50_us)},
      {"latency_p99_us", std::to_string(b.latency_p99_us)},
      {"resolve_us_per_block", std::to_string(b.blocks ? b.resolve_us_total / b.blocks : 0.0)},
      {"gpu_failures", std::to_string(b.gpu_failures)},
      {"serial_share", std::to_string(b.blocks ? double(b.serial_blocks) / b.blocks : 0.0)},
  };
}

/// The keyspace's Epic database, or null after writing the error.
EpicDatabase* epic_of(CommandContext& ctx, std::shared_ptr<BatchSpace>* keep) {
  *keep = space_of(ctx);
  if (!*keep) return nullptr;
  EpicDatabase* e = (*keep)->epic();
  if (!e) ctx.error("ERR this batch database has no Epic tables (set epic-tables at startup)");
  return e;
}

/// The table named `table` (a name or a number) into *out; false with *why otherwise.
bool epic_table(const EpicDatabase& e, std::string_view table, std::uint32_t* out, std::string* why) {
  const auto& tables = e.tables();
  std::uint64_t t = 0;
  if (parse_u64(table, &t)) {
    if (t < tables.size()) return *out = static_cast<std::uint32_t>(t), true;
    return *why = "no table " + std::to_string(t), false;
  }
  for (std::size_t k = 0; k < tables.size(); ++k)
    if (tables[k].name == table) return *out = static_cast<std::uint32_t>(k), true;
  return *why = "no table named '" + std::string(table.substr(0, 64)) + "'", false;
}

/// Parses `table:key` at args[i]; writes the error and returns false.
bool epic_key_arg(CommandContext& ctx, const EpicDatabase& e, std::size_t i, EpicKey* out) {
  const std::string_view a = ctx.args[i];
  const std::size_t colon = a.rfind(':');
  std::string why;
  if (colon == std::string_view::npos) why = "expected table:key";
  else if (!parse_u64(a.substr(colon + 1), &out->key)) why = "the key is not an unsigned 64-bit integer";
  else if (epic_table(e, a.substr(0, colon), &out->table, &why)) return true;
  ctx.error("ERR key '" + std::string(a.substr(0, 64)) + "': " + why);
  return false;
}

/// Reads `table key` from args[1] and args[2]; writes the error and returns false.
bool epic_record_args(CommandContext& ctx, const EpicDatabase& e, EpicKey* out) {
  std::string why;
  if (!epic_table(e, ctx.args[1], &out->table, &why)) return ctx.error("ERR " + why), false;
  if (!parse_u64(ctx.args[2], &out->key)) return ctx.error("ERR the key is not an unsigned 64-bit integer"), false;
  return true;
}

/// Parses args[from..to) (to the end by default) as unsigned 32-bit integers (`what` N names a
/// bad one); writes the error and returns false.
bool u32_args(CommandContext& ctx, std::size_t from, const std::string& what, std::vector<std::uint32_t>* out,
              std::size_t to = SIZE_MAX) {
  for (std::size_t i = from; i < std::min(to, ctx.args.size()); ++i) {
    std::uint64_t v = 0;
    if (!parse_u64(ctx.args[i], &v) || v > UINT32_MAX)
      return ctx.error("ERR " + what + " " + std::to_string(i - from) + " is not an unsigned 32-bit integer"),
             false;
    out->push_back(static_cast<std::uint32_t>(v));
  }
  return true;
}

/// The finisher of a reply that waits for Epic's epochs (CommandContext::defer), or null after
/// writing the error: new waits are refused while the server shuts down.
DeferredReply defer_for_epic(CommandContext& ctx, const char* command) {
  if (ctx.server.draining()) return ctx.error("ERR the server is shutting down"), nullptr;
  DeferredReply finish = ctx.defer();
  if (!finish) ctx.error("ERR " + std::string(command) + " cannot run here (it waits for the epochs)");
  return finish;
}

void write_epic_result(ReplyWriter& w, const EpicTxnResult& r) {
  if (!r.status.ok()) return w.error("ERR " + r.status.message());
  if (r.outcome == EpicOutcome::kAborted) return w.error("ABORTED reason " + std::to_string(r.out[0]));
  if (r.outcome == EpicOutcome::kIllegal)
    return w.error(
        "ILLEGAL the procedure broke the rules (a key index past its declared keys, a key written twice, or a read "
        "or an abort after its first write)");
  w.array(4);
  for (std::uint32_t v : r.out) w.integer(v);
}

/// One procedure call parsed from args[*i..]: `proc numreads key.. numwrites key..`, then the
/// args: every argument left (BATCH.CALL), or, with `counted_args`, `numargs arg..`
/// (BATCH.CALLPIECES). Advances *i past it; on bad input writes the error (prefixed by `where`)
/// and returns false.
struct ParsedCall {
  std::uint32_t proc = 0;
  std::vector<EpicKey> reads, writes;
  std::vector<std::uint32_t> args;
};
bool parse_call(CommandContext& ctx, const EpicDatabase& e, std::size_t* i, bool counted_args, const std::string& where,
                ParsedCall* out) {
  const std::size_t end = ctx.args.size();
  std::uint64_t v = 0;
  if (*i >= end || !parse_u64(ctx.args[*i], &v) || v > UINT32_MAX)
    return ctx.error("ERR " + where + "proc is not an unsigned 32-bit integer"), false;
  out->proc = static_cast<std::uint32_t>(v);
  ++*i;
  auto count = [&](const char* what, std::uint64_t* n) {
    if (*i >= end || !parse_u64(ctx.args[*i], n) || *n > end - *i - 1)
      return ctx.error("ERR " + where + "num" + what + " is not a count of the " +
                       (std::string_view(what) == "args" ? "args" : "keys") + " that follow"),
             false;
    ++*i;
    return true;
  };
  auto keys = [&](const char* what, std::vector<EpicKey>* ks) {
    std::uint64_t n = 0;
    if (!count(what, &n)) return false;
    ks->resize(n);
    for (std::uint64_t k = 0; k < n; ++k, ++*i)
      if (!epic_key_arg(ctx, e, *i, &(*ks)[k])) return false;
    return true;
  };
  if (!keys("reads", &out->reads) || !keys("writes", &out->writes)) return false;
  std::uint64_t n = end - *i;
  if (counted_args && !count("args", &n)) return false;
  const std::size_t from = *i;
  *i += n;
  return u32_args(ctx, from, where + "arg", &out->args, *i);
}

/// The callback that finishes a BATCH.CALL or BATCH.CALLPIECES reply. It holds no reference to
/// the keyspace: dropping the keyspace (FLUSHDB) destroys the Epic database, which first runs
/// every call queued (so each gets its reply), and a last reference released on the epoch
/// thread would make that thread join itself.
std::function<void(EpicTxnResult&&)> epic_reply(DeferredReply finish) {
  return [finish = std::move(finish)](EpicTxnResult&& r) {
    const bool failed = !r.status.ok() || r.outcome != EpicOutcome::kCommitted;
    finish(failed, [&r](ReplyWriter& w) { write_epic_result(w, r); });
  };
}

void call(CommandContext& ctx) {
  std::shared_ptr<BatchSpace> keep;
  EpicDatabase* e = epic_of(ctx, &keep);
  if (!e) return;
  std::size_t i = 1;
  ParsedCall c;
  if (!parse_call(ctx, *e, &i, false, "", &c)) return;
  DeferredReply finish = defer_for_epic(ctx, "BATCH.CALL");
  if (!finish) return;
  e->submit(c.proc, c.reads, c.writes, c.args, epic_reply(std::move(finish)));
}

/// BATCH.CALLPIECES numpieces proc numreads key.. numwrites key.. numargs arg.. [proc ...]: one
/// txn in pieces (EpicDatabase::submit_pieces), one reply with the folded result.
void call_pieces(CommandContext& ctx) {
  std::shared_ptr<BatchSpace> keep;
  EpicDatabase* e = epic_of(ctx, &keep);
  if (!e) return;
  std::uint64_t n = 0;
  if (!parse_u64(ctx.args[1], &n) || n == 0 || n > kEpicMaxPieces)
    return ctx.error("ERR numpieces is not a count from 1 to " + std::to_string(kEpicMaxPieces));
  std::vector<ParsedCall> calls(n);
  std::size_t i = 2;
  for (std::uint64_t p = 0; p < n; ++p)
    if (!parse_call(ctx, *e, &i, true, "piece " + std::to_string(p) + ": ", &calls[p])) return;
  if (i != ctx.args.size())
    return ctx.error("ERR " + std::to_string(ctx.args.size() - i) + " arguments follow the last of the " +
                     std::to_string(n) + " pieces");
  std::vector<EpicPiece> pieces(n);
  for (std::uint64_t p = 0; p < n; ++p) pieces[p] = {calls[p].proc, calls[p].reads, calls[p].writes, calls[p].args};
  DeferredReply finish = defer_for_epic(ctx, "BATCH.CALLPIECES");
  if (!finish) return;
  e->submit_pieces(pieces, epic_reply(std::move(finish)));
}

void epic_get(CommandContext& ctx) {
  std::shared_ptr<BatchSpace> keep;
  EpicDatabase* e = epic_of(ctx, &keep);
  if (!e) return;
  EpicKey k;
  if (!epic_record_args(ctx, *e, &k)) return;
  // The record, or null when absent; false for an error.
  auto write = [](ReplyWriter& w, const Status& st, const std::vector<std::uint32_t>& rec) {
    if (st.code() == StatusCode::kNotFound) return w.null(), true;
    if (!st.ok()) return w.error("ERR " + st.message()), false;
    w.array(rec.size());
    for (std::uint32_t v : rec) w.integer(v);
    return true;
  };
  // A running epoch is waited for off this thread (its other clients go on); where no reply can
  // wait (inside MULTI, while shutting down), the read waits here.
  DeferredReply finish = ctx.server.draining() ? nullptr : ctx.defer();
  if (!finish) {
    std::vector<std::uint32_t> rec;
    const Status st = e->read(k.table, k.key, &rec);
    if (!st.ok() && st.code() != StatusCode::kNotFound) return status_error(ctx, st);
    write(ctx.out, st, rec);
    return;
  }
  e->read(k.table, k.key, [finish = std::move(finish), write](Status st, std::vector<std::uint32_t>&& rec) {
    finish(!st.ok() && st.code() != StatusCode::kNotFound, [&](ReplyWriter& w) { write(w, st, rec); });
  });
}

void epic_load(CommandContext& ctx) {
  std::shared_ptr<BatchSpace> keep;
  EpicDatabase* e = epic_of(ctx, &keep);
  if (!e) return;
  EpicKey k;
  if (!epic_record_args(ctx, *e, &k)) return;
  std::vector<std::uint32_t> words;
  if (!u32_args(ctx, 3, "word", &words)) return;
  if (Status st = e->load(k.table, k.key, words); !st.ok()) return status_error(ctx, st);
  ctx.out.simple("OK");
}

void epic_flush(CommandContext& ctx) {
  std::shared_ptr<BatchSpace> keep;
  EpicDatabase* e = epic_of(ctx, &keep);
  if (!e) return;
  DeferredReply finish = defer_for_epic(ctx, "BATCH.FLUSH");
  if (!finish) return;
  e->flush([finish = std::move(finish)] { finish(false, [](ReplyWriter& w) { w.simple("OK"); }); });
}

void stats(CommandContext& ctx) {
  auto s = space_of(ctx);
  if (!s) return;
  const auto rows = stat_rows(s->stats());
  ctx.out.map(rows.size());
  for (const auto& [k, v] : rows) {
    ctx.out.bulk(k);
    ctx.out.bulk(v);
  }
}

}  // namespace

/// INFO duet: per open `batch` database N, the line `batch_dbN:blocks=...,abort_rate=...,...`
/// (Redis's keyspace-line style: the BATCH.STATS figures but the engine) and
/// `batch_dbN_engine:<description>`.
void append_batch_info(const ServerStats& s, std::string* out) {
  // `name:k=v,k=v,...` from rows[from..], appended piece by piece (GCC 12's -Wrestrict misfires
  // on chained temporaries here).
  auto line = [out](const std::string& name, const std::vector<std::pair<const char*, std::string>>& rows, std::size_t from) {
    *out += name;
    *out += ':';
    for (std::size_t i = from; i < rows.size(); ++i) {
      if (i > from) *out += ',';
      *out += rows[i].first;
      *out += '=';
      *out += rows[i].second;
    }
    *out += "\r\n";
  };
  for (const auto& d : s.engine.databases) {
    if (d.kind != KeyspaceKind::kBatch) continue;
    const std::string db = "batch_db" + std::to_string(d.db);
    const auto rows = stat_rows(d.batch);
    line(db, rows, 1);
    *out += db + "_engine:" + rows[0].second + "\r\n";
    if (d.batch.epic_open) {
      const EpicStats& e = d.batch.epic;
      line(db + "_epic",
           {{"epochs", std::to_string(e.epochs)},
            {"txns", std::to_string(e.txns)},
            {"refused", std::to_string(e.refused)},
            {"failed_epochs", std::to_string(e.failed_epochs)},
            {"closed_by_size", std::to_string(e.closed_by_size)},
            {"closed_by_wait", std::to_string(e.closed_by_wait)},
            {"closed_by_flush", std::to_string(e.closed_by_flush)},
            {"rerun_epochs", std::to_string(e.rerun_epochs)},
            {"placement", epic_placement_name(e.placement)},
            {"host_planned_epochs", std::to_string(e.host_planned_epochs)},
            {"small_epochs_on_host", std::to_string(e.small_epochs_on_host)},
            {"queued_epochs", std::to_string(e.queued_epochs)},
            {"device_epochs", std::to_string(e.device_epochs)},
            {"table_uploads", std::to_string(e.table_uploads)},
            {"table_downloads", std::to_string(e.table_downloads)},
            {"cost_model_epochs_on_host", std::to_string(e.cost_model_epochs_on_host)},
            {"take_ms", three_decimals(e.take_ms)},
            {"engine_ms", three_decimals(e.engine_ms)},
            {"resolve_ms", three_decimals(e.resolve_ms)},
            {"host_exec_ms", three_decimals(e.host_exec_ms)},
            {"device_exec_ms", three_decimals(e.device_exec_ms)},
            {"table_move_ms", three_decimals(e.table_move_ms)},
            {"model_host_ns_per_txn", three_decimals(e.model_host_ns_per_txn)},
            {"model_device_ns_per_txn", three_decimals(e.model_device_ns_per_txn)},
            {"model_device_ns_per_link", three_decimals(e.model_device_ns_per_link)}},
           0);
    }
  }
}

void register_batch_commands(CommandTable& t) {
  const ArgDoc acct{"account", "integer", nullptr, false, false};
  t.add({.name = "batch.create", .arity = -4, .flags = kWrite | kKeyless | kDenyOom, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup, .summary = "Creates accounts (all or none).",
         .since = "0.1.0", .complexity = "O(N)",
         .args = {{"account", "integer", nullptr, false, true}, {"balance", "integer", nullptr, false, true},
                  {"gas", "integer", nullptr, false, true}},
         .local = create});
  t.add({.name = "batch.block", .arity = -5, .flags = kWrite | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kBatchKind, .group = kGroup,
         .summary = "Runs a block of transfers with the result of serial execution in block order.",
         .since = "0.1.0", .complexity = "O(N)",
         .args = {{"profile", "string", nullptr, false, false}, {"sender", "integer", nullptr, false, true},
                  {"receiver", "integer", nullptr, false, true}, {"amount", "integer", nullptr, false, true}},
         .local = block});
  t.add({.name = "batch.transfer", .arity = -4, .flags = kWrite | kKeyless, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup,
         .summary = "Queues one transfer into the next block; replies when that block commits.", .since = "0.1.0",
         .complexity = "O(1)",
         .args = {{"sender", "integer", nullptr, false, false}, {"receiver", "integer", nullptr, false, false},
                  {"amount", "integer", nullptr, false, false}, {"profile", "string", nullptr, true, false}},
         .local = transfer});
  t.add({.name = "batch.balance", .arity = 2, .flags = kReadOnly | kFast | kKeyless, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup,
         .summary = "An account's balance as of the last committed block.", .since = "0.1.0", .complexity = "O(1)",
         .args = {acct}, .local = balance});
  t.add({.name = "batch.account", .arity = 2, .flags = kReadOnly | kFast | kKeyless, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup,
         .summary = "An account's fields as of the last committed block.", .since = "0.1.0", .complexity = "O(1)",
         .args = {acct}, .local = account});
  t.add({.name = "batch.call", .arity = -4, .flags = kWrite | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kBatchKind, .group = kGroup,
         .summary = "Calls an Epic stored procedure with its declared keys; replies at its epoch's end.",
         .since = "0.1.0", .complexity = "O(N) in the keys and args, plus the wait for the epoch",
         .args = {{"proc", "integer", nullptr, false, false}, {"numreads", "integer", nullptr, false, false},
                  {"key", "string", nullptr, true, true}, {"numwrites", "integer", nullptr, false, false},
                  {"key", "string", nullptr, true, true}, {"arg", "integer", nullptr, true, true}},
         .local = call});
  t.add({.name = "batch.callpieces", .arity = -6, .flags = kWrite | kKeyless, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup,
         .summary = "Calls one Epic txn as independent pieces (each its own procedure call, planned and run apart); "
                    "replies once with their folded result at the epoch's end.",
         .since = "0.1.0", .complexity = "O(N) in the keys and args, plus the wait for the epoch",
         .args = {{"numpieces", "integer", nullptr, false, false}, {"proc", "integer", nullptr, false, true},
                  {"numreads", "integer", nullptr, false, true}, {"key", "string", nullptr, true, true},
                  {"numwrites", "integer", nullptr, false, true}, {"key", "string", nullptr, true, true},
                  {"numargs", "integer", nullptr, false, true}, {"arg", "integer", nullptr, true, true}},
         .local = call_pieces});
  t.add({.name = "batch.get", .arity = 3, .flags = kReadOnly | kKeyless | kBarrier, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup,
         .summary = "An Epic record's words as of the last completed epoch (after this client's earlier calls).",
         .since = "0.1.0", .complexity = "O(1)",
         .args = {{"table", "string", nullptr, false, false}, {"key", "integer", nullptr, false, false}},
         .local = epic_get});
  t.add({.name = "batch.load", .arity = -4, .flags = kWrite | kKeyless | kDenyOom, .first_key = 0, .last_key = 0,
         .step = 0, .kinds = kBatchKind, .group = kGroup,
         .summary = "Bulk-loads one Epic record (before the first BATCH.CALL only).", .since = "0.1.0",
         .complexity = "O(N) in the words",
         .args = {{"table", "string", nullptr, false, false}, {"key", "integer", nullptr, false, false},
                  {"word", "integer", nullptr, false, true}},
         .local = epic_load});
  t.add({.name = "batch.flush", .arity = 1, .flags = kWrite | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kBatchKind, .group = kGroup,
         .summary = "Closes the open Epic epoch and replies once every call before it has run.", .since = "0.1.0",
         .complexity = "O(1) plus the wait for the epochs", .local = epic_flush});
  t.add({.name = "batch.stats", .arity = 1, .flags = kReadOnly | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kBatchKind, .group = kGroup,
         .summary = "Abort rate, fallback share and block latency of this database's transfers.", .since = "0.1.0",
         .complexity = "O(1)", .local = stats});
}

}  // namespace duet::server
