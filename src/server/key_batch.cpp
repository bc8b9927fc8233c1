#include "server/key_batch.hpp"

#include <charconv>
#include <climits>

namespace duet::server {

namespace {

std::string error_reply(const Status& s) {
  std::string r;
  ReplyWriter(&r, 2).error((s.code() == StatusCode::kResourceExhausted ? "OOM " : "ERR ") + s.message());
  return r;
}

bool overwrites(const KeyOp& op) { return op.cmd->has(kOverwrite) && op.cmd->key.blind && op.cmd->key.blind(op); }

}  // namespace

bool parse_int64(std::string_view s, long long* v) {
  if (s.empty() || s.size() > 20) return false;
  const bool neg = s[0] == '-';
  const std::string_view digits = neg ? s.substr(1) : s;
  if (digits.empty() || digits[0] < '0' || digits[0] > '9') return false;
  if (digits[0] == '0' && (digits.size() > 1 || neg)) return false;  // "0" only; no "-0", "007"
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool PendingReply::finish_part(std::uint32_t i, std::string& part) {
  if (kind == Kind::kSingle) {
    error = !part.empty() && part[0] == '-';
    bytes.swap(part);
    return true;
  }
  parts[i].swap(part);
  if (parts_left.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
  // The last part: assemble.
  for (const std::string& p : parts) {
    if (!p.empty() && p[0] == '-' && kind != Kind::kArray) {
      bytes = p;
      error = true;
      return true;
    }
  }
  switch (kind) {
    case Kind::kArray: {
      ReplyWriter(&bytes, 2).array(parts.size());
      for (const std::string& p : parts) bytes += p;
      break;
    }
    case Kind::kSum: {
      long long sum = 0;
      for (const std::string& p : parts) sum += (p.size() > 1 && p[1] == '1') ? 1 : 0;
      ReplyWriter(&bytes, 2).integer(sum);
      break;
    }
    default:
      bytes = "+OK\r\n";
  }
  parts.clear();
  return true;
}

void KeyBatchRunner::compute(Group& g, std::span<KeyOp*> ops) {
  std::uint32_t i = g.first;
  if (g.blind) {
    // The first op overwrites; its reply needs the previous value and is written after the
    // engine's write returns it. The ops after it see the state it left.
    const KeyOp& op = *ops[i];
    g.state.exists = false;
    g.state.value.clear();
    std::string unused;
    op.cmd->key.apply(g.state, op, &unused, env_);
    g.dirty = true;
    g.first_mut = i;
    i = next_[i];
  } else {
    g.state.exists = g.orig_exists;
    g.state.value.swap(g.orig);
  }
  for (; i != UINT32_MAX; i = next_[i]) {
    const KeyOp& op = *ops[i];
    if (op.cmd->key.apply(g.state, op, &replies_[i], env_)) {
      g.dirty = true;
      if (g.first_mut < 0) g.first_mut = i;
    }
  }
}

std::size_t KeyBatchRunner::engine_phase(std::span<KeyOp*> ops, bool write) {
  std::size_t sent = 0;
  for (unsigned db : dbs_) {
    if (!spaces_[db]) continue;
    nreqs_ = 0;
    req_group_.clear();
    for (std::uint32_t gi = 0; gi < ngroups_; ++gi) {
      Group& g = groups_[gi];
      if (g.db != db) continue;
      if (write ? !g.dirty : (g.blind || !g.error.empty())) continue;
      if (nreqs_ == reqs_.size()) reqs_.emplace_back();
      KvRequest& r = reqs_[nreqs_++];
      r.key = ops[g.first]->key;
      r.value = {};
      r.status = Status();
      r.found = false;
      r.result.clear();
      // The previous value is needed only by a blind op whose reply shows it (GETSET, SET ...
      // GET); other groups read it in the read phase, or never need it.
      const KeyOp& first = *ops[g.first];
      r.want_previous = g.blind && first.cmd->key.needs_previous && first.cmd->key.needs_previous(first);
      if (!write) {
        r.op = KvRequest::Op::kGet;
      } else if (g.state.exists) {
        r.op = KvRequest::Op::kPut;
        r.value = g.state.value;
      } else {
        r.op = KvRequest::Op::kDelete;
      }
      req_group_.push_back(gi);
    }
    if (nreqs_ == 0) continue;
    if (trace_.size() < nreqs_) trace_.resize(reqs_.size());
    for (std::size_t j = 0; j < nreqs_; ++j) trace_[j] = KvTrace{};
    // Each request's own status is read below; the batch's status only repeats the first.
    (void)spaces_[db]->execute(std::span<KvRequest>(reqs_.data(), nreqs_), std::span<KvTrace>(trace_.data(), nreqs_));
    sent += nreqs_;
    for (std::size_t j = 0; j < nreqs_; ++j) {
      Group& g = groups_[req_group_[j]];
      KvRequest& r = reqs_[j];
      for (std::uint32_t i = g.first; i != UINT32_MAX; i = next_[i]) ops[i]->path = trace_[j].path;
      if (!write) {
        if (!r.status.ok()) {
          g.error = error_reply(r.status);
          continue;
        }
        g.orig_exists = r.found;
        g.orig.swap(r.result);
        continue;
      }
      if (!r.status.ok()) {
        // Nothing changed: every command from the first change on fails.
        const std::string e = error_reply(r.status);
        for (std::uint32_t i = static_cast<std::uint32_t>(g.first_mut); i != UINT32_MAX; i = next_[i]) replies_[i] = e;
        continue;
      }
      if (g.blind) {
        const std::uint32_t i = g.first;
        const KeyOp& op = *ops[i];
        replies_[i].clear();
        op.cmd->key.blind_reply(op, r.found, r.result, &replies_[i]);
      }
    }
  }
  return sent;
}

std::size_t KeyBatchRunner::run(std::span<KeyOp*> ops) {
  const std::size_t n = ops.size();
  ngroups_ = 0;
  next_.assign(n, UINT32_MAX);
  if (replies_.size() < n) replies_.resize(n);
  for (std::size_t i = 0; i < n; ++i) replies_[i].clear();
  dbs_.clear();
  // Group the ops by (database, key), in arrival order, through an open-addressing table.
  std::size_t cap = 64;
  while (cap < 2 * n) cap *= 2;
  table_.assign(cap, 0);
  const std::size_t mask = cap - 1;
  for (std::uint32_t i = 0; i < n; ++i) {
    KeyOp& op = *ops[i];
    if (op.db >= db_seen_.size()) {
      db_seen_.resize(op.db + 1, 0);
      spaces_.resize(op.db + 1);
    }
    if (!db_seen_[op.db]) {
      db_seen_[op.db] = 1;
      dbs_.push_back(op.db);
    }
    std::size_t at = (std::hash<std::string_view>{}(op.key) + op.db * 0x9E3779B97F4A7C15ull) & mask;
    for (;; at = (at + 1) & mask) {
      const std::uint32_t gi = table_[at];
      if (gi == 0) break;
      const Group& g = groups_[gi - 1];
      if (g.db == op.db && ops[g.first]->key == op.key) break;
    }
    if (table_[at] == 0) {
      if (ngroups_ == groups_.size()) groups_.emplace_back();
      Group& g = groups_[ngroups_++];
      table_[at] = static_cast<std::uint32_t>(ngroups_);
      g.db = op.db;
      g.first = g.last = i;
      g.blind = overwrites(op);
      g.orig_exists = g.state.exists = g.dirty = false;
      g.orig.clear();
      g.state.value.clear();
      g.first_mut = -1;
      g.error.clear();
    } else {
      Group& g = groups_[table_[at] - 1];
      next_[g.last] = i;
      g.last = i;
    }
  }
  for (unsigned db : dbs_) {
    spaces_[db] = space_of_(db);
    if (spaces_[db]) continue;
    for (std::size_t gi = 0; gi < ngroups_; ++gi) {
      Group& g = groups_[gi];
      if (g.db != db) continue;
      g.error = "-ERR database " + std::to_string(db) + " cannot be opened (see the server log)\r\n";
      g.blind = false;
    }
  }
  std::size_t sent = engine_phase(ops, false);
  for (std::size_t gi = 0; gi < ngroups_; ++gi) {
    Group& g = groups_[gi];
    if (!g.error.empty()) {
      for (std::uint32_t i = g.first; i != UINT32_MAX; i = next_[i]) replies_[i] = g.error;
      continue;
    }
    compute(g, ops);
  }
  sent += engine_phase(ops, true);
  for (unsigned db : dbs_) {
    db_seen_[db] = 0;
    spaces_[db].reset();
  }
  // Recycled strings keep their capacity; give back what a large value left behind.
  auto trim = [](std::string& s) {
    if (s.capacity() > (1u << 20)) std::string().swap(s);
  };
  for (std::size_t gi = 0; gi < ngroups_; ++gi) {
    trim(groups_[gi].orig);
    trim(groups_[gi].state.value);
  }
  for (std::size_t j = 0; j < nreqs_; ++j) trim(reqs_[j].result);
  return sent;
}

}  // namespace duet::server
