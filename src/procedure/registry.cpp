// ProcedureRegistry (include/duet/procedure.hpp): loading procedure libraries with dlopen,
// checking their registration, calling procedures in transactions with re-runs on conflict,
// and unloading that waits for the calls in flight.
//
// Concurrency. The maps are guarded by a shared mutex: calls look up under the shared lock and,
// still under it, count themselves in their library's `inflight`; unload sets `unloading` under
// the exclusive lock, so after it a call either was already counted or sees the flag and is
// refused. unload then waits on `inflight` (C++20 atomic wait) until it reaches zero, removes
// the library and dlcloses it: no entry point of a closed library can be running.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <random>
#include <shared_mutex>
#include <thread>

#include "procedure/internal.hpp"

namespace duet {

using procedure::CallState;
using procedure::ReplyState;

namespace {

struct Library;

struct Proc {
  std::string name;
  duet_procedure_fn fn = nullptr;
  std::uint32_t flags = 0;
  Library* lib = nullptr;
  std::atomic<std::uint64_t> calls{0}, retries{0}, failures{0};
};

struct Library {
  std::string name, path;
  void* handle = nullptr;
  std::vector<std::unique_ptr<Proc>> procs;
  std::atomic<std::uint64_t> inflight{0};
  bool unloading = false;  ///< guarded by the registry's mutex
};

/// 1-64 characters of [A-Za-z0-9_.-].
bool good_name(const char* s) {
  if (!s) return false;
  std::size_t n = 0;
  for (; s[n]; ++n) {
    const char c = s[n];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == '-';
    if (!ok || n >= 64) return false;
  }
  return n > 0;
}

std::string shown(const char* s) { return s ? std::string(s).substr(0, 80) : std::string("(null)"); }

ProcReply error_reply(std::string text) {
  ProcReply r;
  r.kind = ProcReply::Kind::kError;
  r.s = std::move(text);
  return r;
}

}  // namespace

struct ProcedureRegistry::Impl {
  ProcedureConfig config;
  procedure::Shared shared;
  mutable std::shared_mutex m;
  std::map<std::string, std::shared_ptr<Library>, std::less<>> libs;
  std::map<std::string, Proc*, std::less<>> procs;

  void backoff(unsigned conflicts) const {
    if (conflicts <= config.backoff_yields) {
      std::this_thread::yield();
      return;
    }
    const unsigned shift = std::min(conflicts - config.backoff_yields - 1, 20u);
    const std::uint64_t us =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(config.backoff_min_us) << shift, config.backoff_max_us);
    thread_local std::minstd_rand rng(static_cast<unsigned>(std::hash<std::thread::id>{}(std::this_thread::get_id())));
    const double f = 0.5 + 0.5 * std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    std::this_thread::sleep_for(std::chrono::microseconds(std::max<std::uint64_t>(1, static_cast<std::uint64_t>(us * f))));
  }
};

Status ProcedureRegistry::open(const ProcedureConfig& c, std::shared_ptr<ProcedureRegistry>* out) {
  if (!out) return Status::InvalidArgument("procedures: null output");
  if (c.max_attempts < 1 || c.max_attempts > 1000000)
    return Status::InvalidArgument("procedures: max_attempts must be 1 .. 1000000");
  if (c.backoff_max_us > 1000000 || c.backoff_min_us > c.backoff_max_us || c.backoff_min_us == 0)
    return Status::InvalidArgument("procedures: backoff must satisfy 1 <= backoff_min_us <= backoff_max_us <= 10^6");
  if (c.backoff_yields > 1000) return Status::InvalidArgument("procedures: backoff_yields must be at most 1000");
  compute::Device device = compute::Device::kAuto;
  if (!compute::parse_device(c.compute_device, &device))
    return Status::InvalidArgument("procedures: compute_device must be auto, cpu or gpu, not '" + c.compute_device + "'");
  std::shared_ptr<ProcedureRegistry> r(new ProcedureRegistry());
  r->impl_ = std::make_unique<Impl>();
  r->impl_->config = c;
  r->impl_->shared.device = device;
  *out = std::move(r);
  return Status::Ok();
}

ProcedureRegistry::~ProcedureRegistry() {
  // No call can be running: calls hold the registry (the server keeps it for the process).
  if (!impl_) return;
  for (auto& [name, lib] : impl_->libs)
    if (lib->handle) dlclose(lib->handle);
}

const ProcedureConfig& ProcedureRegistry::config() const { return impl_->config; }

