#include "server/key_batch.hpp"

#include <algorithm>
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

void KeyBatchRunner::submit_phase(bool write) {
  nreqs_ = 0;
  req_group_.clear();
  segs_.clear();
  std::span<KeyOp*> ops = ops_;
  for (unsigned db : dbs_) {
    if (!spaces_[db]) continue;
    const std::size_t begin = nreqs_;
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
    if (nreqs_ > begin) segs_.push_back(Segment{db, begin, nreqs_, nullptr});
  }
  if (nreqs_ == 0) return;
  // Every request is built before any is submitted: reqs_ may grow (and move) while building.
  if (trace_.size() < nreqs_) trace_.resize(reqs_.size());
  for (std::size_t j = 0; j < nreqs_; ++j) trace_[j] = KvTrace{};
  for (Segment& sg : segs_) {
    sg.handle = spaces_[sg.db]->submit(std::span<KvRequest>(reqs_.data() + sg.begin, sg.end - sg.begin),
                                       std::span<KvTrace>(trace_.data() + sg.begin, sg.end - sg.begin));
  }
  sent_ += nreqs_;
}

bool KeyBatchRunner::phase_ready() const {
  for (const Segment& sg : segs_)
    if (sg.handle && !spaces_[sg.db]->ready(*sg.handle)) return false;
  return true;
}

void KeyBatchRunner::collect_phase(bool write) {
  std::span<KeyOp*> ops = ops_;
  // Each request's own status is read below; the batch's status only repeats the first.
  for (Segment& sg : segs_)
    if (sg.handle) (void)spaces_[sg.db]->finish(std::move(sg.handle));
  segs_.clear();
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

std::size_t KeyBatchRunner::run(std::span<KeyOp*> ops) {
  start(ops);
  advance(true);
  return sent_;
}

bool KeyBatchRunner::start(std::span<KeyOp*> ops) {
  const std::size_t n = ops.size();
  ops_ = ops;
  sent_ = 0;
  ngroups_ = 0;
  nreqs_ = 0;
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
    if (op.hash == 0) op.hash = key_hash(op.key);
    std::size_t at = (op.hash + op.db * 0x9E3779B97F4A7C15ull) & mask;
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
  submit_phase(false);
  stage_ = Stage::kReading;
  return advance(false);
}

bool KeyBatchRunner::advance(bool wait) {
  for (;;) {
    switch (stage_) {
      case Stage::kIdle:
      case Stage::kDone: return true;
      case Stage::kReading: {
        if (!wait && !phase_ready()) return false;
        collect_phase(false);
        for (std::size_t gi = 0; gi < ngroups_; ++gi) {
          Group& g = groups_[gi];
          if (!g.error.empty()) {
            for (std::uint32_t i = g.first; i != UINT32_MAX; i = next_[i]) replies_[i] = g.error;
            continue;
          }
          compute(g, ops_);
        }
        submit_phase(true);
        stage_ = Stage::kWriting;
        break;
      }
      case Stage::kWriting: {
        if (!wait && !phase_ready()) return false;
        collect_phase(true);
        end_batch();
        stage_ = Stage::kDone;
        return true;
      }
    }
  }
}

void KeyBatchRunner::end_batch() {
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
}

// ---- KeyPipeline ----------------------------------------------------------------------------

KeyPipeline::~KeyPipeline() {
  // Batches still in flight are finished (the engine must not keep views of their requests);
  // their ops belong to the caller.
  for (Flight& f : flying_)
    if (f.runner) f.runner->advance(true);
}

bool KeyPipeline::writes(const KeyOp& op) { return !op.cmd->has(kReadOnly); }

void KeyPipeline::add(KeyOp* op) {
  if (op->hash == 0) op->hash = key_hash(op->key);
  queue_.push_back(op);
}

bool KeyPipeline::start_one(KeyOpSink& sink, std::size_t max_batch) {
  if (queue_.empty()) return false;
  if (held_mark_.empty()) {
    held_mark_.assign(kStripes, 0);
    guard_mark_.assign(kStripes, 0);
    taken_mark_.assign(kStripes, 0);
  }
  if (++formation_ == 0) {  // wrapped: forget every old mark
    std::fill(held_mark_.begin(), held_mark_.end(), 0);
    std::fill(guard_mark_.begin(), guard_mark_.end(), 0);
    std::fill(taken_mark_.begin(), taken_mark_.end(), 0);
    formation_ = 1;
  }
  Flight f;
  if (!spare_.empty()) {
    f = std::move(spare_.back());
    spare_.pop_back();
  } else {
    f.runner = std::make_unique<KeyBatchRunner>(space_of_, max_value_bytes_);
  }
  f.ops.clear();
  keep_.clear();
  // Take, in order, every queued op that no batch in flight conflicts with; once an op of a
  // stripe waits, every later op of that stripe waits too (the key's order).
  std::size_t examined = 0;
  for (KeyOp* op : queue_) {
    if (f.ops.size() >= max_batch) break;
    ++examined;
    const std::size_t s = stripe_of(*op);
    const Stripe& st = stripes_[s];
    // Ops of other threads' keys (reads and blind writes run here) never wait behind an op
    // that waits for the guards: that op's key is this thread's, so a shared stripe is a
    // collision, and a blind write held behind it could be the very write it waits for on
    // another thread, in a cycle of such waits.
    const bool foreign = op->local_read || op->direct;
    const bool order = held_mark_[s] == formation_ || st.writers > 0 || (writes(*op) && st.readers > 0);
    bool guard_wait = !foreign && guard_mark_[s] == formation_;
    if (!order && !guard_wait && guards_ && !foreign && writes(*op) &&
        (taken_mark_[s] == formation_ || !overwrites(*op))) {
      // It may write a key its batch reads first: no other thread's blind write of the key
      // may land in between. Announce (once: a waiting op keeps its announcement, so new
      // blind writers hand their writes over and the ones in flight drain), then check.
      const std::size_t gs = WriteGuards::stripe_of(op->hash, op->db);
      if (!op->guarded) {
        guards_->begin_rmw(gs);
        op->guarded = true;
      }
      guard_wait = !guards_->clear(gs);
    }
    if (order) {
      held_mark_[s] = formation_;
      keep_.push_back(op);
    } else if (guard_wait) {
      guard_mark_[s] = formation_;
      keep_.push_back(op);
    } else {
      taken_mark_[s] = formation_;
      f.ops.push_back(op);
    }
  }
  if (f.ops.empty()) {
    spare_.push_back(std::move(f));
    return false;
  }
  // The queue becomes: the ops held back, then the ones not examined, in order.
  queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(examined));
  queue_.insert(queue_.begin(), keep_.begin(), keep_.end());
  for (KeyOp* op : f.ops) {
    Stripe& st = stripes_[stripe_of(*op)];
    if (writes(*op)) ++st.writers;
    else ++st.readers;
  }
  if (!flying_.empty()) ++overlapped_;
  flying_.push_back(std::move(f));
  Flight& fl = flying_.back();
  if (fl.runner->start(std::span<KeyOp*>(fl.ops.data(), fl.ops.size()))) {
    // Complete at once (an inline store): hand it over now.
    Flight done = std::move(flying_.back());
    flying_.pop_back();
    complete(done, sink);
  }
  return true;
}

