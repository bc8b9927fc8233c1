#include "kv/kv_space.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>

#include "common/check.hpp"
#include "common/log.hpp"

namespace duet::kv {

namespace {

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

/// Raises `longest` to `us` when `us` is larger. Not atomic as a whole: callers hold
/// switch_mutex_, so there is one writer at a time (readers see either value).
void raise_to(std::atomic<std::uint64_t>& longest, std::uint64_t us) {
  if (us > longest.load(std::memory_order_relaxed)) longest.store(us, std::memory_order_relaxed);
}

lslab::Op to_lslab(KvRequest::Op op) {
  return op == KvRequest::Op::kGet ? lslab::Op::kGet : op == KvRequest::Op::kPut ? lslab::Op::kPut : lslab::Op::kDelete;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
#if DUET_CHECKS
namespace {
std::atomic<void (*)()> round_entry_hook{nullptr};
std::atomic<void (*)(bool)> route_hook{nullptr};
}  // namespace
void set_round_entry_hook(void (*hook)()) { round_entry_hook.store(hook); }
void set_route_hook(void (*hook)(bool)) { route_hook.store(hook); }
#endif

// ---------------------------------------------------------------------------------------------
KvSpaceImpl::KvSpaceImpl(std::string name, const StoreConfig& cfg, std::shared_ptr<StoreResources> shared)
    : shared_(std::move(shared)),
      name_(std::move(name)),
      cfg_(cfg),
      budget_(&shared_->budget),
      epochs_(&shared_->epochs),
      participants_(epochs_),
      dict_(budget_),
      hot_(cfg.hot_cache_entries),
      shadow_(cfg.router.bins),
      threshold_(cfg.router.threshold),
      adaptive_(cfg.router.mode == RouterMode::kLearned && cfg.router.auto_switch && cfg.router.adapt_interval_ms > 0),
      chooser_(ModeChooser::Settings{
          .interval_ns = std::uint64_t{cfg.router.adapt_interval_ms} * 1'000'000,
          .window_ns = std::uint64_t{std::max<std::uint32_t>(cfg.router.adapt_window_ms, 1)} * 1'000'000,
          .settle_ns = std::uint64_t{std::max<std::uint32_t>(cfg.router.adapt_window_ms / 2, 1)} * 1'000'000,
      }) {}

Status KvSpaceImpl::open(std::string name, const StoreConfig& cfg, std::unique_ptr<lslab::Map> map,
                         std::shared_ptr<StoreResources> shared, std::unique_ptr<KvSpaceImpl>* out) {
  std::unique_ptr<KvSpaceImpl> s(new KvSpaceImpl(std::move(name), cfg, std::move(shared)));
  const bool gpu = std::string(map->backend()) == "gpu";
  const unsigned orchestrators = cfg.orchestrators ? cfg.orchestrators : gpu ? 4u : 0u;
  const std::size_t aggregate = cfg.max_aggregate ? cfg.max_aggregate : gpu ? (1u << 16) : (1u << 12);
  Status st = CanonicalStore::open(std::move(map), orchestrators, aggregate, &s->store_);
  if (!st.ok()) return st;
  s->inline_store_ = orchestrators == 0;
  std::unique_ptr<RouterModel> initial;
  switch (cfg.router.mode) {
    case RouterMode::kAllHot: initial = std::make_unique<ConstantModel>(true); break;
    case RouterMode::kAllCold: initial = std::make_unique<ConstantModel>(false); break;
    default: initial = std::make_unique<HistogramModel>(cfg.router.bins, cfg.router.threshold); break;
  }
  s->models_[0].store(initial.get());
  s->model_slots_[0] = std::move(initial);
  s->last_switch_ = std::chrono::steady_clock::now();
  if (cfg.router.mode == RouterMode::kLearned && cfg.router.auto_switch)
    s->auto_thread_ = std::thread([p = s.get()] { p->auto_switch_loop(); });
  *out = std::move(s);
  return Status::Ok();
}

KvSpaceImpl::~KvSpaceImpl() {
  if (auto_thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(auto_m_);
      auto_stop_ = true;
    }
    auto_cv_.notify_all();
    auto_thread_.join();
  }
  // Free the value blocks still held: the store's, and those only dirty cache entries hold
  // (clean entries share the store's). The keyspace is quiescent now.
  std::vector<std::uint64_t> keys, handles;
  if (store_->export_entries(&keys, &handles).ok()) {
    for (std::uint64_t h : handles)
      if (is_block(h)) free_value_block(reinterpret_cast<void*>(h));
  }
  for (const auto& rec : hot_.log_snapshot())
    if (rec.present && is_block(rec.handle)) free_value_block(reinterpret_cast<void*>(rec.handle));
  store_.reset();
}

Status KvSpaceImpl::single(KvRequest::Op op, std::string_view key, std::string_view value, std::string* out,
                           bool* found) {
  KvRequest r;
  r.op = op;
  r.key = key;
  r.value = value;
  r.want_previous = out != nullptr;
  Status s = execute(std::span<KvRequest>(&r, 1));
  if (!s.ok()) return s;
  if (found) *found = r.found;
  if (out) *out = std::move(r.result);
  return Status::Ok();
}

Status KvSpaceImpl::get(std::string_view key, std::string* value, bool* found) {
  return single(KvRequest::Op::kGet, key, {}, value, found);
}
Status KvSpaceImpl::put(std::string_view key, std::string_view value, std::string* previous, bool* had_previous) {
  return single(KvRequest::Op::kPut, key, value, previous, had_previous);
}
Status KvSpaceImpl::del(std::string_view key, std::string* previous, bool* had_previous) {
  return single(KvRequest::Op::kDelete, key, {}, previous, had_previous);
}

/// One batch between submit() and finish(). Reused: a thread keeps a few in a cache.
class KvSpaceImpl::InFlight final : public KvInFlight {
 public:
  ~InFlight() override {
    // Abandoned by its caller: finish it here. Each request keeps its own status; the batch's
    // (the first failure) has no one left to go to.
    if (owner) (void)owner->finish_batch(*this);
  }
  KvSpaceImpl* owner = nullptr;
  /// From submit(): the caller's share of the keyspace, so that a batch in flight keeps it
  /// alive (execute() leaves it empty: its caller holds a handle throughout).
  std::shared_ptr<KvSpaceImpl> keep;
  std::span<KvRequest> batch;
  std::span<KvTrace> trace;  ///< empty, or one entry per request
  std::vector<std::uint64_t> ikeys, handles;
  std::vector<std::uint8_t> owned;  ///< the request holds a value block not yet published
  std::vector<std::uint32_t> pending, next, unadmitted;
  RequestGroup cold, loads;
  std::vector<std::uint32_t> cold_idx, load_idx;
  std::vector<std::uint8_t> load_for_update;
  mem::EpochManager::Participant* part = nullptr;
  std::size_t pslot = 0;
  std::optional<mem::EpochManager::Guard> pin;
  sched::EpochGate::Ticket ticket;  ///< this round's hold on the model epoch
  Status first_error;
  std::uint64_t n_hot = 0, n_miss = 0, n_cold = 0, retired_bytes = 0;
  std::uint64_t start_ns = 0;  ///< when the batch was started (adaptive routing's latency)
  bool fresh = false;  ///< the first round: requests are admitted and sampled as they are routed

