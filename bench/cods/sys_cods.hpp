// The CODS CPU front ends (src/index/cods/cpu.hpp) as benchmark systems. Each worker holds its
// own session (epoch participant); every call pins the epoch for its duration.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "index/cods/cpu.hpp"
#include "systems.hpp"

namespace duet::bench::cods {

namespace ds = duet::cods::ds;

/// A worker on a CODS list or hash set.
template <class Set>
class CodsSetWorker final : public Worker {
 public:
  explicit CodsSetWorker(Set* s) : s_(s), env_(s->session()) {}
  bool contains(std::uint64_t k) override { return s_->contains(*env_, k); }
  bool insert(std::uint64_t k) override { return s_->insert(*env_, k) == ds::OpStatus::kNotFound; }
  bool remove(std::uint64_t k) override { return s_->remove(*env_, k) == ds::OpStatus::kFound; }

 private:
  Set* s_;
  std::unique_ptr<ds::CpuEnv> env_;
};

/// A worker on a CODS B-link tree (values: the key itself).
template <class Tree>
class CodsTreeWorker final : public Worker {
 public:
  explicit CodsTreeWorker(Tree* t) : t_(t), env_(t->session()) {}
  bool contains(std::uint64_t k) override { return t_->get(*env_, k).status == ds::OpStatus::kFound; }
  bool insert(std::uint64_t k) override { return t_->insert(*env_, k, k).status == ds::OpStatus::kNotFound; }
  bool remove(std::uint64_t k) override { return t_->remove(*env_, k).status == ds::OpStatus::kFound; }

 private:
  Tree* t_;
  std::unique_ptr<ds::CpuEnv> env_;
};

template <class T, class W>
class CodsSystem final : public System {
 public:
  explicit CodsSystem(std::unique_ptr<T> t) : t_(std::move(t)) {}
  std::unique_ptr<Worker> attach() override { return std::make_unique<W>(t_.get()); }

 private:
  std::unique_ptr<T> t_;
};

inline const char* regime_name(ds::Regime r) { return r == ds::Regime::kFullyAtomic ? "fully-atomic" : "elementwise"; }

/// Registers the CODS systems of one structure for K in Ks and both regimes; Make<K, R>(shape,
/// why) builds one.
template <Structure S, template <unsigned, ds::Regime> class Make, unsigned... Ks>
void add_cods(std::vector<SystemInfo>* out, const char* what) {
  auto one = [&](auto kc, ds::Regime r) {
    constexpr unsigned K = decltype(kc)::value;
    SystemInfo i;
    i.structure = S;
    i.k = K;
    i.regime = regime_name(r);
    i.name = cods_name(S, r == ds::Regime::kFullyAtomic, K);
    i.description = std::string("CODS ") + what + ", " + std::to_string(K) + " keys per node, " + i.regime;
    if (r == ds::Regime::kFullyAtomic)
      i.make = [](const Shape& s, std::string* why) { return Make<K, ds::Regime::kFullyAtomic>::make(s, why); };
    else
      i.make = [](const Shape& s, std::string* why) { return Make<K, ds::Regime::kElementwise>::make(s, why); };
    out->push_back(std::move(i));
  };
  (one(std::integral_constant<unsigned, Ks>{}, ds::Regime::kFullyAtomic), ...);
  (one(std::integral_constant<unsigned, Ks>{}, ds::Regime::kElementwise), ...);
}

}  // namespace duet::bench::cods
