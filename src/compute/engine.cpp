// Engine, Context and Batcher: argument checks, the stream pool, and dispatch to the CPU or GPU
// backend (internal.hpp).
#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/ascii.hpp"
#include "common/log.hpp"
#include "compute/internal.hpp"
#include "sched/thread_pool.hpp"

namespace duet::compute {

using detail::AggOut;
using detail::BoundAgg;
using detail::BoundPred;
using detail::BoundSortKey;

const char* device_name(Device d) {
  switch (d) {
    case Device::kAuto: return "auto";
    case Device::kCpu: return "cpu";
    case Device::kGpu: return "gpu";
  }
  return "?";
}

bool parse_device(std::string_view text, Device* out) {
  for (Device d : {Device::kAuto, Device::kCpu, Device::kGpu}) {
    const std::string_view name = device_name(d);
    if (iequals(text, name)) {
      *out = d;
      return true;
    }
  }
  return false;
}

struct Engine::Impl {
  EngineConfig config;
  std::unique_ptr<sched::ThreadPool> pool;
  bool gpu = false;
  std::string gpu_reason;
  // The stream pool: lanes (a stream with its scratch memory), created on demand up to
  // max_streams, each leased to one context at a time.
  std::mutex m;
  std::condition_variable freed;
  std::vector<Context::Lane*> all, idle;
  unsigned leased = 0, creating = 0;
  // Loaded models and their device copies.
  mutable std::mutex models_m;
  std::deque<Mlp> models;  // deque: addresses stay put as models are added
  std::vector<void*> handles;

  detail::Cpu cpu() const { return detail::Cpu{pool.get(), config.cpu_grain}; }

