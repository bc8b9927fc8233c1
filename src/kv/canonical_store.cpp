#include "kv/canonical_store.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "sched/thread_name.hpp"

namespace duet::kv {

namespace {
/// The calling thread's completion waker (duet/kv.hpp).
thread_local void (*t_waker)(void*) = nullptr;
thread_local void* t_waker_arg = nullptr;
/// Empty polls of the queue an orchestrator makes, once it holds some groups, before it
/// sends a batch smaller than max_aggregate (the seed's dequeue budget).
constexpr unsigned kDequeueBudget = 64;
}  // namespace

}  // namespace duet::kv

namespace duet {
void set_completion_waker(void (*fn)(void*), void* arg) {
  kv::t_waker = fn;
  kv::t_waker_arg = fn ? arg : nullptr;
}
}  // namespace duet

namespace duet::kv {

Status CanonicalStore::open(std::unique_ptr<lslab::Map> map, unsigned orchestrators, std::size_t max_aggregate,
                            std::unique_ptr<CanonicalStore>* out) {
  std::unique_ptr<CanonicalStore> cs(new CanonicalStore(std::move(map), std::max<std::size_t>(max_aggregate, 1)));
  for (unsigned i = 0; i < orchestrators; ++i) {
    std::unique_ptr<lslab::Lane> lane;
    Status s = cs->map_->open_lane(&lane);
    if (!s.ok()) return s;
    cs->lanes_.push_back(std::move(lane));
  }
  for (auto& lane : cs->lanes_)
    cs->threads_.emplace_back([p = cs.get(), l = lane.get(), i = cs->threads_.size()] {
      sched::name_this_thread("duet-orch-" + std::to_string(i));
      p->orchestrate(l);
    });
  *out = std::move(cs);
  return Status::Ok();
}

CanonicalStore::~CanonicalStore() {
  {
    std::lock_guard<std::mutex> lk(m_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void CanonicalStore::submit(RequestGroup& g) {
  const std::size_t n = g.size();
  g.status.resize(n);
  g.out.resize(n);
  g.error = Status::Ok();
  if (n == 0) {
    if (g.gate) g.gate->leave(g.gate_ticket);
    return;
  }
  if (threads_.empty()) {
    g.error = run_inline(g);
    if (g.gate) g.gate->leave(g.gate_ticket);
    return;
  }
  g.done.store(0, std::memory_order_relaxed);
  g.waker = t_waker;
  g.waker_arg = t_waker_arg;
  {
    std::lock_guard<std::mutex> lk(m_);
    queue_.push_back(&g);
  }
  cv_.notify_one();
}

void CanonicalStore::wait(RequestGroup& g) {
  if (threads_.empty() || g.size() == 0) return;  // ran inline in submit()
  // 1: outcomes written, waker running; 2: the orchestrator no longer touches g (see orchestrate).
  g.done.wait(0, std::memory_order_acquire);
  while (g.done.load(std::memory_order_acquire) != 2) std::this_thread::yield();
}

Status CanonicalStore::run_inline(RequestGroup& g) {
  std::unique_ptr<lslab::Lane> lane;
  {
    std::lock_guard<std::mutex> lk(lane_m_);
    if (!idle_lanes_.empty()) {
      lane = std::move(idle_lanes_.back());
      idle_lanes_.pop_back();
    }
  }
  Status s;
  if (!lane) s = map_->open_lane(&lane);
  const std::size_t n = g.size();
  if (s.ok()) {
    lslab::Op* ops;
    std::uint64_t *keys, *values;
    s = lane->reserve(n, &ops, &keys, &values);
    if (s.ok()) {
      std::memcpy(ops, g.ops.data(), n * sizeof(lslab::Op));
      std::memcpy(keys, g.keys.data(), n * 8);
      std::memcpy(values, g.values.data(), n * 8);
      const lslab::OpStatus* st;
      const std::uint64_t* out;
      const auto t0 = std::chrono::steady_clock::now();
      s = lane->run(n, &st, &out);
      busy_ns_.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
      if (s.ok() || s.code() == StatusCode::kResourceExhausted) {
        std::memcpy(g.status.data(), st, n * sizeof(lslab::OpStatus));
        std::memcpy(g.out.data(), out, n * 8);
      }
    }
  }
  batches_.fetch_add(1, std::memory_order_relaxed);
  batched_.fetch_add(n, std::memory_order_relaxed);
  if (lane) {
    std::lock_guard<std::mutex> lk(lane_m_);
    idle_lanes_.push_back(std::move(lane));
  }
  return s;
}

void CanonicalStore::orchestrate(lslab::Lane* lane) {
  std::vector<RequestGroup*> groups;
  for (;;) {
    groups.clear();
    std::size_t total = 0;
    {
      std::unique_lock<std::mutex> lk(m_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty()) return;
    }
    // Fill the aggregated batch: take groups while they fit, polling an empty queue at most
    // kDequeueBudget times so a lone group is not held back.
    unsigned empty_polls = 0;
    while (total < max_aggregate_ && empty_polls < kDequeueBudget) {
      RequestGroup* g = nullptr;
      {
        std::lock_guard<std::mutex> lk(m_);
        if (!queue_.empty() && (groups.empty() || total + queue_.front()->size() <= max_aggregate_)) {
          g = queue_.front();
          queue_.pop_front();
        } else if (!queue_.empty()) {
          break;  // the next group would overflow this batch; it starts the next one
        }
      }
      if (g) {
        groups.push_back(g);
        total += g->size();
        empty_polls = 0;
      } else {
        ++empty_polls;
        std::this_thread::yield();
      }
    }
    if (groups.empty()) continue;
    lslab::Op* ops;
    std::uint64_t *keys, *values;
    Status s = lane->reserve(total, &ops, &keys, &values);
    const lslab::OpStatus* st = nullptr;
    const std::uint64_t* out = nullptr;
    if (s.ok()) {
      std::size_t at = 0;
      for (RequestGroup* g : groups) {
        const std::size_t n = g->size();
        std::memcpy(ops + at, g->ops.data(), n * sizeof(lslab::Op));
        std::memcpy(keys + at, g->keys.data(), n * 8);
        std::memcpy(values + at, g->values.data(), n * 8);
        at += n;
      }
      const auto t0 = std::chrono::steady_clock::now();
      s = lane->run(total, &st, &out);
      busy_ns_.fetch_add(elapsed_ns(t0), std::memory_order_relaxed);
    }
    batches_.fetch_add(1, std::memory_order_relaxed);
    batched_.fetch_add(total, std::memory_order_relaxed);
    std::size_t at = 0;
    for (RequestGroup* g : groups) {
      const std::size_t n = g->size();
      if (st && (s.ok() || s.code() == StatusCode::kResourceExhausted)) {
        std::memcpy(g->status.data(), st + at, n * sizeof(lslab::OpStatus));
        std::memcpy(g->out.data(), out + at, n * 8);
      }
      g->error = s;
      at += n;
      if (g->gate) g->gate->leave(g->gate_ticket);
      void (*const waker)(void*) = g->waker;
      void* const waker_arg = g->waker_arg;
      // 1: outcomes published, so ready() holds; the waker runs only after that, so an event
      // loop it wakes finds the batch ready. 2 comes after the waker returns, so finish() (which
      // waits for 2) never returns while the waker still runs on this batch's behalf.
      g->done.store(1, std::memory_order_release);
      g->done.notify_one();
      if (waker) waker(waker_arg);
      g->done.store(2, std::memory_order_release);  // last touch: the submitter may now free g
    }
  }
}

}  // namespace duet::kv
