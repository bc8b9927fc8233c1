// Peer (integer keys only, not in the default set): Duet's LIT CPU map (src/index/lit), an
// ordered map whose range queries are linearizable snapshots, in its default configuration.
// UPDATE is LIT's UPSERT of a present key; SCAN is one range call [start, 2^64 - 1] cut at
// `count` entries. With uniform random u64 keys LIT loads slowly here (10^4 keys: 0.7 s with
// the default predicted range, over 60 s with the predicted range set to the whole universe),
// so it runs only when named in --systems.
#include <cstdlib>
#include <stdexcept>

#include "index/lit/lit.hpp"
#include "systems.hpp"

namespace duet::bench::hydralist {
namespace {

class LitSystem final : public System<IntKeys> {
  class W final : public LoopWorker<W, IntKeys> {
   public:
    explicit W(duet::lit::Map* m) {
      const duet::Status s = m->open_session(&s_);
      if (!s.ok()) throw std::runtime_error(s.to_string());
      out_.reserve(256);
    }
    bool get(std::uint64_t k, std::uint64_t* v) { return s_->get(k, v) == duet::lit::Result::kOk; }
    bool update(std::uint64_t k, std::uint64_t v) {
      bool existed = false;
      return s_->upsert(k, v, nullptr, &existed) == duet::lit::Result::kOk && existed;
    }
    bool insert(std::uint64_t k, std::uint64_t v) { return s_->insert(k, v) == duet::lit::Result::kOk; }
    std::size_t scan(std::uint64_t k, unsigned n) {
      out_.clear();
      duet::lit::RangePage page;
      (void)s_->range(k, ~std::uint64_t{0}, &out_, &page, n);
      return out_.size();
    }

   private:
    std::unique_ptr<duet::lit::Session> s_;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out_;
  };

 public:
  explicit LitSystem(unsigned threads) {
    duet::lit::Config c;
    c.max_sessions = threads + 4;
    const duet::Status s = duet::lit::Map::create(c, &map_);
    if (!s.ok()) throw std::runtime_error(s.to_string());
  }
  std::unique_ptr<Worker<IntKeys>> attach() override { return std::make_unique<W>(map_.get()); }

 private:
  std::unique_ptr<duet::lit::Map> map_;
};

}  // namespace

std::unique_ptr<System<IntKeys>> make_lit_int(unsigned threads) { return std::make_unique<LitSystem>(threads); }

}  // namespace duet::bench::hydralist
