// Peers from oneTBB (Debian's libtbb-dev): concurrent_hash_map (hash) and concurrent_set
// (ordered set, the tree's peer). concurrent_set has no concurrent erase (only unsafe_erase),
// so it runs the read-only mixes alone.
#include <oneapi/tbb/concurrent_hash_map.h>
#include <oneapi/tbb/concurrent_set.h>

#include <memory>

#include "systems.hpp"

namespace duet::bench::cods {
namespace {

struct HashCompare {
  static std::size_t hash(std::uint64_t k) { return static_cast<std::size_t>(mix64(k)); }
  static bool equal(std::uint64_t a, std::uint64_t b) { return a == b; }
};
using Chm = tbb::concurrent_hash_map<std::uint64_t, std::uint64_t, HashCompare>;

class ChmWorker final : public Worker {
 public:
  explicit ChmWorker(Chm* m) : m_(m) {}
  bool contains(std::uint64_t k) override { return m_->count(k) != 0; }
  bool insert(std::uint64_t k) override { return m_->insert(std::make_pair(k, k)); }
  bool remove(std::uint64_t k) override { return m_->erase(k); }

 private:
  Chm* m_;
};

class ChmSystem final : public System {
 public:
  explicit ChmSystem(std::uint64_t buckets) : m_(static_cast<std::size_t>(buckets)) {}
  std::unique_ptr<Worker> attach() override { return std::make_unique<ChmWorker>(&m_); }

 private:
  Chm m_;
};

using Set = tbb::concurrent_set<std::uint64_t>;

class SetWorker final : public Worker {
 public:
  explicit SetWorker(Set* s) : s_(s) {}
  bool contains(std::uint64_t k) override { return s_->contains(k); }
  bool insert(std::uint64_t k) override { return s_->insert(k).second; }
  bool remove(std::uint64_t) override { return false; }  // never called: removes = false

 private:
  Set* s_;
};

class SetSystem final : public System {
 public:
  std::unique_ptr<Worker> attach() override { return std::make_unique<SetWorker>(&s_); }

 private:
  Set s_;
};

}  // namespace

void add_tbb_systems(std::vector<SystemInfo>* out) {
  SystemInfo h;
  h.name = "tbb-hash-map";
  h.description = "oneTBB concurrent_hash_map, sized for the range's prefill";
  h.structure = Structure::kHash;
  h.make = [](const Shape& s, std::string*) { return std::make_unique<ChmSystem>(s.range / 2); };
  out->push_back(std::move(h));
  SystemInfo t;
  t.name = "tbb-set";
  t.description = "oneTBB concurrent_set (skip list; no concurrent erase: read-only mixes only)";
  t.structure = Structure::kTree;
  t.removes = false;
  t.make = [](const Shape&, std::string*) { return std::make_unique<SetSystem>(); };
  out->push_back(std::move(t));
}

}  // namespace duet::bench::cods
