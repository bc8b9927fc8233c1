// MV-RLU and the baselines made from it by switching the library (duet::mvrlu::Config):
// the clock modes, RLU (rlu_sync on the global counter) and RLU-ORDO, and the factor
// analysis's cumulative steps (docs/mvrlu.md, "Baselines").
#include <memory>

#include "mvrlu/ds/bst.hpp"
#include "mvrlu/ds/list.hpp"
#include "systems.hpp"

namespace duet::bench::mvrlu {
namespace {

namespace mv = duet::mvrlu;

/// One of the three structures on a Domain.
class MvSystem final : public System {
 public:
  static std::unique_ptr<System> make(const mv::Config& base, const SetSpec& spec, Status* error) {
    auto s = std::unique_ptr<MvSystem>(new MvSystem());
    mv::Config c = base;
    if (spec.ordo_boundary >= 0) c.ordo_boundary = spec.ordo_boundary;
    c.max_threads = spec.threads + 4;  // the workers, the building and the prefilling threads
    *error = mv::Domain::create(c, &s->d_);
    if (!error->ok()) return nullptr;
    *error = s->d_->register_thread(&s->setup_);
    if (!error->ok()) return nullptr;
    switch (spec.structure) {
      case Structure::kList: *error = mv::ds::List::create(*s->d_, *s->setup_, &s->list_); break;
      case Structure::kHash: *error = mv::ds::HashTable::create(*s->d_, *s->setup_, spec.buckets, &s->hash_); break;
      case Structure::kBst: *error = mv::ds::Bst::create(*s->d_, *s->setup_, &s->bst_); break;
    }
    if (!error->ok()) return nullptr;
    return s;
  }
  /// The structure drains the domain and frees its nodes; then the domain goes.
  ~MvSystem() override {
    setup_.reset();
    list_.reset();
    hash_.reset();
    bst_.reset();
    d_.reset();
  }
  Status attach(std::unique_ptr<Worker>* out) override;
  Json take_stats() override {
    const mv::Stats s = d_->stats();
    Json j = Json::object();
    j.set("clock", d_->clock_mode() == mv::ClockMode::kOrdo ? "ordo" : "counter");
    j.set("ordo_boundary_ticks", d_->ordo_boundary());
    j.set("commits", s.commits - last_.commits);
    j.set("aborts", s.aborts - last_.aborts);
    j.set("conflicts", s.conflicts - last_.conflicts);
    j.set("gc_rounds", s.rounds - last_.rounds);
    j.set("writebacks", s.writebacks - last_.writebacks);
    j.set("reclaimed_copies", s.reclaimed_copies - last_.reclaimed_copies);
    j.set("takeovers", s.takeovers - last_.takeovers);
    j.set("master_bytes", s.master_bytes);
    j.set("log_bytes_used", s.log_bytes_used);
    last_ = s;
    return j;
  }

  std::unique_ptr<mv::Domain> d_;
  std::unique_ptr<mv::Thread> setup_;
  std::unique_ptr<mv::ds::List> list_;
  std::unique_ptr<mv::ds::HashTable> hash_;
  std::unique_ptr<mv::ds::Bst> bst_;
  mv::Stats last_;

 private:
  MvSystem() = default;
};

class MvWorker final : public Worker {
 public:
  MvWorker(MvSystem* s, std::unique_ptr<mv::Thread> t) : s_(s), t_(std::move(t)) {}
  bool contains(std::uint64_t k, bool* r) override {
    return (s_->list_ ? s_->list_->contains(*t_, k, r)
            : s_->hash_ ? s_->hash_->contains(*t_, k, r)
                        : s_->bst_->contains(*t_, k, r)).ok();
  }
  bool insert(std::uint64_t k, bool* r) override {
    return (s_->list_ ? s_->list_->insert(*t_, k, r)
            : s_->hash_ ? s_->hash_->insert(*t_, k, r)
                        : s_->bst_->insert(*t_, k, r)).ok();
  }
  bool remove(std::uint64_t k, bool* r) override {
    return (s_->list_ ? s_->list_->remove(*t_, k, r)
            : s_->hash_ ? s_->hash_->remove(*t_, k, r)
                        : s_->bst_->remove(*t_, k, r)).ok();
  }

 private:
  MvSystem* s_;
  std::unique_ptr<mv::Thread> t_;
};

Status MvSystem::attach(std::unique_ptr<Worker>* out) {
  std::unique_ptr<mv::Thread> t;
  Status s = d_->register_thread(&t);
  if (!s.ok()) return s;
  *out = std::make_unique<MvWorker>(this, std::move(t));
  return Status::Ok();
}

void add(std::vector<SystemInfo>* out, std::string name, std::string what, mv::Config c) {
  SystemInfo i;
  i.name = std::move(name);
  i.description = std::move(what);
  i.make = [c](const SetSpec& spec, Status* e) { return MvSystem::make(c, spec, e); };
  out->push_back(std::move(i));
}

}  // namespace

void add_mvrlu_systems(std::vector<SystemInfo>* out) {
  mv::Config c;  // the library's defaults: MV-RLU, clock kAuto
  add(out, "mvrlu", "MV-RLU, library defaults (clock auto)", c);
  c.clock = mv::ClockMode::kOrdo;
  add(out, "mvrlu-ordo", "MV-RLU, ORDO clock (factor step 6: + dereference watermark)", c);
  c.clock = mv::ClockMode::kCounter;
  add(out, "mvrlu-counter", "MV-RLU, global counter clock", c);

  mv::Config r;
  r.rlu_sync = true;
  r.clock = mv::ClockMode::kCounter;
  add(out, "rlu", "RLU baseline: one copy per object, synchronous grace period, global clock (factor step 1)", r);
  r.clock = mv::ClockMode::kOrdo;
  add(out, "rlu-ordo", "RLU baseline on ORDO (factor step 2: + ORDO)", r);

  mv::Config f;
  f.clock = mv::ClockMode::kOrdo;
  f.self_log_gc = false;
  f.capacity_trigger = false;
  f.deref_trigger = false;
  add(out, "mv-gcthread", "factor step 3: + multi-version, the detector the only collector, rounds only at the high watermark", f);
  f.self_log_gc = true;
  add(out, "mv-selfgc", "factor step 4: + self-log collection", f);
  f.capacity_trigger = true;
  add(out, "mv-capacity", "factor step 5: + capacity watermark (low mark asks for rounds)", f);
}

}  // namespace duet::bench::mvrlu