  void fail(std::uint32_t i, Status s) {
    if (first_error.ok()) first_error = s;
    batch[i].status = std::move(s);
    if (!trace.empty()) trace[i].done_ns = now_ns();
  }
  void answered(std::uint32_t i, KvPath path, std::uint64_t t) {
    if (!trace.empty()) trace[i] = KvTrace{path, t};
  }
  void retire_block(std::uint64_t h, const char* site) { retired_bytes += retire_value_block(part, h, site); }
};

namespace {
/// Per-thread cache of finished InFlight objects, so a batch allocates nothing in the steady state.
thread_local std::vector<std::unique_ptr<KvInFlight>> t_inflight_cache;
}  // namespace

Status KvSpaceImpl::execute(std::span<KvRequest> batch, std::span<KvTrace> trace) {
  return finish(start(batch, trace));
}

std::unique_ptr<KvInFlight> KvSpaceImpl::submit(std::span<KvRequest> batch, std::span<KvTrace> trace) {
  std::unique_ptr<InFlight> f = start(batch, trace);
  f->keep = weak_from_this().lock();  // empty only for a keyspace no shared_ptr owns (none from a Store)
  return f;
}

std::unique_ptr<KvSpaceImpl::InFlight> KvSpaceImpl::start(std::span<KvRequest> batch, std::span<KvTrace> trace) {
  std::unique_ptr<InFlight> f;
  if (!t_inflight_cache.empty()) {
    f.reset(static_cast<InFlight*>(t_inflight_cache.back().release()));
    t_inflight_cache.pop_back();
  } else {
    f = std::make_unique<InFlight>();
  }
  f->owner = this;
  f->start_ns = adaptive_ ? now_ns() : 0;
  prepare(*f, batch, trace);
  if (!f->pending.empty()) start_round(*f);
  return f;
}

Status KvSpaceImpl::finish(std::unique_ptr<KvInFlight> handle) {
  if (!handle) return Status::InvalidArgument("finish() of a null batch");
  auto* f = static_cast<InFlight*>(handle.get());
  if (f->owner != this) return Status::InvalidArgument("finish() of a batch from another keyspace or finished twice");
  Status s = finish_batch(*f);
  // Released last, after this keyspace's last use here: it may hold the keyspace's last share.
  const std::shared_ptr<KvSpaceImpl> keep = std::move(f->keep);
  if (t_inflight_cache.size() < 64) t_inflight_cache.push_back(std::move(handle));
  return s;
}

bool KvSpaceImpl::ready(const KvInFlight& handle) const {
  const auto& f = static_cast<const InFlight&>(handle);
  if (f.owner != this || inline_store_ || f.pending.empty()) return true;
  // A submitted group's done turns 1 once its outcomes are written, before its waker runs;
  // finish() then waits for 2, which follows the waker (CanonicalStore::orchestrate).
  auto done = [](const RequestGroup& g) { return g.size() == 0 || g.done.load(std::memory_order_acquire) >= 1; };
  return done(f.cold) && done(f.loads);
}

void KvSpaceImpl::prepare(InFlight& f, std::span<KvRequest> batch, std::span<KvTrace> trace) {
  const std::size_t n = batch.size();
  f.batch = batch;
  f.trace = trace;
  f.ikeys.resize(n);
  f.handles.resize(n);
  f.owned.assign(n, 0);
  f.pending.clear();
  f.unadmitted.clear();
  f.first_error = Status::Ok();
  f.n_hot = f.n_miss = f.n_cold = f.retired_bytes = 0;
  f.fresh = true;
  f.part = participants_.acquire(&f.pslot);
  if (!trace.empty() && trace.size() != n) {
    f.trace = {};
    const Status bad = Status::InvalidArgument("a trace of " + std::to_string(trace.size()) +
                                               " entries for a batch of " + std::to_string(n) + " requests");
    for (std::uint32_t i = 0; i < n; ++i) {
      batch[i].found = false;
      batch[i].result.clear();
      f.fail(i, bad);
    }
    return;
  }
  f.pending.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) f.pending[i] = i;
}

bool KvSpaceImpl::admit(InFlight& f, std::uint32_t i) {
  KvRequest& r = f.batch[i];
  r.status = Status::Ok();
  r.found = false;
  r.result.clear();
  if (!f.trace.empty()) f.trace[i] = KvTrace{};
  if (r.op != KvRequest::Op::kGet && r.op != KvRequest::Op::kPut && r.op != KvRequest::Op::kDelete) {
    f.fail(i, Status::InvalidArgument("unknown operation"));
    return false;
  }
  if (r.key.size() > cfg_.limits.max_key_bytes) {
    f.fail(i, Status::TooLarge("key of " + std::to_string(r.key.size()) + " bytes is over the limit of " +
                               std::to_string(cfg_.limits.max_key_bytes)));
    return false;
  }
  if (r.op == KvRequest::Op::kPut && r.value.size() > cfg_.limits.max_value_bytes) {
    f.fail(i, Status::TooLarge("value of " + std::to_string(r.value.size()) + " bytes is over the limit of " +
                               std::to_string(cfg_.limits.max_value_bytes)));
    return false;
  }
  bool exists = true;
  Status s = index_key(dict_, r.key, r.op == KvRequest::Op::kPut, &f.ikeys[i], &exists);
  if (!s.ok()) {
    f.fail(i, s);
    return false;
  }
  if (!exists) {  // a long key never written: absent without asking anyone (it has no index
                  // key to route; all-hot reports it hot, the other modes cold)
    if (!f.trace.empty())
      f.answered(i, cfg_.router.mode == RouterMode::kAllHot ? KvPath::kHot : KvPath::kCold, now_ns());
    return false;
  }
  f.handles[i] = 0;
  if (r.op != KvRequest::Op::kPut) return true;
  s = make_value(r.value, budget_, &f.handles[i]);
  if (!s.ok()) {
    // Over budget: blocks replaced earlier may be waiting for their epoch, which this round's
    // pin holds back. Try again after the round, unpinned (admit_waiting).
    if (s.code() == StatusCode::kResourceExhausted) f.unadmitted.push_back(i);
    else f.fail(i, s);
    return false;
  }
  f.owned[i] = is_block(f.handles[i]);
  return true;
}

bool KvSpaceImpl::admit_waiting(InFlight& f, std::uint32_t i) {
  Status s = make_value(f.batch[i].value, budget_, &f.handles[i]);
  // Advance the epochs (three attempts: a block is freed two epochs after its retirement)
  // and try again.
  for (int attempt = 0; !s.ok() && s.code() == StatusCode::kResourceExhausted && attempt < 3; ++attempt) {
    f.part->collect();
    participants_.collect_idle();
    s = make_value(f.batch[i].value, budget_, &f.handles[i]);
  }
  if (!s.ok()) {
    f.fail(i, s);
    return false;
  }
  f.owned[i] = is_block(f.handles[i]);
  return true;
}

void KvSpaceImpl::start_round(InFlight& f) {
  f.next.clear();
  f.cold.clear();
  f.loads.clear();
  f.cold_idx.clear();
  f.load_idx.clear();
  f.load_for_update.clear();
  // Pin before entering the gate. A batch that entered epoch e may route with e's model after
  // a switch installed e + 1 (the drain waits for it), and so read a Hot Cache entry that the
  // new model calls cold, whose block a batch of e + 1 may already have replaced in the store
  // and retired. That retirement comes after the advance, which comes after this batch's
  // entry, so a pin taken before the entry is older than the retirement and keeps the block.
  // Pinned after the entry, the pin could be newer, and the block freed under the reader.
  DUET_CHECK(!f.pin, "a batch's round pinned while its previous round's pin is still held");
  f.pin.emplace(f.part->pin());
  f.ticket = gate_.enter();
#if DUET_CHECKS
  if (auto* hook = round_entry_hook.load(std::memory_order_relaxed)) hook();
#endif
  const RouterModel* model = models_[f.ticket.epoch & 1].load(std::memory_order_acquire);
  // A model with nothing hot (an untrained one, a uniform workload, all-cold) routes every
  // request cold: no per-request lookup (a virtual call, a hash and a bitmap read each).
  const bool any_hot = model->hot_units() != 0;
#if DUET_CHECKS
  if (auto* hook = route_hook.load(std::memory_order_relaxed)) hook(any_hot);
#endif
  const bool fresh = f.fresh;
  f.fresh = false;
  // Each request is sampled once, in its first round.
  const bool sampling = fresh && cfg_.router.mode == RouterMode::kLearned;
  const std::uint32_t sample_every = std::max<std::uint32_t>(cfg_.router.sample_every, 1);
  thread_local std::uint32_t sample_tick = 0;
  // Samples are added to the shadow counts in groups, whose counter misses overlap.
  std::uint64_t samples[ShadowCounts::kManyMax];
  std::size_t nsamples = 0;
  // Traced hot answers are stamped per group of kStampGroup routed requests, one clock read
  // each (a read per request cost a few percent of a GET), so a hot answer waits neither for
  // the cold part nor for the routing of more than a group of requests after it.
  constexpr std::size_t kStampGroup = 32;
  const bool traced = !f.trace.empty();
  std::uint32_t unstamped[kStampGroup];
  std::size_t nunstamped = 0;
  auto stamp = [&] {
    if (nunstamped == 0) return;
    const std::uint64_t t = now_ns();
    for (std::size_t j = 0; j < nunstamped; ++j) f.trace[unstamped[j]].done_ns = t;
    nunstamped = 0;
  };
  auto answered_hot = [&](std::uint32_t i) {
    ++f.n_hot;
    if (!traced) return;
    f.trace[i].path = KvPath::kHot;
    unstamped[nunstamped++] = i;
  };
  // The pass runs in two stages kAhead requests apart: the first admits a request (first
  // round), classifies it and, when it is hot, starts loading its Hot Cache bucket; the second
  // samples, routes and answers it. So a batch's cache misses overlap instead of stalling the
  // pass one by one (hot buckets miss the caches once the Hot Cache outgrows them, and keys
  // that need the dictionary cost a miss or two each, started a few requests earlier still).
  // A histogram model is called directly, without the virtual call.
  constexpr std::size_t kAhead = 8, kRing = 16;
  static_assert(kRing >= kAhead + 1 && (kRing & (kRing - 1)) == 0);
  const auto* histogram = dynamic_cast<const HistogramModel*>(model);
  std::uint8_t ring[kRing];  // per request in flight between the stages: 0 skip, 1 cold, 2 hot
  const std::size_t npending = f.pending.size();
  auto prefetch_key = [&](std::size_t k) {
    std::uint64_t unused;
    if (k < npending && !inline_key(f.batch[f.pending[k]].key, &unused)) dict_.prefetch(f.batch[f.pending[k]].key);
  };
  auto classify = [&](std::size_t k) {
    const std::uint32_t i = f.pending[k];
    if (fresh) {
      prefetch_key(k + kAhead);
      if (!admit(f, i)) {
        ring[k % kRing] = 0;
        return;
      }
    }
    const std::uint64_t ikey = f.ikeys[i];
    const bool hot = any_hot && (histogram ? histogram->hot(ikey) : model->hot(ikey));
    if (hot) hot_.prefetch(ikey);
    ring[k % kRing] = hot ? 2 : 1;
  };
  if (fresh)
    for (std::size_t k = 0; k < kAhead; ++k) prefetch_key(k);
  for (std::size_t k = 0; k < kAhead && k < npending; ++k) classify(k);

  // Hot requests are answered here; cold ones and loads go to the Canonical Store as one group
  // each when the pass ends.
  for (std::size_t k = 0; k < npending; ++k) {
    if (k % kStampGroup == 0) stamp();
    if (k + kAhead < npending) classify(k + kAhead);
    const std::uint8_t route = ring[k % kRing];
    if (route == 0) continue;
    const std::uint32_t i = f.pending[k];
    const std::uint64_t ikey = f.ikeys[i];
    if (sampling && ++sample_tick >= sample_every) {
      sample_tick = 0;
      samples[nsamples++] = ikey;
      if (nsamples == ShadowCounts::kManyMax) {
        shadow_.sample_many(samples, nsamples);
        nsamples = 0;
      }
    }
    KvRequest& r = f.batch[i];
    if (route == 1) {
      f.cold.add(to_lslab(r.op), ikey, f.handles[i]);
      f.cold_idx.push_back(i);
      continue;
    }
    if (traced) f.trace[i].path = KvPath::kHot;
    if (r.op == KvRequest::Op::kGet) {
      std::uint64_t h;
      const HotCache::Found found = hot_.get(ikey, &h);
      if (found == HotCache::Found::kValue) check_found_value(h, f.part, "a hot read of the Hot Cache");
      if (found != HotCache::Found::kMiss) {
        r.found = found == HotCache::Found::kValue;
        if (r.found) append_value(h, &r.result);
        answered_hot(i);
        continue;
      }
      // Not resident: load it (unless a switch blocks loads: then in the next round).
      if (blocked_.load(std::memory_order_seq_cst)) {
        f.next.push_back(i);
      } else {
        f.loads.add(lslab::Op::kGet, ikey, 0);
        f.load_idx.push_back(i);
        f.load_for_update.push_back(0);
      }
      continue;
    }
    // A hot update: registered as a writer so a switch can wait for it.
    if (blocked_.load(std::memory_order_seq_cst)) {
      f.next.push_back(i);
      continue;
    }
    hot_writers_.add(1);
    if (blocked_.load(std::memory_order_seq_cst)) {
      hot_writers_.add(-1);
      f.next.push_back(i);
      continue;
    }
    std::uint64_t prev = 0;
    bool prev_owned = false;
    const HotCache::Found found = hot_.update(ikey, r.op == KvRequest::Op::kDelete, f.handles[i], &prev, &prev_owned);
    hot_writers_.add(-1);
    if (found == HotCache::Found::kMiss) {  // not resident: load it, then retry the update
      f.loads.add(lslab::Op::kGet, ikey, 0);
      f.load_idx.push_back(i);
      f.load_for_update.push_back(1);
      continue;
    }
    f.owned[i] = 0;  // published in the cache
    if (found == HotCache::Found::kValue) {
      check_found_value(prev, f.part, "a hot write (the value it replaced)");
      r.found = true;
      if (r.want_previous) append_value(prev, &r.result);
      if (prev_owned && is_block(prev)) f.retire_block(prev, "a hot write replacing a dirty value");
    }
    answered_hot(i);
  }
  stamp();
  if (nsamples) shadow_.sample_many(samples, nsamples);
  auto send = [&](RequestGroup& g) {  // the group holds the epoch until the store has run it
    gate_.hold(f.ticket);
    g.gate = &gate_;
    g.gate_ticket = f.ticket;
    store_->submit(g);
  };
  if (f.cold.size() > 0) send(f.cold);
  if (f.loads.size() > 0) send(f.loads);
  gate_.leave(f.ticket);  // routing is done; the groups keep their own holds
}

void KvSpaceImpl::complete_round(InFlight& f) {
  if (f.cold.size() > 0) {
    store_->wait(f.cold);
    const bool traced = !f.trace.empty();
    const std::uint64_t t = traced ? now_ns() : 0;
    const RequestGroup& g = f.cold;
    const bool outcomes = g.error.ok() || g.error.code() == StatusCode::kResourceExhausted;
    // The values found are out-of-line blocks that the store's walk did not touch: start loading
    // a few requests ahead, so that their cache misses overlap instead of stalling each copy.
    constexpr std::size_t kValueAhead = 8;
    auto prefetch_value = [&](std::size_t j) {
      if (j < g.size() && g.status[j] == lslab::OpStatus::kFound) prefetch_value_block(g.out[j]);
    };
    if (outcomes)
      for (std::size_t j = 0; j < kValueAhead; ++j) prefetch_value(j);
    for (std::size_t j = 0; j < g.size(); ++j) {
      if (outcomes) prefetch_value(j + kValueAhead);
      const std::uint32_t i = f.cold_idx[j];
      KvRequest& r = f.batch[i];
      if (traced) f.trace[i].path = KvPath::kCold;
      if (!outcomes) {
        // The device failed: the request may or may not have been applied; its value block
        // may be published, so it is not freed.
        f.owned[i] = 0;
        f.fail(i, g.error);
        continue;
      }
      const lslab::OpStatus st = g.status[j];
      if (st == lslab::OpStatus::kRetry) {
        f.fail(i, g.error.ok() ? Status::ResourceExhausted("canonical store is full") : g.error);
        continue;
      }
      if (st == lslab::OpStatus::kInvalid) {
        f.fail(i, Status::Internal("canonical store rejected an index key"));
        continue;
      }
      const bool found = st == lslab::OpStatus::kFound;
      const std::uint64_t out = g.out[j];
      if (found) check_found_value(out, f.part, "a cold request to the Canonical Store");
      r.found = found;
      if (found && (r.op == KvRequest::Op::kGet || r.want_previous)) append_value(out, &r.result);
      if (r.op != KvRequest::Op::kGet && found && is_block(out)) f.retire_block(out, "a cold write");
      if (r.op == KvRequest::Op::kPut) f.owned[i] = 0;
      if (traced) f.trace[i].done_ns = t;
      ++f.n_cold;
    }
  }
  if (f.loads.size() > 0) {
    store_->wait(f.loads);
    const bool traced = !f.trace.empty();
    const std::uint64_t t = traced ? now_ns() : 0;
    const RequestGroup& g = f.loads;
    const bool outcomes = g.error.ok() || g.error.code() == StatusCode::kResourceExhausted;
    for (std::size_t j = 0; j < g.size(); ++j) {
      const std::uint32_t i = f.load_idx[j];
      KvRequest& r = f.batch[i];
      if (!outcomes || g.status[j] == lslab::OpStatus::kInvalid || g.status[j] == lslab::OpStatus::kRetry) {
        f.fail(i, outcomes ? Status::Internal("canonical store refused a load") : g.error);
        continue;
      }
      const bool found = g.status[j] == lslab::OpStatus::kFound;
      const std::uint64_t out = g.out[j];
      if (found) check_found_value(out, f.part, "a load from the Canonical Store");
      hot_.populate(f.ikeys[i], found, out, gate_.epoch(), f.ticket.epoch, f.part);
      ++f.n_miss;
      if (!f.load_for_update[j]) {
        r.found = found;
        if (found) append_value(out, &r.result);
        if (traced) f.trace[i].done_ns = t;
        ++f.n_hot;
      } else {
        f.next.push_back(i);  // the key is resident now (or a switch intervened): retry
      }
    }
    if (const std::uint64_t grows = hot_.grows();
        grows != logged_grows_.load(std::memory_order_relaxed) &&  // a shared read on the common path
        logged_grows_.exchange(grows, std::memory_order_relaxed) != grows) {
      const HotCache::GrowTimes t = hot_.last_grow();
      duet::log(LogLevel::kDebug, "kv '" + name_ + "': Hot Cache grew to " + std::to_string(t.buckets) + " buckets (" +
                                      std::to_string(t.entries) + " entries): copied in " + std::to_string(t.copy_us) +
                                      " us beside writers, then " + std::to_string(t.recopied) +
                                      " buckets again with writers held off for " + std::to_string(t.blocked_us) + " us");
    }
  }
  f.pin.reset();
}

Status KvSpaceImpl::finish_batch(InFlight& f) {
  if (!f.pending.empty()) {
    complete_round(f);
    for (;;) {
      // Writes whose value block waited for the budget, now unpinned and outside the gate.
      for (std::uint32_t i : f.unadmitted)
        if (admit_waiting(f, i)) f.next.push_back(i);
      f.unadmitted.clear();
      if (f.next.empty()) break;
      // Wait outside the gate while a switch blocks hot updates and loads.
      while (blocked_.load(std::memory_order_acquire)) blocked_.wait(true, std::memory_order_acquire);
      f.pending.swap(f.next);
      start_round(f);
      complete_round(f);
    }
  }
  std::int64_t key_delta = 0;
  for (std::size_t i = 0; i < f.batch.size(); ++i) {
    if (f.owned[i]) free_value_block(reinterpret_cast<void*>(f.handles[i]));
    const KvRequest& r = f.batch[i];
    if (!r.status.ok()) continue;
    if (r.op == KvRequest::Op::kPut && !r.found) ++key_delta;
    else if (r.op == KvRequest::Op::kDelete && r.found) --key_delta;
  }
  if (key_delta) keys_.add(key_delta);
  // Blocks this batch retired wait for their epoch; when they are large, try to free them now
  // rather than after the participant's next 64 retirements (large values add up fast).
  if (f.retired_bytes >= (1u << 20)) f.part->collect();
  participants_.release(f.pslot);
  f.part = nullptr;
  if (f.n_hot) hot_requests_.fetch_add(f.n_hot, std::memory_order_relaxed);
  if (f.n_miss) hot_misses_.fetch_add(f.n_miss, std::memory_order_relaxed);
  if (f.n_cold) cold_requests_.fetch_add(f.n_cold, std::memory_order_relaxed);
  if (f.start_ns) {  // adaptive routing's measure: every request waited for the whole batch
    const std::int64_t n = static_cast<std::int64_t>(f.batch.size());
    latency_ns_.add(static_cast<std::int64_t>(now_ns() - f.start_ns) * n);
    latency_requests_.add(n);
  }
  f.owner = nullptr;
  f.batch = {};
  f.trace = {};
  return f.first_error;
}

std::unique_ptr<RouterModel> KvSpaceImpl::train_candidate() {
  switch (cfg_.router.mode) {
    case RouterMode::kAllHot: return std::make_unique<ConstantModel>(true);
    case RouterMode::kAllCold: return std::make_unique<ConstantModel>(false);
    default: break;
  }
  std::vector<std::uint32_t> counts = shadow_.take();
  std::uint64_t fresh = 0;
  for (std::uint32_t c : counts) fresh += c;
  if (fresh < cfg_.router.train_requests) {
    // Too little new evidence (an explicit switch just after an automatic one, say): build on
    // the live model's training counts too, so that the switch re-applies the threshold to
    // what was learned instead of forgetting it.
    const auto* live = dynamic_cast<const HistogramModel*>(models_[gate_.epoch().load() & 1].load());
    if (live && live->training_counts().size() == counts.size())
      for (std::size_t b = 0; b < counts.size(); ++b)
        counts[b] = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(std::uint64_t{counts[b]} + live->training_counts()[b], UINT32_MAX));
  }
  return std::make_unique<HistogramModel>(counts, threshold_.load(std::memory_order_relaxed));
}

