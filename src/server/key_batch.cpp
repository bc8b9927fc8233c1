#include "server/key_batch.hpp"

#include <charconv>
#include <climits>

namespace duet::server {

namespace {

std::string error_reply(const Status& s) {
  std::string r = s.code() == StatusCode::kResourceExhausted ? "-OOM " : "-ERR ";
  std::string m = s.message();
  for (char& c : m)
    if (c == '\r' || c == '\n') c = ' ';
  return r + m + "\r\n";
}

void put_bulk_or_null(std::string* out, bool exists, const std::string& v, bool resp3) {
  ReplyWriter w(out, resp3 ? 3 : 2);
  if (exists) w.bulk(v);
  else w.null();
}

void put_int(std::string* out, long long v) { ReplyWriter(out, 2).integer(v); }

bool overwrites(const KeyOp& op) {
  return (op.cmd == Cmd::kSet && !op.nx && !op.xx) || op.cmd == Cmd::kGetSet || op.cmd == Cmd::kDel ||
         op.cmd == Cmd::kMset;
}

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

bool PendingReply::finish_part(std::uint32_t i, std::string&& part) {
  if (kind == Kind::kSingle) {
    error = !part.empty() && part[0] == '-';
    bytes = std::move(part);
    return true;
  }
  parts[i] = std::move(part);
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
    g.exists = op.cmd != Cmd::kDel;
    if (g.exists) g.value = op.value;
    g.dirty = true;
    g.first_mut = i;
    i = next_[i];
  } else {
    g.exists = g.orig_exists;
    g.value = g.orig;
  }
  for (; i != UINT32_MAX; i = next_[i]) {
    KeyOp& op = *ops[i];
    std::string& r = replies_[i];
    auto mutate = [&] {
      g.dirty = true;
      if (g.first_mut < 0) g.first_mut = i;
    };
    switch (op.cmd) {
      case Cmd::kGet:
      case Cmd::kMget: put_bulk_or_null(&r, g.exists, g.value, op.resp3); break;
      case Cmd::kSet: {
        const bool apply = op.nx ? !g.exists : op.xx ? g.exists : true;
        if (op.get) put_bulk_or_null(&r, g.exists, g.value, op.resp3);
        else if (apply) r = "+OK\r\n";
        else ReplyWriter(&r, op.resp3 ? 3 : 2).null();
        if (apply) {
          g.exists = true;
          g.value = op.value;
          mutate();
        }
        break;
      }
      case Cmd::kGetSet:
        put_bulk_or_null(&r, g.exists, g.value, op.resp3);
        g.exists = true;
        g.value = op.value;
        mutate();
        break;
      case Cmd::kMset:
        r = "+OK\r\n";
        g.exists = true;
        g.value = op.value;
        mutate();
        break;
      case Cmd::kDel:
        put_int(&r, g.exists ? 1 : 0);
        if (g.exists) {
          g.exists = false;
          g.value.clear();
          mutate();
        }
        break;
      case Cmd::kExists: put_int(&r, g.exists ? 1 : 0); break;
      case Cmd::kStrlen: put_int(&r, g.exists ? static_cast<long long>(g.value.size()) : 0); break;
      case Cmd::kType: r = g.exists ? "+string\r\n" : "+none\r\n"; break;
      case Cmd::kIncr:
      case Cmd::kDecr:
      case Cmd::kIncrBy:
      case Cmd::kDecrBy: {
        long long cur = 0;
        if (g.exists && !parse_int64(g.value, &cur)) {
          r = "-ERR value is not an integer or out of range\r\n";
          break;
        }
        long long next;
        if (__builtin_add_overflow(cur, op.delta, &next)) {
          r = "-ERR increment or decrement would overflow\r\n";
          break;
        }
        g.exists = true;
        g.value = std::to_string(next);
        mutate();
        put_int(&r, next);
        break;
      }
      case Cmd::kAppend: {
        const std::size_t len = (g.exists ? g.value.size() : 0) + op.value.size();
        if (len > max_value_bytes_) {
          r = "-ERR string exceeds maximum allowed size (max-value-bytes " + std::to_string(max_value_bytes_) +
              ")\r\n";
          break;
        }
        if (!g.exists) g.value.clear();
        g.value += op.value;
        g.exists = true;
        mutate();
        put_int(&r, static_cast<long long>(len));
        break;
      }
      default: r = "-ERR internal: not a key command\r\n";
    }
  }
}

std::size_t KeyBatchRunner::engine_phase(std::span<KeyOp*> ops, bool write) {
  std::size_t sent = 0;
  for (unsigned db : dbs_) {
    if (!spaces_[db]) continue;
    reqs_.clear();
    req_group_.clear();
    for (std::uint32_t gi = 0; gi < groups_.size(); ++gi) {
      Group& g = groups_[gi];
      if (g.db != db) continue;
      if (write ? !g.dirty : g.blind) continue;
      KvRequest r;
      r.key = ops[g.first]->key;
      if (!write) {
        r.op = KvRequest::Op::kGet;
      } else if (g.exists) {
        r.op = KvRequest::Op::kPut;
        r.value = g.value;
      } else {
        r.op = KvRequest::Op::kDelete;
      }
      reqs_.push_back(std::move(r));
      req_group_.push_back(gi);
    }
    if (reqs_.empty()) continue;
    spaces_[db]->execute(reqs_);  // per-request statuses below
    sent += reqs_.size();
    for (std::size_t j = 0; j < reqs_.size(); ++j) {
      Group& g = groups_[req_group_[j]];
      KvRequest& r = reqs_[j];
      for (std::uint32_t i = g.first; i != UINT32_MAX; i = next_[i]) ops[i]->path = r.path;
      if (!write) {
        if (!r.status.ok()) {
          g.error = error_reply(r.status);
          continue;
        }
        g.orig_exists = r.found;
        g.orig = std::move(r.result);
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
        switch (op.cmd) {
          case Cmd::kDel: put_int(&replies_[i], r.found ? 1 : 0); break;
          case Cmd::kGetSet: put_bulk_or_null(&replies_[i], r.found, r.result, op.resp3); break;
          case Cmd::kSet:
            if (op.get) put_bulk_or_null(&replies_[i], r.found, r.result, op.resp3);
            else replies_[i] = "+OK\r\n";
            break;
          default: replies_[i] = "+OK\r\n";
        }
      }
    }
  }
  return sent;
}

std::size_t KeyBatchRunner::run(std::span<KeyOp*> ops) {
  const std::size_t n = ops.size();
  groups_.clear();
  next_.assign(n, UINT32_MAX);
  replies_.resize(n);
  for (auto& r : replies_) r.clear();
  dbs_.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    KeyOp& op = *ops[i];
    if (op.db >= index_.size()) {
      index_.resize(op.db + 1);
      spaces_.resize(op.db + 1);
    }
    auto [it, fresh] = index_[op.db].try_emplace(op.key, static_cast<std::uint32_t>(groups_.size()));
    if (fresh) {
      if (index_[op.db].size() == 1) dbs_.push_back(op.db);
      Group g;
      g.db = op.db;
      g.first = g.last = i;
      g.blind = overwrites(op);
      groups_.push_back(std::move(g));
    } else {
      Group& g = groups_[it->second];
      next_[g.last] = i;
      g.last = i;
    }
  }
  for (unsigned db : dbs_) {
    spaces_[db] = space_of_(db);
    if (spaces_[db]) continue;
    for (Group& g : groups_) {
      if (g.db != db) continue;
      g.error = "-ERR database " + std::to_string(db) + " cannot be opened (see the server log)\r\n";
      g.blind = false;
    }
  }
  std::size_t sent = engine_phase(ops, false);
  for (Group& g : groups_) {
    if (!g.error.empty()) {
      for (std::uint32_t i = g.first; i != UINT32_MAX; i = next_[i]) replies_[i] = g.error;
      continue;
    }
    compute(g, ops);
  }
  sent += engine_phase(ops, true);
  for (unsigned db : dbs_) {
    index_[db].clear();
    spaces_[db].reset();
  }
  return sent;
}

}  // namespace duet::server