Status ProcedureRegistry::load(const std::string& path, std::string* library) {
  if (path.empty()) return Status::InvalidArgument("procedure library path is empty");
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return Status::InvalidArgument("cannot load procedure library '" + path + "': " + (e ? e : "dlopen failed"));
  }
  auto fail = [&](std::string why) {
    dlclose(h);
    return Status::InvalidArgument("procedure library '" + path + "' refused: " + why);
  };
  dlerror();
  void* sym = dlsym(h, DUET_PROCEDURE_REGISTER);
  if (!sym) return fail("it does not export the symbol " DUET_PROCEDURE_REGISTER);
  const duet_library_def* def = reinterpret_cast<duet_register_fn>(sym)();
  if (!def) return fail(DUET_PROCEDURE_REGISTER " returned null");
  if (def->abi_version != DUET_PROCEDURE_ABI_VERSION)
    return fail("it was built for procedure ABI version " + std::to_string(def->abi_version) +
                ", this server speaks version " + std::to_string(DUET_PROCEDURE_ABI_VERSION) + " (rebuild it)");
  if (!good_name(def->name)) return fail("bad library name '" + shown(def->name) + "' (1-64 of [A-Za-z0-9_.-])");
  if (def->count == 0 || def->count > 1024 || !def->procedures)
    return fail("it must list 1 to 1024 procedures, not " + std::to_string(def->count));
  auto lib = std::make_shared<Library>();
  lib->name = def->name;
  lib->path = path;
  lib->handle = h;
  for (std::size_t i = 0; i < def->count; ++i) {
    const duet_procedure_def& p = def->procedures[i];
    if (!good_name(p.name)) return fail("bad procedure name '" + shown(p.name) + "' (1-64 of [A-Za-z0-9_.-])");
    if (!p.fn) return fail("procedure '" + std::string(p.name) + "' has no entry point");
    if (p.flags & ~std::uint32_t{DUET_PROC_READ_ONLY | DUET_PROC_LONG})
      return fail("procedure '" + std::string(p.name) + "' has unknown flags " + std::to_string(p.flags));
    for (const auto& q : lib->procs)
      if (q->name == p.name) return fail("procedure '" + std::string(p.name) + "' is listed twice");
    auto proc = std::make_unique<Proc>();
    proc->name = p.name;
    proc->fn = p.fn;
    proc->flags = p.flags;
    proc->lib = lib.get();
    lib->procs.push_back(std::move(proc));
  }
  std::unique_lock lk(impl_->m);
  if (impl_->libs.count(lib->name)) {
    lk.unlock();
    return fail("a library named '" + lib->name + "' is already loaded (PROCEDURE DELETE it first)");
  }
  for (const auto& p : lib->procs)
    if (auto it = impl_->procs.find(p->name); it != impl_->procs.end()) {
      const std::string other = it->second->lib->name;
      lk.unlock();
      return fail("procedure '" + p->name + "' is already loaded from library '" + other + "'");
    }
  for (const auto& p : lib->procs) impl_->procs.emplace(p->name, p.get());
  if (library) *library = lib->name;
  impl_->libs.emplace(lib->name, std::move(lib));
  return Status::Ok();
}

std::vector<ProcedureInfo> ProcedureRegistry::list() const {
  std::vector<ProcedureInfo> out;
  std::shared_lock lk(impl_->m);
  for (const auto& [name, p] : impl_->procs) {
    if (p->lib->unloading) continue;
    ProcedureInfo i;
    i.name = name;
    i.library = p->lib->name;
    i.path = p->lib->path;
    i.read_only = (p->flags & DUET_PROC_READ_ONLY) != 0;
    i.runs_long = (p->flags & DUET_PROC_LONG) != 0;
    i.calls = p->calls.load(std::memory_order_relaxed);
    i.retries = p->retries.load(std::memory_order_relaxed);
    i.failures = p->failures.load(std::memory_order_relaxed);
    out.push_back(std::move(i));
  }
  return out;
}

bool ProcedureRegistry::runs_long(std::string_view name) const {
  std::shared_lock lk(impl_->m);
  auto it = impl_->procs.find(name);
  return it != impl_->procs.end() && (it->second->flags & DUET_PROC_LONG) != 0;
}

bool ProcedureRegistry::loaded(std::string_view library) const {
  std::shared_lock lk(impl_->m);
  auto it = impl_->libs.find(library);
  return it != impl_->libs.end() && !it->second->unloading;
}

bool ProcedureRegistry::unloading(std::string_view library) const {
  std::shared_lock lk(impl_->m);
  auto it = impl_->libs.find(library);
  return it != impl_->libs.end() && it->second->unloading;
}

Status ProcedureRegistry::unload(std::string_view library) {
  std::shared_ptr<Library> lib;
  {
    std::unique_lock lk(impl_->m);
    auto it = impl_->libs.find(library);
    if (it == impl_->libs.end()) return Status::NotFound("no procedure library named '" + std::string(library) + "'");
    if (it->second->unloading)
      return Status::NotFound("procedure library '" + std::string(library) + "' is already being unloaded");
    lib = it->second;
    lib->unloading = true;
  }
  for (std::uint64_t v; (v = lib->inflight.load()) != 0;) lib->inflight.wait(v);
  {
    std::unique_lock lk(impl_->m);
    for (const auto& p : lib->procs) impl_->procs.erase(p->name);
    impl_->libs.erase(lib->name);
  }
  dlclose(lib->handle);
  lib->handle = nullptr;
  return Status::Ok();
}

