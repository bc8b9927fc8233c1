// Peer: libcds's Michael list (cds::container::MichaelList) and Michael hash set of such
// lists (MichaelHashSet), lock-free, with hazard-pointer reclamation (cds::gc::HP). No BST.
// MichaelHashSet rounds its bucket count up to a power of two (1,000 buckets become 1,024).
#include <cds/container/michael_list_hp.h>
#include <cds/container/michael_set.h>
#include <cds/gc/hp.h>
#include <cds/init.h>

#include <memory>

#include "systems.hpp"

namespace duet::bench::mvrlu {
namespace {

struct ListTraits : public cds::container::michael_list::traits {
  using less = std::less<std::uint64_t>;
};
using CdsList = cds::container::MichaelList<cds::gc::HP, std::uint64_t, ListTraits>;

struct Hash {
  std::size_t operator()(std::uint64_t k) const { return static_cast<std::size_t>(mix64(k)); }
};
struct SetTraits : public cds::container::michael_set::traits {
  using hash = Hash;
};
using CdsHash = cds::container::MichaelHashSet<cds::gc::HP, CdsList, SetTraits>;

/// A thread attached to libcds's thread manager (its hazard-pointer record) for its lifetime.
template <class Set>
class CdsWorker final : public Worker {
 public:
  explicit CdsWorker(Set* s) : s_(s) { cds::threading::Manager::attachThread(); }
  ~CdsWorker() override { cds::threading::Manager::detachThread(); }
  bool contains(std::uint64_t k, bool* r) override { return *r = s_->contains(k), true; }
  bool insert(std::uint64_t k, bool* r) override { return *r = s_->insert(k), true; }
  bool remove(std::uint64_t k, bool* r) override { return *r = s_->erase(k), true; }

 private:
  Set* s_;
};

/// Initialises libcds and its HP collector for spec.threads workers plus the building thread,
/// which stays attached so that the set can be destroyed.
class CdsSystem final : public System {
 public:
  explicit CdsSystem(const SetSpec& spec) {
    cds::Initialize();
    gc_ = std::make_unique<cds::gc::HP>(CdsList::c_nHazardPtrCount + 2, spec.threads + 4);
    cds::threading::Manager::attachThread();
    if (spec.structure == Structure::kList) list_ = std::make_unique<CdsList>();
    else hash_ = std::make_unique<CdsHash>(spec.buckets, 1);
  }
  ~CdsSystem() override {
    list_.reset();
    hash_.reset();
    cds::threading::Manager::detachThread();
    gc_.reset();
    cds::Terminate();
  }
  Status attach(std::unique_ptr<Worker>* out) override {
    if (list_) *out = std::make_unique<CdsWorker<CdsList>>(list_.get());
    else *out = std::make_unique<CdsWorker<CdsHash>>(hash_.get());
    return Status::Ok();
  }
  Json take_stats() override {
    Json j = Json::object();
    if (hash_) j.set("buckets", static_cast<std::uint64_t>(hash_->bucket_count()));
    return j;
  }

 private:
  std::unique_ptr<cds::gc::HP> gc_;
  std::unique_ptr<CdsList> list_;
  std::unique_ptr<CdsHash> hash_;
};

}  // namespace

void add_libcds_system(std::vector<SystemInfo>* out) {
  SystemInfo i;
  i.name = "cds";
  i.description = "libcds MichaelList / MichaelHashSet with hazard pointers (no BST)";
  i.bst = false;
  i.make = [](const SetSpec& spec, Status*) -> std::unique_ptr<System> { return std::make_unique<CdsSystem>(spec); };
  out->push_back(std::move(i));
}

}  // namespace duet::bench::mvrlu
