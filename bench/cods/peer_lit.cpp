// Peer: Duet's lock-free LIT (src/index/lit/lit.hpp), an ordered map, as the tree's peer; its
// root spreads the benchmark's key range over its buckets.
#include <memory>

#include "index/lit/lit.hpp"
#include "systems.hpp"

namespace duet::bench::cods {
namespace {

class LitWorker final : public Worker {
 public:
  explicit LitWorker(lit::Map* m) { ok_ = m->open_session(&s_).ok(); }
  bool contains(std::uint64_t k) override {
    std::uint64_t v = 0;
    return s_->get(k, &v) == lit::Result::kOk;
  }
  bool insert(std::uint64_t k) override { return s_->insert(k, k) == lit::Result::kOk; }
  bool remove(std::uint64_t k) override { return s_->remove(k) == lit::Result::kOk; }
  bool ok_ = false;

 private:
  std::unique_ptr<lit::Session> s_;
};

class LitSystem final : public System {
 public:
  explicit LitSystem(std::unique_ptr<lit::Map> m) : m_(std::move(m)) {}
  std::unique_ptr<Worker> attach() override {
    auto w = std::make_unique<LitWorker>(m_.get());
    if (!w->ok_) return nullptr;
    return w;
  }

 private:
  std::unique_ptr<lit::Map> m_;
};

}  // namespace

void add_lit_system(std::vector<SystemInfo>* out) {
  SystemInfo i;
  i.name = "lit";
  i.description = "Duet's lock-free LIT (learned index over a lock-free list), predicted range = the key range";
  i.structure = Structure::kTree;
  i.make = [](const Shape& s, std::string* why) -> std::unique_ptr<System> {
    lit::Config c;
    c.predicted_min = 0;
    c.predicted_max = s.range - 1;
    std::unique_ptr<lit::Map> m;
    const Status st = lit::Map::create(c, &m);
    if (!st.ok()) {
      *why = st.to_string();
      return nullptr;
    }
    return std::make_unique<LitSystem>(std::move(m));
  };
  out->push_back(std::move(i));
}

}  // namespace duet::bench::cods