Status KvSpaceImpl::switch_model() {
  std::lock_guard<std::mutex> lk(switch_mutex_);
  Status s = switch_locked(train_candidate());
  // An explicit switch installs the learned model; adaptive routing re-measures from there.
  if (s.ok() && adaptive_) {
    chooser_.installed(ModeChooser::Mode::kLearned, now_ns());
    choice_.store(static_cast<std::uint8_t>(ModeChooser::Mode::kLearned), std::memory_order_relaxed);
  }
  return s;
}

std::unique_ptr<RouterModel> KvSpaceImpl::learned_candidate() {
  if (parked_ && shadow_.approximate_total() < cfg_.router.train_requests) return std::move(parked_);
  parked_.reset();
  return train_candidate();
}

void KvSpaceImpl::adapt_step() {
  const RouterModel* live = models_[gate_.epoch().load() & 1].load();
  const ModeChooser::Action a =
      chooser_.step(now_ns(), {static_cast<std::uint64_t>(latency_requests_.sum()),
                               static_cast<std::uint64_t>(latency_ns_.sum())});
  Status s;
  if (a == ModeChooser::Action::kInstallAllCold || a == ModeChooser::Action::kInstallAllHot) {
    if (const auto* learned = dynamic_cast<const HistogramModel*>(live))
      parked_ = std::make_unique<HistogramModel>(*learned);
    s = switch_locked(std::make_unique<ConstantModel>(a == ModeChooser::Action::kInstallAllHot));
  } else if (a == ModeChooser::Action::kInstallLearned) {
    s = switch_locked(learned_candidate());
  }
  if (!s.ok()) duet::log(LogLevel::kWarn, "kv '" + name_ + "': adaptive routing's switch failed: " + s.to_string());
  if (chooser_.probes() != probes_.load(std::memory_order_relaxed))
    duet::log(LogLevel::kDebug,
              "kv '" + name_ + "': probe " + std::to_string(chooser_.probes()) + ": " +
                  ModeChooser::name(chooser_.chosen()) + " now; last windows " +
                  std::to_string(chooser_.last_requests(0)) + " and " + std::to_string(chooser_.last_requests(1)) +
                  " requests; " + ModeChooser::name(chooser_.last_probed()) + " " +
                  std::to_string(chooser_.measured_ns(chooser_.last_probed()) / 1e3) + " us per request");
  const std::uint8_t chosen = static_cast<std::uint8_t>(chooser_.chosen());
  if (choice_.exchange(chosen, std::memory_order_relaxed) != chosen)
    duet::log(LogLevel::kInfo, "kv '" + name_ + "': routing " + ModeChooser::name(chooser_.chosen()) +
                                   " (mean latency per request last measured: learned " +
                                   std::to_string(chooser_.measured_ns(ModeChooser::Mode::kLearned) / 1e3) +
                                   " us, all-cold " +
                                   std::to_string(chooser_.measured_ns(ModeChooser::Mode::kAllCold) / 1e3) +
                                   " us, all-hot " +
                                   std::to_string(chooser_.measured_ns(ModeChooser::Mode::kAllHot) / 1e3) + " us)");
  choice_changes_.store(chooser_.changes(), std::memory_order_relaxed);
  probes_.store(chooser_.probes(), std::memory_order_relaxed);
  learned_ns_.store(chooser_.measured_ns(ModeChooser::Mode::kLearned), std::memory_order_relaxed);
  all_cold_ns_.store(chooser_.measured_ns(ModeChooser::Mode::kAllCold), std::memory_order_relaxed);
  all_hot_ns_.store(chooser_.measured_ns(ModeChooser::Mode::kAllHot), std::memory_order_relaxed);
}