Status ProcedureRegistry::call(const std::shared_ptr<TxnSpace>& space, std::string_view name, std::span<const std::string_view> keys,
                               std::span<const std::string_view> args, bool read_only, CallOutcome* out) {
  if (!out) return Status::InvalidArgument("procedures: null output");
  if (!space) return Status::InvalidArgument("procedures: null keyspace");
  Proc* p = nullptr;
  std::shared_ptr<Library> lib;
  {
    std::shared_lock lk(impl_->m);
    auto it = impl_->procs.find(name);
    if (it == impl_->procs.end()) return Status::NotFound("unknown procedure '" + std::string(name.substr(0, 80)) + "'");
    p = it->second;
    if (p->lib->unloading)
      return Status::Unavailable("procedure '" + p->name + "' is being unloaded (library '" + p->lib->name + "')");
    if (read_only && !(p->flags & DUET_PROC_READ_ONLY))
      return Status::InvalidArgument("procedure '" + p->name +
                                     "' may write: FCALL_RO calls only procedures flagged read-only");
    lib = impl_->libs.find(p->lib->name)->second;
    lib->inflight.fetch_add(1);
  }
  struct Leave {
    Library* l;
    ~Leave() {
      if (l->inflight.fetch_sub(1) == 1) l->inflight.notify_all();
    }
  } leave{lib.get()};
  p->calls.fetch_add(1, std::memory_order_relaxed);

  std::vector<duet_bytes> kb(keys.size()), ab(args.size());
  for (std::size_t i = 0; i < keys.size(); ++i) kb[i] = duet_bytes{keys[i].data(), keys[i].size()};
  for (std::size_t i = 0; i < args.size(); ++i) ab[i] = duet_bytes{args[i].data(), args[i].size()};
  const duet_api* api = procedure::host_api();
  auto failed = [&](CallOutcome::End end, std::string text, unsigned attempts) {
    p->failures.fetch_add(1, std::memory_order_relaxed);
    out->end = end;
    out->reply = error_reply(std::move(text));
    out->attempts = attempts;
    return Status::Ok();
  };
  for (unsigned attempt = 0;; ++attempt) {
    Txn t;
    if (Status s = space->begin(&t); !s.ok()) {
      p->failures.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    CallState cs;
    cs.txn = &t;
    cs.space = &space;
    cs.read_only = read_only;
    cs.attempt = attempt;
    cs.shared = &impl_->shared;
    ReplyState rs;
    duet_txn tx{api, &cs};
    duet_reply rp{api, &rs};
    const int rc = p->fn(&tx, kb.data(), kb.size(), ab.data(), ab.size(), &rp);
    if (rc != DUET_OK) {
      const bool too_old = !t.active();
      t.abort();
      if (too_old)
        return failed(CallOutcome::End::kSnapshotTooOld,
                      "ABORT snapshot too old: the transaction was aborted to bound memory", attempt + 1);
      if (rs.complete() && rs.root.kind == ProcReply::Kind::kError)
        return failed(CallOutcome::End::kFailed, rs.root.s, attempt + 1);
      return failed(CallOutcome::End::kFailed,
                    "ERR procedure '" + p->name + "' failed (code " + std::to_string(rc) + ")", attempt + 1);
    }
    if (!rs.complete()) {
      t.abort();
      return failed(CallOutcome::End::kFailed,
                    "ERR procedure '" + p->name + (rs.started ? "' returned an incomplete reply (an array lacks items)"
                                                             : "' returned without a reply"),
                    attempt + 1);
    }
    if (!t.active())
      return failed(CallOutcome::End::kSnapshotTooOld,
                    "ABORT snapshot too old: the transaction was aborted to bound memory", attempt + 1);
    CommitResult r;
    if (Status s = t.commit(&r); !s.ok()) {
      p->failures.fetch_add(1, std::memory_order_relaxed);
      return s;
    }
    if (r.outcome == TxnOutcome::kCommitted) {
      out->end = CallOutcome::End::kCommitted;
      out->reply = std::move(rs.root);
      out->attempts = attempt + 1;
      return Status::Ok();
    }
    if (r.outcome == TxnOutcome::kSnapshotTooOld)
      return failed(CallOutcome::End::kSnapshotTooOld,
                    "ABORT snapshot too old: the transaction was aborted to bound memory", attempt + 1);
    if (attempt + 1 >= impl_->config.max_attempts)
      return failed(CallOutcome::End::kConflict,
                    "ABORT procedure '" + p->name + "' lost a write conflict on key '" + r.conflict_key.substr(0, 128) +
                        "' in each of its " + std::to_string(attempt + 1) + " runs; nothing was applied",
                    attempt + 1);
    p->retries.fetch_add(1, std::memory_order_relaxed);
    impl_->backoff(attempt + 1);
  }
}

}  // namespace duet
