// Recorded batch histories of the CODS structures, shared by the GPU driver's tests (stamps
// recorded inside the kernels, BatchResult::stamps) and the CPU twin's (the same requests run
// by threads, each stamped around its call with one atomic counter): contended batches are made
// here, recorded, turned into per-key register histories and checked by
// checkers/linearizability.hpp's per-key checker (INSERT is insert-if-absent: one that found the
// key is a read of it). Host code only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "checkers/linearizability.hpp"
#include "duet/status.hpp"
#include "index/cods/common.hpp"
#include "index/cods/cpu_env.hpp"

namespace duet::cods::ds::history {

using KeyHistory = std::unordered_map<std::uint64_t, std::vector<checkers::RegisterOp>>;

/// One batch, its outcomes and its stamps (2 per request: invocation, response), host arrays.
struct Recorded {
  std::vector<Op> ops;
  std::vector<std::uint64_t> keys, vals, out, stamps;
  std::vector<OpStatus> status;

  std::size_t size() const { return ops.size(); }
  Batch batch() const { return Batch{ops.data(), keys.data(), vals.data(), ops.size()}; }
  BatchResult result() { return BatchResult{status.data(), out.data(), stamps.data()}; }
};

/// A contended batch of n requests over `space` (40% INSERT, 40% REMOVE, 20% GET), so many
/// requests meet on each key; insert values are unique per (batch, request).
inline Recorded contended_batch(std::mt19937_64& rng, const std::vector<std::uint64_t>& space, std::size_t n,
                                std::uint64_t batch) {
  Recorded r;
  r.ops.resize(n);
  r.keys.resize(n);
  r.vals.resize(n);
  r.out.assign(n, 0);
  r.stamps.assign(2 * n, 0);
  r.status.assign(n, OpStatus::kInvalid);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned x = rng() % 10;
    r.ops[i] = x < 4 ? Op::kInsert : x < 8 ? Op::kRemove : Op::kGet;
    r.keys[i] = space[rng() % space.size()];
    r.vals[i] = (batch << 32) | i;
  }
  return r;
}

/// Appends every request of r to h, keyed by its key, with its recorded interval. Requests
/// marked kRetry changed nothing and are left out (a planted bug's operation that gave up). A
/// status other than kFound / kNotFound / kRetry, or an interval that is not increasing, is a
/// failure named in *why. `tree`: values are the tree's (else a set's presence, value 1).
inline bool add_batch(const Recorded& r, bool tree, KeyHistory& h, std::string* why) {
  for (std::size_t i = 0; i < r.size(); ++i) {
    const OpStatus s = r.status[i];
    if (s == OpStatus::kRetry) continue;
    if (s != OpStatus::kFound && s != OpStatus::kNotFound) {
      *why = "request " + std::to_string(i) + " has status " + std::to_string(int(s));
      return false;
    }
    checkers::RegisterOp op;
    op.invoke = r.stamps[2 * i];
    op.response = r.stamps[2 * i + 1];
    if (op.response <= op.invoke) {
      *why = "request " + std::to_string(i) + " has stamps " + std::to_string(op.invoke) + ", " +
             std::to_string(op.response);
      return false;
    }
    const bool found = s == OpStatus::kFound;
    const std::uint64_t value = tree ? r.out[i] : 1;
    if (r.ops[i] == Op::kInsert && !found) {
      op.kind = checkers::RegisterOpKind::kPut;  // inserted
      op.arg = tree ? r.vals[i] : 1;
    } else if (r.ops[i] == Op::kRemove) {
      op.kind = checkers::RegisterOpKind::kDelete;
      op.found = found;
      op.out = found ? value : 0;
    } else {  // GET, or an INSERT that found the key: a read of the present value
      op.kind = checkers::RegisterOpKind::kGet;
      op.found = found;
      op.out = found ? value : 0;
    }
    h[r.keys[i]].push_back(op);
  }
  return true;
}

/// The CPU twin of an in-kernel history: `sessions.size()` threads start together and take the
/// requests of r round-robin; each request runs as a one-request batch through
/// front.execute(session, ...) between two tickets of `ticket` (acq_rel adds, as the kernels'),
/// written to r.stamps. Front is CpuLazyList, CpuHashSet or CpuBLinkTree.
template <class Front>
Status record_on_cpu(Front& front, std::vector<std::unique_ptr<CpuEnv>>& sessions, Recorded& r,
                     std::atomic<std::uint64_t>& ticket) {
  const std::size_t t = sessions.size();
  std::atomic<std::size_t> ready{0};
  std::vector<Status> failed(t, Status::Ok());
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < t; ++w)
    threads.emplace_back([&, w] {
      ready.fetch_add(1);
      while (ready.load() < t) std::this_thread::yield();  // start together
      for (std::size_t i = w; i < r.size(); i += t) {
        BatchResult one{&r.status[i], &r.out[i]};
        r.stamps[2 * i] = ticket.fetch_add(1, std::memory_order_acq_rel);
        const Status s = front.execute(*sessions[w], Batch{&r.ops[i], &r.keys[i], &r.vals[i], 1}, one);
        r.stamps[2 * i + 1] = ticket.fetch_add(1, std::memory_order_acq_rel);
        if (!s.ok()) failed[w] = s;
      }
    });
  for (auto& th : threads) th.join();
  for (const Status& s : failed)
    if (!s.ok()) return s;
  return Status::Ok();
}

}  // namespace duet::cods::ds::history