Status KvSpaceImpl::set_threshold(double threshold) {
  if (!(threshold >= 0))
    return Status::InvalidArgument("router threshold must be >= 0, got " + std::to_string(threshold));
  threshold_.store(threshold, std::memory_order_relaxed);
  return Status::Ok();
}

void KvSpaceImpl::block() {
  blocked_.store(true, std::memory_order_seq_cst);
  while (hot_writers_.sum() != 0) std::this_thread::yield();
}

void KvSpaceImpl::unblock() {
  blocked_.store(false, std::memory_order_seq_cst);
  blocked_.notify_all();
}

Status KvSpaceImpl::checkpoint() {
  std::lock_guard<std::mutex> lk(switch_mutex_);
  std::size_t early = 0;
  if (Status s = replay_early(&early); !s.ok()) return s;
  const std::uint64_t t0 = now_ns();
  block();
  std::size_t late = 0;
  Status s = replay_log(&late);
  unblock();
  const std::uint64_t blocked_us = (now_ns() - t0) / 1000;
  raise_to(longest_block_us_, blocked_us);
  duet::log(blocked_us >= 1'000'000 ? LogLevel::kWarn : LogLevel::kDebug,
            "kv '" + name_ + "': checkpoint replayed " + std::to_string(early) + " keys early and " +
                std::to_string(late) + " with hot updates blocked for " + std::to_string(blocked_us) + " us" +
                (s.ok() ? std::string() : "; the blocked replay failed: " + s.to_string()));
  return s;
}

