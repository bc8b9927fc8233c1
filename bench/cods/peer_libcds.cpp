// Peers from libcds (Debian's libcds-dev), all with hazard-pointer reclamation (cds::gc::HP):
// LazyList and MichaelList (list), MichaelHashSet of lazy lists and SplitListSet (hash),
// SkipListSet (ordered set, the tree's peer). MichaelHashSet rounds its bucket count up to a
// power of two.
#include <cds/container/lazy_list_hp.h>
#include <cds/container/michael_list_hp.h>
#include <cds/container/michael_set.h>
#include <cds/container/skip_list_set_hp.h>
#include <cds/container/split_list_set.h>
#include <cds/gc/hp.h>
#include <cds/init.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "systems.hpp"

namespace duet::bench::cods {
namespace {

struct LazyTraits : public cds::container::lazy_list::traits {
  using less = std::less<std::uint64_t>;
};
using CdsLazy = cds::container::LazyList<cds::gc::HP, std::uint64_t, LazyTraits>;
struct MichaelTraits : public cds::container::michael_list::traits {
  using less = std::less<std::uint64_t>;
};
using CdsMichael = cds::container::MichaelList<cds::gc::HP, std::uint64_t, MichaelTraits>;

struct Hash {
  std::size_t operator()(std::uint64_t k) const { return static_cast<std::size_t>(mix64(k)); }
};
struct HashTraits : public cds::container::michael_set::traits {
  using hash = Hash;
};
using CdsMichaelHash = cds::container::MichaelHashSet<cds::gc::HP, CdsLazy, HashTraits>;

struct SplitTraits : public cds::container::split_list::traits {
  using ordered_list = cds::container::michael_list_tag;
  using hash = Hash;
  struct ordered_list_traits : public cds::container::michael_list::traits {
    using less = std::less<std::uint64_t>;
  };
};
using CdsSplit = cds::container::SplitListSet<cds::gc::HP, std::uint64_t, SplitTraits>;

struct SkipTraits : public cds::container::skip_list::traits {
  using less = std::less<std::uint64_t>;
};
using CdsSkip = cds::container::SkipListSet<cds::gc::HP, std::uint64_t, SkipTraits>;

/// A thread attached to libcds's thread manager for the worker's lifetime.
template <class Set>
class CdsWorker final : public Worker {
 public:
  explicit CdsWorker(Set* s) : s_(s) { cds::threading::Manager::attachThread(); }
  ~CdsWorker() override { cds::threading::Manager::detachThread(); }
  bool contains(std::uint64_t k) override { return s_->contains(k); }
  bool insert(std::uint64_t k) override { return s_->insert(k); }
  bool remove(std::uint64_t k) override { return s_->erase(k); }

 private:
  Set* s_;
};

/// libcds and its HP collector, set up for the shape's workers plus the building thread (which
/// stays attached so that the set can be destroyed). One collector at a time per process.
template <class Set>
class CdsSystem final : public System {
 public:
  template <class... A>
  CdsSystem(unsigned threads, A... args) {
    cds::Initialize();
    gc_ = std::make_unique<cds::gc::HP>(std::max<std::size_t>(Set::c_nHazardPtrCount, 8) + 2, threads + 8);
    cds::threading::Manager::attachThread();
    set_ = std::make_unique<Set>(args...);
  }
  ~CdsSystem() override {
    set_.reset();
    cds::threading::Manager::detachThread();
    gc_.reset();
    cds::Terminate();
  }
  std::unique_ptr<Worker> attach() override { return std::make_unique<CdsWorker<Set>>(set_.get()); }

 private:
  std::unique_ptr<cds::gc::HP> gc_;
  std::unique_ptr<Set> set_;
};

void add(std::vector<SystemInfo>* out, const char* name, const char* description, Structure s,
         std::function<std::unique_ptr<System>(const Shape&, std::string*)> make) {
  SystemInfo i;
  i.name = name;
  i.description = description;
  i.structure = s;
  i.make = std::move(make);
  out->push_back(std::move(i));
}

}  // namespace

void add_libcds_systems(std::vector<SystemInfo>* out) {
  add(out, "cds-lazy-list", "libcds LazyList (HP)", Structure::kList,
      [](const Shape& s, std::string*) { return std::make_unique<CdsSystem<CdsLazy>>(s.threads); });
  add(out, "cds-michael-list", "libcds MichaelList (HP)", Structure::kList,
      [](const Shape& s, std::string*) { return std::make_unique<CdsSystem<CdsMichael>>(s.threads); });
  add(out, "cds-michael-hash", "libcds MichaelHashSet of LazyLists (HP), buckets rounded up to a power of two",
      Structure::kHash, [](const Shape& s, std::string*) {
        // load factor 1: MichaelHashSet sizes its bucket table as max_items / load_factor.
        return std::make_unique<CdsSystem<CdsMichaelHash>>(s.threads, static_cast<std::size_t>(s.buckets), std::size_t{1});
      });
  add(out, "cds-split-list", "libcds SplitListSet over MichaelList (HP), load factor 4", Structure::kHash,
      [](const Shape& s, std::string*) {
        return std::make_unique<CdsSystem<CdsSplit>>(s.threads, static_cast<std::size_t>(s.range / 2), std::size_t{4});
      });
  add(out, "cds-skip-list", "libcds SkipListSet (HP)", Structure::kTree,
      [](const Shape& s, std::string*) { return std::make_unique<CdsSystem<CdsSkip>>(s.threads); });
}

}  // namespace duet::bench::cods
