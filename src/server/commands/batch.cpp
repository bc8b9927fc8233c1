// The batch family: OranguTAN's transfers on a `batch` database (docs/batch.md).
//   BATCH.CREATE account balance gas [account balance gas ...]   -> OK (all or none)
//   BATCH.BLOCK profile sender receiver amount [...]            -> array of outcomes
//   BATCH.TRANSFER sender receiver amount [profile]             -> outcome, once its block commits
//   BATCH.BALANCE account                                       -> integer
//   BATCH.ACCOUNT account                                       -> map (RESP3) / flat array (RESP2)
//   BATCH.STATS                                                 -> map: abort rate, fallback share, latency
// INFO duet adds a line per open batch database (append_batch_info).
// Accounts are unsigned 64-bit integers; outcomes are "committed", "gas-only" and "aborted".
// These handlers wait for their block on the client's thread (a block takes microseconds to
// milliseconds; BATCH.TRANSFER waits up to the single-transfer window as well).
#include <charconv>
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

bool parse_u64(std::string_view s, std::uint64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}
bool parse_i64(std::string_view s, std::int64_t* v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && !s.empty();
}

std::shared_ptr<BatchSpace> space_of(CommandContext& ctx) {
  auto s = std::dynamic_pointer_cast<BatchSpace>(ctx.server.keyspace(ctx.session.db));
  if (!s) ctx.error("ERR the batch keyspace of this database cannot be opened");
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
  for (const auto& d : s.engine.databases) {
    if (d.kind != KeyspaceKind::kBatch) continue;
    const std::string db = "batch_db" + std::to_string(d.db);
    const auto rows = stat_rows(d.batch);
    std::string line;
    for (std::size_t i = 1; i < rows.size(); ++i) line += (i > 1 ? "," : "") + std::string(rows[i].first) + "=" + rows[i].second;
    *out += db + ":" + line + "\r\n";
    *out += db + "_engine:" + rows[0].second + "\r\n";
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
  t.add({.name = "batch.stats", .arity = 1, .flags = kReadOnly | kKeyless, .first_key = 0, .last_key = 0, .step = 0,
         .kinds = kBatchKind, .group = kGroup,
         .summary = "Abort rate, fallback share and block latency of this database's transfers.", .since = "0.1.0",
         .complexity = "O(1)", .local = stats});
}

}  // namespace duet::server