std::uint64_t KvSpaceImpl::size() const {
  const std::int64_t n = keys_.sum();
  return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

Status KvSpaceImpl::scan(std::uint64_t cursor, std::size_t count, std::vector<std::string>* keys,
                         std::uint64_t* next) {
  *next = 0;
  if (cursor == 0 && size() == 0) return Status::Ok();  // no key exists: nothing to walk
  if (cursor == 0) {
    // Keys written through the Hot Cache reach the store at a replay; after this one, every
    // key that exists now is in the store until it is deleted.
    Status s = checkpoint();
    if (!s.ok()) return s;
  }
  count = std::max<std::size_t>(count, 1);
  std::vector<std::uint64_t> ikeys, handles;
  std::uint64_t at = cursor;
  // Read slabs until about `count` keys were found; bound the slabs read per call so a call on
  // a sparse store stays short (it may then return no key and a cursor to continue from).
  const std::uint64_t max_slabs = std::max<std::uint64_t>(16384, 64 * count);
  std::uint64_t read = 0;
  do {
    const std::uint64_t piece = std::min<std::uint64_t>(std::max<std::uint64_t>(256, 2 * count), max_slabs - read);
    Status s = store_->export_range(at, piece, &ikeys, &handles, &at);
    if (!s.ok()) return s;
    read += piece;
  } while (at != 0 && ikeys.size() < count && read < max_slabs);
  std::string k;
  for (std::uint64_t ik : ikeys) {
    k.clear();
    if (decode_index_key(dict_, ik, &k)) keys->push_back(k);
  }
  *next = at;
  return Status::Ok();
}

Status KvSpaceImpl::replay_early(std::size_t* replayed) {
  *replayed = 0;
  // Each pass replays what the log held when it began; writers meanwhile dirty fewer keys than
  // a pass replays, so the log shrinks pass by pass, and a few passes leave little for the
  // replay under the block.
  for (int pass = 0; pass < kEarlyReplayPasses && hot_.log_size() >= kBlockedReplayKeys; ++pass) {
    const std::vector<HotCache::LogRecord> log = hot_.take_log();
    if (log.empty()) break;
    RequestGroup g;
    for (const auto& rec : log) g.add(rec.present ? lslab::Op::kPut : lslab::Op::kDelete, rec.ikey, rec.handle);
    store_->run(g);
    const bool outcomes = g.error.ok() || g.error.code() == StatusCode::kResourceExhausted;
    std::vector<std::uint8_t> applied(g.size(), 0);
    std::size_t applied_now = 0;
    std::size_t pslot;
    mem::EpochManager::Participant* part = participants_.acquire(&pslot);
    for (std::size_t j = 0; j < g.size(); ++j) {
      // A device failure leaves every outcome unknown (the store may hold any of the blocks):
      // the records go back to the cache, as after a failed blocked replay.
      if (!outcomes || g.status[j] == lslab::OpStatus::kRetry) continue;
      applied[j] = 1;
      ++applied_now;
      if (g.status[j] != lslab::OpStatus::kFound) continue;
      DUET_CHECK(g.out[j] != g.values[j] || !is_block(g.out[j]),
                 "early replay of key " + std::to_string(g.keys[j]) + " returned its own block as the previous value");
      if (g.out[j] != g.values[j]) retire_value_block(part, g.out[j], "the early replay of the hot log");
    }
    *replayed += applied_now;
    early_replayed_.fetch_add(applied_now, std::memory_order_relaxed);
    std::vector<std::uint64_t> orphans;
    hot_.settle_unapplied(log, applied, &orphans);
    // A block replaced in the cache during the pass and refused by the store belongs to no one.
    // After a device failure the store may hold it all the same: then it is leaked, never freed
    // under the store.
    if (outcomes)
      for (std::uint64_t h : orphans)
        if (is_block(h)) retire_value_block(part, h, "an early replay's value the store could not take");
    participants_.release(pslot);
    if (!outcomes) return Status(g.error.code(), "early replay of the hot log failed: " + g.error.message());
    if (applied_now < g.size()) break;  // the store is full: the blocked replay reports it
  }
  return Status::Ok();
}

Status KvSpaceImpl::replay_log(std::size_t* replayed) {
  if (replayed) *replayed = 0;
  const std::vector<HotCache::LogRecord> log = hot_.log_snapshot();
  if (log.empty()) return Status::Ok();
  RequestGroup g;
  for (const auto& rec : log) g.add(rec.present ? lslab::Op::kPut : lslab::Op::kDelete, rec.ikey, rec.handle);
  store_->run(g);
  if (!g.error.ok() && g.error.code() != StatusCode::kResourceExhausted) {
    // The store failed and the replay's outcomes are unknown: the cache stays authoritative
    // for its keys.
    return Status(g.error.code(), "replay of the hot log failed: " + g.error.message());
  }
  // Entries whose replay was applied now share their block with the store: mark them clean
  // (a later replay must not hand the store the same block again) and retire what they replaced.
  std::vector<std::uint64_t> applied;
  applied.reserve(g.size());
  std::size_t pslot;
  mem::EpochManager::Participant* part = participants_.acquire(&pslot);
  for (std::size_t j = 0; j < g.size(); ++j) {
    if (g.status[j] == lslab::OpStatus::kRetry) continue;
    applied.push_back(g.keys[j]);
    if (g.status[j] != lslab::OpStatus::kFound) continue;
    // The store's previous value, now replaced by the cache's. It is the block just replayed
    // only if the log held the key twice, which log_snapshot() rules out; never retire a
    // block the store still holds.
    DUET_CHECK(g.out[j] != g.values[j] || !is_block(g.out[j]),
               "replay of key " + std::to_string(g.keys[j]) + " returned its own block as the previous value");
    if (g.out[j] != g.values[j]) retire_value_block(part, g.out[j], "the replay of the hot log");
  }
  participants_.release(pslot);
  if (replayed) *replayed = applied.size();
  blocked_replayed_.fetch_add(applied.size(), std::memory_order_relaxed);
  hot_.mark_replayed(applied);
  if (applied.size() < g.size())  // the rest stay dirty in the log, for the next replay
    return Status::ResourceExhausted("the canonical store cannot grow for the replay of the hot log (" +
                                     std::to_string(g.size() - applied.size()) + " keys left in the log)");
  return Status::Ok();
}

Status KvSpaceImpl::switch_locked(std::unique_ptr<RouterModel> next) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto us_since = [](Clock::time_point a) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - a).count());
  };
  // 0. Replay most of the update log while updates still run, so that the replay under the
  //    block (which every hot update and load waits for) is short whatever the log held.
  std::size_t early = 0;
  if (Status s = replay_early(&early); !s.ok()) return Status(s.code(), "model switch: " + s.message());
  const std::uint64_t early_us = us_since(t0);
  // 1. Block hot updates and loads; wait for the updates already running.
  const auto tb = Clock::now();
  block();
  const std::uint64_t block_us = us_since(tb);
  // 2. Replay the update log into the Canonical Store. On failure nothing is installed.
  const auto t1 = Clock::now();
  std::size_t replayed = 0;
  const Status replay = replay_log(&replayed);
  if (!replay.ok()) {
    unblock();
    const std::uint64_t blocked_us = us_since(tb);
    raise_to(longest_block_us_, blocked_us);
    duet::log(blocked_us >= 1'000'000 ? LogLevel::kWarn : LogLevel::kDebug,
              "kv '" + name_ + "': a switch's replay failed after blocking hot updates for " +
                  std::to_string(blocked_us) + " us: " + replay.to_string());
    return Status(replay.code(), "model switch: " + replay.message());
  }
  const std::uint64_t replay_us = us_since(t1);
  // 3. Install the new model; wait until nothing routed by the old one is in flight.
  const auto t2 = Clock::now();
  const std::uint64_t e = gate_.epoch().load();
  const RouterModel* installed = next.get();
  model_slots_[(e + 1) & 1] = std::move(next);
  models_[(e + 1) & 1].store(installed, std::memory_order_release);
  gate_.advance();
  gate_.drain(e);
  unblock();
  const std::uint64_t drain_us = us_since(t2);
  // 4. Evict keys the new model calls cold (all clean: they were replayed or loaded).
  const auto t3 = Clock::now();
  const std::uint64_t evicted = hot_.evict_if([installed](std::uint64_t ikey) { return !installed->hot(ikey); });
  const std::uint64_t evict_us = us_since(t3);
  last_switch_ = Clock::now();
  const std::uint64_t total_us = us_since(t0);
  last_switch_us_.store(total_us, std::memory_order_relaxed);
  raise_to(longest_switch_us_, total_us);
  // Hot updates and loads wait from step 1 to the end of step 3: that is what requests feel.
  const std::uint64_t blocked_us = block_us + replay_us + drain_us;
  raise_to(longest_block_us_, blocked_us);
  switches_.fetch_add(1, std::memory_order_relaxed);
  const std::string parts = " (replayed " + std::to_string(early) + " keys early in " + std::to_string(early_us) +
                            " us; hot updates blocked " + std::to_string(blocked_us) + " us: waiting for writers " +
                            std::to_string(block_us) + ", replaying " + std::to_string(replayed) + " keys " +
                            std::to_string(replay_us) + ", draining " + std::to_string(drain_us) + "; then evicting " +
                            std::to_string(evicted) + " keys " + std::to_string(evict_us) + " us)";
  // A switch that holds requests for long is worth a line at the default level.
  duet::log(blocked_us >= 1'000'000 ? LogLevel::kWarn : LogLevel::kDebug,
            "kv '" + name_ + "': installed " + installed->describe() + " in " + std::to_string(total_us) + " us" + parts);
  return Status::Ok();
}