  Status lease(Context::Lane** out) {
    std::unique_lock<std::mutex> lk(m);
    for (;;) {
      if (!idle.empty()) {
        *out = idle.back();
        idle.pop_back();
        ++leased;
        return Status::Ok();
      }
      if (all.size() + creating < config.max_streams) {
        // The slot is claimed before the lock is dropped, so concurrent leases never create
        // more than max_streams lanes.
        ++creating;
        lk.unlock();
        Context::Lane* l = nullptr;
        Status s = detail::gpu::lane_create(&l);
        lk.lock();
        --creating;
        if (!s.ok()) {
          freed.notify_one();  // a waiter may create one in its place
          return s;
        }
        all.push_back(l);
        ++leased;
        *out = l;
        return Status::Ok();
      }
      freed.wait(lk);
    }
  }
  void give_back(Context::Lane* l) {
    {
      std::lock_guard<std::mutex> lk(m);
      idle.push_back(l);
      --leased;
    }
    freed.notify_one();
  }
  ~Impl() {
    for (Context::Lane* l : all) detail::gpu::lane_destroy(l);
    for (void* h : handles) detail::gpu::model_free(h);
  }
};

Status Engine::open(const EngineConfig& config, std::shared_ptr<Engine>* out) {
  if (!out) return Status::InvalidArgument("compute: null output");
  if (config.max_streams < 1 || config.max_streams > 1024)
    return Status::InvalidArgument("compute: max_streams must be 1..1024");
  if (config.cpu_threads > 1024) return Status::InvalidArgument("compute: cpu_threads must be 0..1024");
  if (config.device > Device::kGpu) return Status::InvalidArgument("compute: unknown device");
  std::shared_ptr<Engine> e(new Engine());
  e->impl_ = std::make_unique<Impl>();
  e->config_ = config;
  e->impl_->config = config;
  e->impl_->config.cpu_grain = std::max<std::size_t>(config.cpu_grain, 1);
  e->impl_->gpu = detail::gpu::available(&e->impl_->gpu_reason);
  if (config.device == Device::kGpu && !e->impl_->gpu)
    return Status::Unavailable("compute: device gpu requested, but " + e->impl_->gpu_reason);
  e->device_ = (config.device == Device::kCpu || !e->impl_->gpu) ? Device::kCpu : Device::kGpu;
  e->impl_->pool = std::make_unique<sched::ThreadPool>(config.cpu_threads);
  *out = std::move(e);
  return Status::Ok();
}

Engine::~Engine() = default;

bool Engine::gpu_available() const { return impl_->gpu; }
unsigned Engine::cpu_threads() const { return impl_->pool->threads(); }

std::string Engine::describe() const {
  if (device_ == Device::kGpu)
    return "gpu: up to " + std::to_string(impl_->config.max_streams) + " streams, " + std::to_string(cpu_threads()) +
           " CPU threads";
  return "cpu: " + std::to_string(cpu_threads()) + " threads" +
         (impl_->gpu ? std::string() : " (" + impl_->gpu_reason + ")");
}

Status Engine::context(Device d, std::unique_ptr<Context>* out) {
  if (!out) return Status::InvalidArgument("compute: null output");
  if (d > Device::kGpu) return Status::InvalidArgument("compute: unknown device");
  if (d == Device::kAuto) d = device_;
  if (d == Device::kGpu && !impl_->gpu) return Status::InvalidArgument("compute: no GPU: " + impl_->gpu_reason);
  std::unique_ptr<Context> c(new Context());
  c->engine_ = this;
  c->device_ = d;
  *out = std::move(c);
  return Status::Ok();
}

Status Engine::load_model(const Mlp& m, ModelId* id) {
  if (!id) return Status::InvalidArgument("compute: null output");
  Status s = m.check();
  if (!s.ok()) return s;
  void* h = nullptr;
  if (impl_->gpu) {
    s = detail::gpu::model_upload(m, &h);
    if (!s.ok()) return s;
  }
  std::lock_guard<std::mutex> lk(impl_->models_m);
  impl_->models.push_back(m);
  impl_->handles.push_back(h);
  *id = static_cast<ModelId>(impl_->models.size() - 1);
  return Status::Ok();
}

const Mlp* Engine::model(ModelId id) const {
  std::lock_guard<std::mutex> lk(impl_->models_m);
  return id < impl_->models.size() ? &impl_->models[id] : nullptr;
}

Status Engine::gpu_bandwidth(double* h2d, double* d2d) {
  if (!h2d || !d2d) return Status::InvalidArgument("compute: null output");
  if (!impl_->gpu) return Status::Unavailable("compute: no GPU: " + impl_->gpu_reason);
  return detail::gpu::bandwidth(h2d, d2d);
}

unsigned Engine::streams_created() const {
  std::lock_guard<std::mutex> lk(impl_->m);
  return static_cast<unsigned>(impl_->all.size());
}
unsigned Engine::streams_leased() const {
  std::lock_guard<std::mutex> lk(impl_->m);
  return impl_->leased;
}

// ----- Context

Context::~Context() {
  if (lane_) engine_->impl()->give_back(lane_);
}

Status Context::lane() {
  if (lane_) return Status::Ok();
  return engine_->impl()->lease(&lane_);
}

namespace {

Status need_column(const Table& t, std::string_view name, const char* what, const Column** out) {
  const Column* c = t.get(name);
  if (!c) return Status::InvalidArgument(std::string("compute: ") + what + ": no column '" + std::string(name) + "'");
  *out = c;
  return Status::Ok();
}

Status need_integer(const Table& t, std::string_view name, const char* what, const Column** out) {
  Status s = need_column(t, name, what, out);
  if (!s.ok()) return s;
  if (!is_integer((*out)->type()))
    return Status::InvalidArgument(std::string("compute: ") + what + ": column '" + std::string(name) + "' is " +
                                   type_name((*out)->type()) + ", not an integer");
  return Status::Ok();
}

Status check_rows(std::size_t rows, const char* what) {
  if (rows >= 0xffffffffULL)
    return Status::InvalidArgument(std::string("compute: ") + what + ": tables hold fewer than 2^32-1 rows");
  return Status::Ok();
}

}  // namespace

Status Context::filter(const Table& t, std::span<const Predicate> preds, Selection* out) {
  if (!out) return Status::InvalidArgument("compute: filter: null output");
  Status s = check_rows(t.rows(), "filter");
  if (!s.ok()) return s;
  std::vector<BoundPred> bound;
  for (const Predicate& p : preds) {
    BoundPred b;
    s = need_column(t, p.column, "filter", &b.col);
    if (!s.ok()) return s;
    if (p.cmp > Cmp::kBetween) return Status::InvalidArgument("compute: filter: unknown comparison");
    b.cmp = p.cmp;
    b.i = p.i;
    b.i_hi = p.i_hi;
    b.f = p.f;
    b.f_hi = p.f_hi;
    if (b.col->type() == Type::kBytes) {
      const std::size_t w = b.col->width();
      if (p.s.size() > w || p.s_hi.size() > w)
        return Status::InvalidArgument("compute: filter: a bound is longer than column '" + p.column + "' (" +
                                       std::to_string(w) + " bytes)");
      b.s = p.s;
      b.s.resize(w, '\0');
      b.s_hi = p.s_hi;
      b.s_hi.resize(w, '\0');
    }
    bound.push_back(std::move(b));
  }
  if (device_ == Device::kCpu || t.rows() == 0) {
    detail::cpu::filter(engine_->impl()->cpu(), t.rows(), bound, out);
    return Status::Ok();
  }
  s = lane();
  if (!s.ok()) return s;
  return detail::gpu::filter(lane_, t.rows(), bound, out);
}

Status Context::project(const Table& t, const Selection& sel, std::span<const std::string> columns, Table* out) {
  if (!out) return Status::InvalidArgument("compute: project: null output");
  for (std::uint32_t r : sel)
    if (r >= t.rows())
      return Status::InvalidArgument("compute: project: row " + std::to_string(r) + " of a table of " +
                                     std::to_string(t.rows()));
  std::vector<std::size_t> idx;
  if (columns.empty()) {
    for (std::size_t i = 0; i < t.width(); ++i) idx.push_back(i);
  } else {
    for (const std::string& n : columns) {
      const int i = t.find(n);
      if (i < 0) return Status::InvalidArgument("compute: project: no column '" + n + "'");
      idx.push_back(static_cast<std::size_t>(i));
    }
  }
  Table result;
  for (std::size_t i : idx) {
    const Column& in = t.column(i);
    Column c(in.type(), in.width());
    Status s = c.resize(sel.size());
    if (!s.ok()) return s;
    if (device_ == Device::kCpu || sel.empty()) {
      detail::cpu::gather(engine_->impl()->cpu(), in, sel, &c);
    } else {
      s = lane();
      if (!s.ok()) return s;
      s = detail::gpu::gather(lane_, in, sel, &c);
      if (!s.ok()) return s;
    }
    s = result.add(t.name(i), std::move(c));
    if (!s.ok()) return s;  // a column named twice
  }
  *out = std::move(result);
  return Status::Ok();
}

Status Context::derive(const Table& t, const Expr& e, Column* out) {
  if (!out) return Status::InvalidArgument("compute: derive: null output");
  if (e.op > Expr::kMul) return Status::InvalidArgument("compute: derive: unknown operation");
  const Column* a = nullptr;
  const Column* b = nullptr;
  Status s = need_integer(t, e.a, "derive", &a);
  if (!s.ok()) return s;
  if (!e.b.empty()) {
    s = need_integer(t, e.b, "derive", &b);
    if (!s.ok()) return s;
  }
  const bool am = a->type() == Type::kMoney, bm = b && b->type() == Type::kMoney;
  Column c(am != bm ? Type::kMoney : Type::kInt64);
  s = c.resize(t.rows());
  if (!s.ok()) return s;
  if (device_ == Device::kCpu || t.rows() == 0) {
    detail::cpu::derive(engine_->impl()->cpu(), e.op, *a, b, e.k, &c);
  } else {
    s = lane();
    if (!s.ok()) return s;
    s = detail::gpu::derive(lane_, e.op, *a, b, e.k, &c);
    if (!s.ok()) return s;
  }
  *out = std::move(c);
  return Status::Ok();
}

Status Context::aggregate(const Table& t, const Selection* sel, std::span<const std::string> keys,
                          std::span<const Agg> aggs, Table* out) {
  if (!out) return Status::InvalidArgument("compute: aggregate: null output");
  Status s = check_rows(t.rows(), "aggregate");
  if (!s.ok()) return s;
  if (keys.size() > 4) return Status::InvalidArgument("compute: aggregate: at most 4 group keys");
  if (aggs.size() > 16) return Status::InvalidArgument("compute: aggregate: at most 16 aggregates");
  if (sel)
    for (std::uint32_t r : *sel)
      if (r >= t.rows()) return Status::InvalidArgument("compute: aggregate: selection row " + std::to_string(r) + " out of range");
  std::vector<const Column*> kc;
  for (const std::string& k : keys) {
    const Column* c = nullptr;
    s = need_integer(t, k, "aggregate", &c);
    if (!s.ok()) return s;
    kc.push_back(c);
  }
  std::vector<BoundAgg> ba;
  std::vector<std::string> names(keys.begin(), keys.end());
  for (const Agg& a : aggs) {
    if (a.op > Agg::kMax) return Status::InvalidArgument("compute: aggregate: unknown aggregate");
    if (a.name.empty()) return Status::InvalidArgument("compute: aggregate: an aggregate needs an output name");
    if (std::find(names.begin(), names.end(), a.name) != names.end())
      return Status::InvalidArgument("compute: aggregate: output column '" + a.name + "' named twice");
    names.push_back(a.name);
    BoundAgg b;
    b.op = a.op;
    if (a.op != Agg::kCount) {
      s = need_integer(t, a.column, "aggregate", &b.col);
      if (!s.ok()) return s;
    }
    ba.push_back(b);
  }
  AggOut r;
  const std::size_t n = sel ? sel->size() : t.rows();
  if (device_ == Device::kCpu || n == 0) {
    detail::cpu::aggregate(engine_->impl()->cpu(), t.rows(), sel, kc, ba, &r);
  } else {
    s = lane();
    if (!s.ok()) return s;
    s = detail::gpu::aggregate(lane_, t.rows(), sel, kc, ba, &r);
    if (!s.ok()) return s;
  }
  Table result;
  for (std::size_t j = 0; j < kc.size(); ++j) {
    s = result.add(std::string(keys[j]), Column::of_int64(r.keys[j], kc[j]->type()));
    if (!s.ok()) return s;
  }
  for (std::size_t j = 0; j < ba.size(); ++j) {
    const Type ty = ba[j].op == Agg::kCount ? Type::kInt64 : ba[j].col->type();
    s = result.add(aggs[j].name, Column::of_int64(r.vals[j], ty));
    if (!s.ok()) return s;
  }
  *out = std::move(result);
  return Status::Ok();
}

Status Context::hash_join(const Table& left, std::string_view lkey, const Table& right, std::string_view rkey,
                          JoinPairs* out) {
  if (!out) return Status::InvalidArgument("compute: hash_join: null output");
  const Column* l = nullptr;
  const Column* r = nullptr;
  Status s = need_integer(left, lkey, "hash_join", &l);
  if (!s.ok()) return s;
  s = need_integer(right, rkey, "hash_join", &r);
  if (!s.ok()) return s;
  s = check_rows(std::max(left.rows(), right.rows()), "hash_join");
  if (!s.ok()) return s;
  if (device_ == Device::kCpu || left.rows() == 0 || right.rows() == 0) {
    detail::cpu::hash_join(engine_->impl()->cpu(), *l, *r, out);
    return Status::Ok();
  }
  s = lane();
  if (!s.ok()) return s;
  return detail::gpu::hash_join(lane_, *l, *r, out);
}

Status Context::index_join(const Table& left, std::string_view lkey, const Table& right, std::string_view rkey,
                           JoinPairs* out) {
  if (!out) return Status::InvalidArgument("compute: index_join: null output");
  const Column* l = nullptr;
  const Column* r = nullptr;
  Status s = need_integer(left, lkey, "index_join", &l);
  if (!s.ok()) return s;
  s = need_integer(right, rkey, "index_join", &r);
  if (!s.ok()) return s;
  s = check_rows(std::max(left.rows(), right.rows()), "index_join");
  if (!s.ok()) return s;
  const Status unsorted =
      Status::InvalidArgument("compute: index_join: column '" + std::string(rkey) + "' is not sorted ascending");
  if (device_ == Device::kCpu || left.rows() == 0 || right.rows() == 0) {
    if (!detail::cpu::sorted(engine_->impl()->cpu(), *r)) return unsorted;
    detail::cpu::index_join(engine_->impl()->cpu(), *l, *r, out);
    return Status::Ok();
  }
  s = lane();
  if (!s.ok()) return s;
  bool ok = false;
  s = detail::gpu::index_join(lane_, *l, *r, &ok, out);
  if (!s.ok()) return s;
  return ok ? Status::Ok() : unsorted;
}

Status Context::sort(const Table& t, std::span<const SortKey> keys, std::size_t limit, Selection* out) {
  if (!out) return Status::InvalidArgument("compute: sort: null output");
  Status s = check_rows(t.rows(), "sort");
  if (!s.ok()) return s;
  if (keys.empty()) return Status::InvalidArgument("compute: sort: at least one sort key");
  if (keys.size() > 8) return Status::InvalidArgument("compute: sort: at most 8 sort keys");
  std::vector<BoundSortKey> bk;
  for (const SortKey& k : keys) {
    BoundSortKey b;
    s = need_column(t, k.column, "sort", &b.col);
    if (!s.ok()) return s;
    if (b.col->type() == Type::kBytes)
      return Status::InvalidArgument("compute: sort: column '" + k.column + "' is bytes; sort keys are numeric");
    b.desc = k.descending;
    bk.push_back(b);
  }
  if (device_ == Device::kCpu || t.rows() == 0) {
    detail::cpu::sort(engine_->impl()->cpu(), t.rows(), bk, limit, out);
    return Status::Ok();
  }
  s = lane();
  if (!s.ok()) return s;
  return detail::gpu::sort(lane_, t.rows(), bk, limit, out);
}

Status Context::infer(ModelId model, std::span<const float> x, std::size_t rows, std::vector<float>* y) {
  if (!y) return Status::InvalidArgument("compute: infer: null output");
  const Mlp* m = engine_->model(model);
  if (!m) return Status::InvalidArgument("compute: infer: unknown model " + std::to_string(model));
  if (rows > (1u << 30)) return Status::InvalidArgument("compute: infer: too many rows");
  if (x.size() != rows * m->inputs())
    return Status::InvalidArgument("compute: infer: " + std::to_string(x.size()) + " inputs for " + std::to_string(rows) +
                                   " rows of " + std::to_string(m->inputs()));
  if (device_ == Device::kCpu || rows == 0) return detail::cpu::infer(engine_->impl()->cpu(), *m, x, rows, y);
  Status s = lane();
  if (!s.ok()) return s;
  void* h = nullptr;
  {
    std::lock_guard<std::mutex> lk(engine_->impl()->models_m);
    h = engine_->impl()->handles[model];
  }
  return detail::gpu::infer(lane_, *m, h, x, rows, y);
}

// ----- Batcher

struct Batcher::State {
  std::shared_ptr<Engine> engine;
  ModelId model = 0;
  std::uint32_t in = 0, out = 0;
  std::size_t max_rows = 1;
  // One slot per launch that may be in flight: its context (stream) and merged matrices.
  struct Slot {
    std::unique_ptr<Context> ctx;
    std::vector<float> xin, yout;
  };
  std::vector<std::unique_ptr<Slot>> slots;
  std::vector<Slot*> idle;
  struct Request {
    std::span<const float> x;
    std::size_t rows = 0;
    std::vector<float>* y = nullptr;
    Status status;
    bool done = false;
  };
  std::mutex m;
  std::condition_variable cv;
  std::deque<Request*> queue;
  std::uint64_t launches = 0, requests = 0;
  std::function<void(std::size_t)> hook;
};

Status Batcher::make(std::shared_ptr<Engine> engine, ModelId model, Device device, std::size_t max_rows,
                     std::unique_ptr<Batcher>* out, unsigned inflight) {
  if (!engine || !out) return Status::InvalidArgument("compute: batcher: null engine or output");
  if (max_rows == 0) return Status::InvalidArgument("compute: batcher: max_rows must be at least 1");
  if (inflight == 0 || inflight > 64) return Status::InvalidArgument("compute: batcher: inflight must be 1..64");
  const Mlp* m = engine->model(model);
  if (!m) return Status::InvalidArgument("compute: batcher: unknown model " + std::to_string(model));
  std::unique_ptr<Batcher> b(new Batcher());
  b->s_ = std::make_unique<State>();
  for (unsigned i = 0; i < inflight; ++i) {
    auto slot = std::make_unique<State::Slot>();
    Status s = engine->context(device, &slot->ctx);
    if (!s.ok()) return s;
    b->s_->idle.push_back(slot.get());
    b->s_->slots.push_back(std::move(slot));
  }
  b->s_->engine = std::move(engine);
  b->s_->model = model;
  b->s_->in = m->inputs();
  b->s_->out = m->outputs();
  b->s_->max_rows = max_rows;
  *out = std::move(b);
  return Status::Ok();
}

Batcher::~Batcher() = default;

std::uint64_t Batcher::launches() const {
  std::lock_guard<std::mutex> lk(s_->m);
  return s_->launches;
}
std::uint64_t Batcher::requests() const {
  std::lock_guard<std::mutex> lk(s_->m);
  return s_->requests;
}
std::size_t Batcher::queued() const {
  std::lock_guard<std::mutex> lk(s_->m);
  return s_->queue.size();
}
void Batcher::set_launch_hook(std::function<void(std::size_t)> hook) { s_->hook = std::move(hook); }

Status Batcher::infer(std::span<const float> x, std::size_t rows, std::vector<float>* y) {
  State& st = *s_;
  if (!y) return Status::InvalidArgument("compute: infer: null output");
  if (x.size() != rows * st.in)
    return Status::InvalidArgument("compute: infer: " + std::to_string(x.size()) + " inputs for " + std::to_string(rows) +
                                   " rows of " + std::to_string(st.in));
  State::Request req;
  req.x = x;
  req.rows = rows;
  req.y = y;
  std::unique_lock<std::mutex> lk(st.m);
  st.queue.push_back(&req);
  while (!req.done) {
    if (st.idle.empty() || st.queue.empty()) {
      st.cv.wait(lk);
      continue;
    }
    // Lead one launch on a free slot: the queued requests in arrival order, up to max_rows (at
    // least one; this caller's own request may be among them or in a later launch).
    State::Slot* slot = st.idle.back();
    st.idle.pop_back();
    std::vector<State::Request*> batch;
    std::size_t total = 0;
    while (!st.queue.empty() && (batch.empty() || total + st.queue.front()->rows <= st.max_rows)) {
      batch.push_back(st.queue.front());
      total += st.queue.front()->rows;
      st.queue.pop_front();
    }
    lk.unlock();
    if (st.hook) st.hook(batch.size());
    Status s;
    if (batch.size() == 1) {
      s = slot->ctx->infer(st.model, batch[0]->x, batch[0]->rows, batch[0]->y);
    } else {
      slot->xin.resize(total * st.in);
      std::size_t at = 0;
      for (State::Request* r : batch) {
        if (!r->x.empty()) std::memcpy(slot->xin.data() + at * st.in, r->x.data(), r->x.size() * sizeof(float));
        at += r->rows;
      }
      s = slot->ctx->infer(st.model, slot->xin, total, &slot->yout);
      at = 0;
      for (State::Request* r : batch) {
        if (s.ok()) r->y->assign(slot->yout.begin() + static_cast<std::ptrdiff_t>(at * st.out),
                                 slot->yout.begin() + static_cast<std::ptrdiff_t>((at + r->rows) * st.out));
        at += r->rows;
      }
    }
    lk.lock();
    for (State::Request* r : batch) {
      r->status = s;
      r->done = true;
    }
    ++st.launches;
    st.requests += batch.size();
    st.idle.push_back(slot);
    st.cv.notify_all();
  }
  return req.status;
}

}  // namespace duet::compute