void KeyPipeline::complete(Flight& f, KeyOpSink& sink) {
  sink.batch_done(f.ops.size(), f.runner->sent());
  for (KeyOp* op : f.ops) {
    Stripe& st = stripes_[stripe_of(*op)];
    if (writes(*op)) --st.writers;
    else --st.readers;
    if (op->guarded) {
      guards_->end_rmw(WriteGuards::stripe_of(op->hash, op->db));
      op->guarded = false;
    }
    if (op->direct) guards_->end_blind(WriteGuards::stripe_of(op->hash, op->db));
  }
  for (std::size_t i = 0; i < f.ops.size(); ++i) sink.op_done(f.ops[i], f.runner->reply(i));
  f.ops.clear();
  spare_.push_back(std::move(f));
}

std::size_t KeyPipeline::reap(KeyOpSink& sink) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < flying_.size();) {
    if (!flying_[i].runner->advance(false)) {
      ++i;
      continue;
    }
    Flight f = std::move(flying_[i]);
    flying_.erase(flying_.begin() + static_cast<std::ptrdiff_t>(i));
    complete(f, sink);
    ++n;
  }
  return n;
}

bool KeyPipeline::pump(KeyOpSink& sink, std::size_t max_batch, std::size_t max_in_flight) {
  max_batch = std::max<std::size_t>(max_batch, 1);
  max_in_flight = std::max<std::size_t>(max_in_flight, 1);
  bool progress = reap(sink) > 0;
  while (!queue_.empty()) {
    if (flying_.size() >= max_in_flight) {
      finish_oldest(sink);
      progress = true;
    }
    if (!start_one(sink, max_batch)) break;
    progress = true;
  }
  return progress;
}

void KeyPipeline::finish_oldest(KeyOpSink& sink) {
  if (flying_.empty()) return;
  flying_.front().runner->advance(true);
  Flight f = std::move(flying_.front());
  flying_.pop_front();
  complete(f, sink);
}

void KeyPipeline::finish_all(KeyOpSink& sink) {
  while (!flying_.empty()) finish_oldest(sink);
}

std::vector<KeyOp*> KeyPipeline::take_queued() {
  std::vector<KeyOp*> out(queue_.begin(), queue_.end());
  queue_.clear();
  return out;
}

}  // namespace duet::server