void KvSpaceImpl::auto_switch_loop() {
  std::unique_lock<std::mutex> lk(auto_m_);
  // Adaptive routing's windows are measured in ticks of a fifth of a window.
  const auto tick = std::chrono::milliseconds(
      adaptive_ ? std::clamp<std::uint32_t>(cfg_.router.adapt_window_ms / 5, 1, 20) : 20);
  while (!auto_cv_.wait_for(lk, tick, [&] { return auto_stop_; })) {
    if (adaptive_) {
      std::lock_guard<std::mutex> sl(switch_mutex_);
      adapt_step();
      // While a probe runs or a constant routing is chosen, the learned model is not
      // retrained (the samples keep accumulating for when it returns).
      if (chooser_.probing() || chooser_.chosen() != ModeChooser::Mode::kLearned) continue;
    }
    if (shadow_.approximate_total() < cfg_.router.train_requests) continue;
    std::lock_guard<std::mutex> sl(switch_mutex_);
    if (std::chrono::steady_clock::now() - last_switch_ < std::chrono::milliseconds(cfg_.router.min_switch_interval_ms))
      continue;
    std::unique_ptr<RouterModel> candidate = train_candidate();
    const RouterModel* live = models_[gate_.epoch().load() & 1].load();
    if (live && candidate->similarity(*live) >= 0.9) {
      last_switch_ = std::chrono::steady_clock::now();  // nothing worth a switch; keep training
      continue;
    }
    Status s = switch_locked(std::move(candidate));
    if (!s.ok()) duet::log(LogLevel::kWarn, "kv '" + name_ + "': automatic model switch failed: " + s.to_string());
    else if (adaptive_) chooser_.installed(ModeChooser::Mode::kLearned, now_ns());
  }
}

KvStats KvSpaceImpl::stats() const {
  KvStats s;
  s.hot_requests = hot_requests_.load(std::memory_order_relaxed);
  s.hot_misses = hot_misses_.load(std::memory_order_relaxed);
  s.cold_requests = cold_requests_.load(std::memory_order_relaxed);
  s.batches = store_->batches();
  s.batched_requests = store_->batched_requests();
  s.store_busy_ns = store_->busy_ns();
  s.model_switches = switches_.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lk(switch_mutex_);  // no switch frees the model meanwhile
    const RouterModel* live = models_[gate_.epoch().load() & 1].load();
    s.hot_bins = live ? live->hot_units() : 0;
    s.router_model = live ? live->describe() : "";
  }
  s.hot_entries = hot_.size();
  s.hot_grows = hot_.grows();
  s.hot_grow_recopied = hot_.grow_recopied_buckets();
  s.hot_grow_longest_blocked_us = hot_.longest_grow_blocked_us();
  s.last_switch_us = last_switch_us_.load(std::memory_order_relaxed);
  s.longest_switch_us = longest_switch_us_.load(std::memory_order_relaxed);
  s.longest_switch_block_us = longest_block_us_.load(std::memory_order_relaxed);
  s.replayed_early = early_replayed_.load(std::memory_order_relaxed);
  s.replayed_blocked = blocked_replayed_.load(std::memory_order_relaxed);
  s.memory_bytes = budget_->used();
  s.store_backend = store_->backend();
  if (adaptive_) {
    s.router_choice = ModeChooser::name(static_cast<ModeChooser::Mode>(choice_.load(std::memory_order_relaxed)));
    s.router_choice_changes = choice_changes_.load(std::memory_order_relaxed);
    s.router_probes = probes_.load(std::memory_order_relaxed);
    s.learned_us_per_request = learned_ns_.load(std::memory_order_relaxed) / 1e3;
    s.all_cold_us_per_request = all_cold_ns_.load(std::memory_order_relaxed) / 1e3;
    s.all_hot_us_per_request = all_hot_ns_.load(std::memory_order_relaxed) / 1e3;
  } else {
    s.router_choice = router_mode_name(cfg_.router.mode);
  }
  return s;
}

}  // namespace duet::kv
