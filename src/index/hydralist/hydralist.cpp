#include "index/hydralist/hydralist.hpp"

#include <bit>
#include <limits>

#include "index/hydralist/numa.hpp"

namespace duet::hydralist {

using detail::ld;
using detail::st;

const char* result_name(Result r) {
  switch (r) {
    case Result::kOk: return "ok";
    case Result::kNotFound: return "not_found";
    case Result::kExists: return "exists";
    case Result::kMismatch: return "mismatch";
    case Result::kTooLarge: return "too_large";
    case Result::kNoMemory: return "no_memory";
  }
  return "?";
}

namespace {
inline std::uint64_t load_bitmap(const std::uint64_t& b) { return __atomic_load_n(&b, __ATOMIC_ACQUIRE); }
inline void store_bitmap(std::uint64_t& b, std::uint64_t v) { __atomic_store_n(&b, v, __ATOMIC_RELEASE); }
/// The bitmap of a sorted node holding c keys (its first c slots).
inline std::uint64_t prefix_mask(unsigned c) { return c >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << c) - 1; }
}  // namespace

// ======================================================================================
// Session

template <class KT>
Session<KT>::Session(Index<KT>* idx, unsigned slot, std::unique_ptr<mem::EpochManager::Participant> p)
    : idx_(idx), slot_(slot), part_(std::move(p)), rng_(0x9E3779B97F4A7C15ull * (slot + 1)) {
  if (idx_->cfg_.replicas > 0) replica_ = slot_ % idx_->replicas();
  else replica_ = current_numa_node() % idx_->replicas();
}

template <class KT>
Session<KT>::~Session() {
  idx_->detach(this);
}

template <class KT>
unsigned Session<KT>::replica() {
  if (idx_->replicas_.size() > 1 && idx_->cfg_.replicas == 0 && (++node_refresh_ & 255) == 0)
    replica_ = current_numa_node() % idx_->replicas();
  return replica_;
}

template <class KT>
void Session<KT>::wait_retry() {
  ++retries_;
  ++stat_retries_;
  const Config& c = idx_->cfg_;
  if (!c.backoff || retries_ <= c.backoff_after) {
    detail::cpu_relax();
    return;
  }
  ++stat_backoffs_;
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const unsigned exp = std::min(retries_ - c.backoff_after, c.backoff_max_log2);
  const std::uint64_t spins = rng_ & ((std::uint64_t{1} << exp) - 1);
  for (std::uint64_t i = 0; i < spins; ++i) detail::cpu_relax();
}

template <class KT>
typename Session<KT>::Node* Session<KT>::jump(Arg key) {
  const typename KT::ArtKey ak(key);
  void* p = idx_->replicas_[replica()]->art.floor_or_first(ak.view());
  return p ? static_cast<Node*>(p) : idx_->head_;
}

template <class KT>
typename Session<KT>::Node* Session<KT>::target(Node* n, Arg key) {
  // Anchors never change, so the walk reads only anchors and links, without locks. A
  // deleted node's prev leads to the node it merged into (or further left).
  for (;;) {
    if (!n->anchor_le(key)) {
      n = n->prev.load(std::memory_order_acquire);
      ++stat_walk_;
      continue;
    }
    Node* nx = n->next.load(std::memory_order_acquire);
    if (nx && nx->anchor_le(key)) {
      n = nx;
      ++stat_walk_;
      continue;
    }
    return n;
  }
}

template <class KT>
std::uint64_t Session<KT>::stable(Node* n) {
  for (;;) {
    const std::uint64_t v = n->version.load(std::memory_order_acquire);
    if (!(v & 1)) return v;
    wait_retry();
  }
}

template <class KT>
bool Session<KT>::lock(Node* n) {
  std::uint64_t v = n->version.load(std::memory_order_relaxed);
  if (v & 1) return false;
  if (!n->version.compare_exchange_strong(v, v + 1, std::memory_order_acq_rel)) return false;
  std::atomic_thread_fence(std::memory_order_release);
  return true;
}

template <class KT>
bool Session<KT>::lock_at(Node* n, std::uint64_t v) {
  if (!n->version.compare_exchange_strong(v, v + 1, std::memory_order_acq_rel)) return false;
  std::atomic_thread_fence(std::memory_order_release);
  return true;
}

template <class KT>
int Session<KT>::sorted_position(Node* n, Arg key, bool* found) const {
  *found = false;
  const unsigned cnt = static_cast<unsigned>(std::popcount(load_bitmap(n->bitmap)));
  auto key_at = [&](unsigned i, Arg* out) {
    if constexpr (KT::kBlobs) {
      const detail::Blob* b = n->slots.raw_key(i);
      if (!b) return false;  // torn: the caller's version check fails
      *out = b->view();
    } else {
      *out = n->slots.raw_key(i);
    }
    return true;
  };
  unsigned lo = 0, hi = cnt;
  Arg k{};
  while (lo < hi) {
    const unsigned mid = (lo + hi) / 2;
    if (!key_at(mid, &k)) return -1;
    if (KT::less(k, key)) lo = mid + 1;
    else hi = mid;
  }
  if (lo < cnt) {
    if (!key_at(lo, &k)) return -1;
    *found = !KT::less(key, k);
  }
  return static_cast<int>(lo);
}

template <class KT>
int Session<KT>::probe(Node* n, Arg key) const {
  if (idx_->cfg_.sorted_slots) {
    bool found = false;
    const int p = sorted_position(n, key, &found);
    return found ? p : -1;
  }
  std::uint64_t m = idx_->match_(n->fps, KT::fp(key)) & load_bitmap(n->bitmap);
  while (m) {
    const unsigned i = static_cast<unsigned>(std::countr_zero(m));
    m &= m - 1;
    if constexpr (KT::kBlobs) {
      const detail::Blob* b = n->slots.raw_key(i);
      if (b && b->view() == key) return static_cast<int>(i);
    } else {
      if (n->slots.raw_key(i) == key) return static_cast<int>(i);
    }
  }
  return -1;
}

template <class KT>
typename Session<KT>::Node* Session<KT>::lock_target(Arg key) {
  retries_ = 0;
  Node* n = jump(key);
  for (;;) {
    n = target(n, key);
    if (!lock(n)) {
      wait_retry();
      continue;
    }
    if (n->deleted.load(std::memory_order_relaxed)) {
      Node* p = n->prev.load(std::memory_order_acquire);
      unlock_unchanged(n);
      n = p;
      continue;
    }
    Node* nx = n->next.load(std::memory_order_acquire);
    if (nx && nx->anchor_le(key)) {
      unlock_unchanged(n);
      n = nx;
      continue;
    }
    return n;
  }
}

template <class KT>
Result Session<KT>::get(Arg key, std::uint64_t* value) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  auto guard = part_->pin();
  retries_ = 0;
  Node* n = jump(key);
  for (;;) {
    n = target(n, key);
    const std::uint64_t v = n->version.load(std::memory_order_acquire);
    if (v & 1) {
      wait_retry();
      continue;
    }
    if (n->deleted.load(std::memory_order_relaxed)) {
      n = n->prev.load(std::memory_order_acquire);
      continue;
    }
    Node* nx = n->next.load(std::memory_order_acquire);
    if (nx && nx->anchor_le(key)) {
      n = nx;
      continue;
    }
    const bool planted = idx_->cfg_.planted_bug == PlantedBug::kNotFoundWithoutValidation;
    if (planted) {  // widens the window the planted bug needs
      std::this_thread::yield();
      for (int i = 0; i < 2000; ++i) detail::cpu_relax();
    }
    const int s = probe(n, key);
    const std::uint64_t val = s >= 0 ? ld(n->slots.value(static_cast<unsigned>(s))) : 0;
    if (s < 0 && planted) return Result::kNotFound;  // planted: no re-validation
    std::atomic_thread_fence(std::memory_order_acquire);
    if (n->version.load(std::memory_order_relaxed) != v) {
      wait_retry();
      continue;
    }
    if (s < 0) return Result::kNotFound;
    *value = val;
    return Result::kOk;
  }
}

template <class KT>
void Session<KT>::log(Node* n, bool insert) {
  auto& clock = idx_->clock_;
  // Taken under the node locks that order this change after every earlier change of the
  // same anchor; waiting past it makes every later timestamp (on any core) larger.
  const std::uint64_t ts = clock.commit_ts(slot_);
  clock.wait_past(slot_, ts);
  ++stat_logged_;
  if (idx_->cfg_.async_search_layer) {
    auto& l = idx_->logs_[slot_];
    std::lock_guard<std::mutex> g(l.m);
    l.entries.push_back({ts, n, insert});
    return;
  }
  {
    std::lock_guard<std::mutex> g(idx_->sync_layer_m_);
    for (auto& rep : idx_->replicas_) {
      rep->retirer = part_.get();
      idx_->apply(*rep, {ts, n, insert});
      rep->retirer = nullptr;
    }
  }
  if (!insert) part_->retire(static_cast<void*>(n), &detail::free_node<KT>);
}

template <class KT>
void Session<KT>::erase_slot(Node* n, unsigned i) {
  const std::uint64_t bm = ld(n->bitmap);
  if (!idx_->cfg_.sorted_slots) {
    store_bitmap(n->bitmap, bm & ~(std::uint64_t{1} << i));
    return;
  }
  const unsigned cnt = static_cast<unsigned>(std::popcount(bm));
  for (unsigned j = i; j + 1 < cnt; ++j) {
    n->slots.set_key(j, n->slots.raw_key(j + 1));
    st(n->slots.value(j), ld(n->slots.value(j + 1)));
  }
  // A string slot beyond the count holds no pointer, so every pointer a reader finds in a
  // slot was live when it was there (the removed key's copy is retired after this).
  if constexpr (KT::kBlobs) n->slots.set_key(cnt - 1, nullptr);
  store_bitmap(n->bitmap, prefix_mask(cnt - 1));
}

template <class KT>
Result Session<KT>::insert_sorted_locked(Node* n, Arg key, typename KT::Stored stored, std::uint64_t value) {
  bool found = false;
  const unsigned pos = static_cast<unsigned>(sorted_position(n, key, &found));  // locked: never torn
  const unsigned cnt = static_cast<unsigned>(std::popcount(ld(n->bitmap)));
  if (cnt < detail::kSlots) {
    for (unsigned j = cnt; j > pos; --j) {
      n->slots.set_key(j, n->slots.raw_key(j - 1));
      st(n->slots.value(j), ld(n->slots.value(j - 1)));
    }
    n->slots.set_key(pos, stored);
    st(n->slots.value(pos), value);
    store_bitmap(n->bitmap, prefix_mask(cnt + 1));
    unlock(n);
    return Result::kOk;
  }
  // Split: the 65 keys in order; the median (the 33rd) anchors a new node with the upper 33.
  Node* nn = detail::alloc_node<KT>();
  if (!nn) {
    unlock_unchanged(n);
    return Result::kNoMemory;
  }
  struct E {
    typename KT::Stored stored;
    std::uint64_t value;
  };
  std::array<E, detail::kSlots + 1> es;
  for (unsigned i = 0, j = 0; j <= detail::kSlots; ++j)
    es[j] = j == pos ? E{stored, value} : E{n->slots.raw_key(i), ld(n->slots.value(i++))};
  Arg median{};
  if constexpr (KT::kBlobs) {
    median = es[32].stored->view();
    nn->anchor = detail::allocation_should_fail() ? nullptr : detail::Blob::make(median);
    if (!nn->anchor) {
      detail::free_node<KT>(nn);
      unlock_unchanged(n);
      return Result::kNoMemory;
    }
  } else {
    median = es[32].stored;
    nn->anchor = median;
  }
  for (unsigned t = 0; t <= 32; ++t) {
    nn->slots.set_key(t, es[32 + t].stored);
    st(nn->slots.value(t), es[32 + t].value);
  }
  nn->bitmap = prefix_mask(33);
  Node* y = n->next.load(std::memory_order_relaxed);
  nn->prev.store(n, std::memory_order_relaxed);
  nn->next.store(y, std::memory_order_relaxed);
  n->next.store(nn, std::memory_order_release);
  if (y) y->prev.store(nn, std::memory_order_release);
  for (unsigned t = 0; t < 32; ++t) {
    n->slots.set_key(t, es[t].stored);
    st(n->slots.value(t), es[t].value);
  }
  if constexpr (KT::kBlobs)
    for (unsigned t = 32; t < detail::kSlots; ++t) n->slots.set_key(t, nullptr);
  store_bitmap(n->bitmap, prefix_mask(32));
  ++stat_splits_;
  log(nn, true);
  unlock(n);
  return Result::kOk;
}

template <class KT>
Result Session<KT>::insert_locked(Node* n, Arg key, typename KT::Stored stored, std::uint64_t value) {
  if (idx_->cfg_.sorted_slots) return insert_sorted_locked(n, key, stored, value);
  const std::uint64_t bm = ld(n->bitmap);
  const std::uint8_t fp = KT::fp(key);
  if (bm != ~std::uint64_t{0}) {
    const unsigned i = static_cast<unsigned>(std::countr_zero(~bm));
    n->slots.set_key(i, stored);
    st(n->slots.value(i), value);
    st(n->fps[i], fp);
    if (idx_->cfg_.planted_bug == PlantedBug::kBitmapAfterUnlock) {
      unlock(n);
      std::this_thread::yield();  // widens the window the planted bug needs
      __atomic_fetch_or(&n->bitmap, std::uint64_t{1} << i, __ATOMIC_RELEASE);
      return Result::kOk;
    }
    store_bitmap(n->bitmap, bm | (std::uint64_t{1} << i));
    unlock(n);
    return Result::kOk;
  }
  // Split: the median of the 64 keys and the new one anchors a new node holding the upper 33.
  Node* nn = detail::alloc_node<KT>();
  if (!nn) {
    unlock_unchanged(n);
    return Result::kNoMemory;
  }
  struct E {
    typename KT::Stored stored;
    std::uint64_t value;
    std::uint8_t fp;
    int slot;  // -1: the new key
  };
  std::array<E, detail::kSlots + 1> es;
  for (unsigned i = 0; i < detail::kSlots; ++i)
    es[i] = {n->slots.raw_key(i), ld(n->slots.value(i)), ld(n->fps[i]), static_cast<int>(i)};
  es[detail::kSlots] = {stored, value, fp, -1};
  auto key_of = [](const E& e) -> Arg {
    if constexpr (KT::kBlobs) return e.stored->view();
    else return e.stored;
  };
  std::nth_element(es.begin(), es.begin() + 32, es.end(),
                   [&](const E& a, const E& b) { return KT::less(key_of(a), key_of(b)); });
  const Arg median = key_of(es[32]);
  if constexpr (KT::kBlobs) {
    nn->anchor = detail::allocation_should_fail() ? nullptr : detail::Blob::make(median);
    if (!nn->anchor) {
      detail::free_node<KT>(nn);
      unlock_unchanged(n);
      return Result::kNoMemory;
    }
  } else {
    nn->anchor = median;
  }
  std::uint64_t nbm = 0, keep = ld(n->bitmap);
  for (unsigned j = 32; j <= detail::kSlots; ++j) {
    const unsigned t = j - 32;
    nn->slots.set_key(t, es[j].stored);
    st(nn->slots.value(t), es[j].value);
    st(nn->fps[t], es[j].fp);
    nbm |= std::uint64_t{1} << t;
    if (es[j].slot >= 0) keep &= ~(std::uint64_t{1} << es[j].slot);
  }
  nn->bitmap = nbm;
  Node* y = n->next.load(std::memory_order_relaxed);
  nn->prev.store(n, std::memory_order_relaxed);
  nn->next.store(y, std::memory_order_relaxed);
  n->next.store(nn, std::memory_order_release);
  if (y) y->prev.store(nn, std::memory_order_release);
  // The new key, when below the median, goes into a slot the move freed.
  if (KT::less(key, median)) {
    const unsigned i = static_cast<unsigned>(std::countr_zero(~keep));
    n->slots.set_key(i, stored);
    st(n->slots.value(i), value);
    st(n->fps[i], fp);
    keep |= std::uint64_t{1} << i;
  }
  store_bitmap(n->bitmap, keep);
  ++stat_splits_;
  log(nn, true);
  unlock(n);
  return Result::kOk;
}

template <class KT>
Result Session<KT>::insert(Arg key, std::uint64_t value, std::uint64_t* existing) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  typename KT::Stored stored{};
  if (!make_stored(key, &stored)) return Result::kNoMemory;
  auto guard = part_->pin();
  Node* n = lock_target(key);
  const int s = probe(n, key);
  if (s >= 0) {
    if (existing) *existing = ld(n->slots.value(static_cast<unsigned>(s)));
    unlock_unchanged(n);
    if constexpr (KT::kBlobs) detail::Blob::free(const_cast<detail::Blob*>(stored));
    return Result::kExists;
  }
  const Result r = insert_locked(n, key, stored, value);
  if constexpr (KT::kBlobs)
    if (r != Result::kOk) detail::Blob::free(const_cast<detail::Blob*>(stored));
  return r;
}

template <class KT>
Result Session<KT>::update(Arg key, std::uint64_t value, std::uint64_t* previous) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  auto guard = part_->pin();
  Node* n = lock_target(key);
  const int s = probe(n, key);
  if (s < 0) {
    unlock_unchanged(n);
    return Result::kNotFound;
  }
  auto& slot = n->slots.value(static_cast<unsigned>(s));
  if (previous) *previous = ld(slot);
  st(slot, value);
  unlock(n);
  return Result::kOk;
}

template <class KT>
Result Session<KT>::upsert(Arg key, std::uint64_t value, std::uint64_t* previous, bool* existed) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  typename KT::Stored stored{};
  if (!make_stored(key, &stored)) return Result::kNoMemory;
  auto guard = part_->pin();
  Node* n = lock_target(key);
  const int s = probe(n, key);
  if (s >= 0) {
    auto& slot = n->slots.value(static_cast<unsigned>(s));
    if (previous) *previous = ld(slot);
    if (existed) *existed = true;
    st(slot, value);
    unlock(n);
    if constexpr (KT::kBlobs) detail::Blob::free(const_cast<detail::Blob*>(stored));
    return Result::kOk;
  }
  const Result r = insert_locked(n, key, stored, value);
  if (r != Result::kOk) {
    if constexpr (KT::kBlobs) detail::Blob::free(const_cast<detail::Blob*>(stored));
    return r;
  }
  if (existed) *existed = false;
  return Result::kOk;
}

template <class KT>
void Session<KT>::absorb(Node* left, Node* right) {
  std::uint64_t bm = ld(left->bitmap);
  for (std::uint64_t m = ld(right->bitmap); m; m &= m - 1) {
    const unsigned from = static_cast<unsigned>(std::countr_zero(m));
    const unsigned to = static_cast<unsigned>(std::countr_zero(~bm));
    left->slots.set_key(to, right->slots.raw_key(from));
    st(left->slots.value(to), ld(right->slots.value(from)));
    st(left->fps[to], ld(right->fps[from]));
    bm |= std::uint64_t{1} << to;
  }
  store_bitmap(left->bitmap, bm);
  Node* s = right->next.load(std::memory_order_relaxed);
  left->next.store(s, std::memory_order_release);
  if (s) s->prev.store(left, std::memory_order_release);
  right->deleted.store(true, std::memory_order_relaxed);
  ++stat_merges_;
  log(right, false);
}

template <class KT>
void Session<KT>::after_remove(Node* n) {
  const unsigned cnt = static_cast<unsigned>(std::popcount(ld(n->bitmap)));
  // Merge with the right neighbour (n survives).
  Node* r = n->next.load(std::memory_order_relaxed);
  if (r && cnt + std::popcount(load_bitmap(r->bitmap)) < detail::kMergeBelow && lock(r)) {
    const std::uint64_t rbm = ld(r->bitmap);
    if (cnt + std::popcount(rbm) < detail::kMergeBelow) {
      absorb(n, r);
      unlock(r);
      unlock(n);
      return;
    }
    unlock_unchanged(r);
  }
  // Merge into the left neighbour (the left survives, n is deleted).
  if (!n->is_head) {
    Node* l = n->prev.load(std::memory_order_acquire);
    if (cnt + std::popcount(load_bitmap(l->bitmap)) < detail::kMergeBelow && lock(l)) {
      const std::uint64_t lbm = ld(l->bitmap);
      if (!l->deleted.load(std::memory_order_relaxed) && l->next.load(std::memory_order_relaxed) == n &&
          cnt + std::popcount(lbm) < detail::kMergeBelow) {
        absorb(l, n);
        unlock(n);
        unlock(l);
        return;
      }
      unlock_unchanged(l);
    }
  }
  unlock(n);
}

template <class KT>
Result Session<KT>::remove(Arg key, std::uint64_t* previous) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  auto guard = part_->pin();
  Node* n = lock_target(key);
  const int s = probe(n, key);
  if (s < 0) {
    unlock_unchanged(n);
    return Result::kNotFound;
  }
  const unsigned i = static_cast<unsigned>(s);
  if (previous) *previous = ld(n->slots.value(i));
  const auto old = n->slots.raw_key(i);
  erase_slot(n, i);
  after_remove(n);
  if constexpr (KT::kBlobs) part_->retire(const_cast<detail::Blob*>(old), &detail::Blob::free);
  (void)old;
  return Result::kOk;
}

template <class KT>
Result Session<KT>::remove_if(Arg key, std::uint64_t expected) {
  if (!KT::valid(key, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  auto guard = part_->pin();
  Node* n = lock_target(key);
  const int s = probe(n, key);
  if (s < 0) {
    unlock_unchanged(n);
    return Result::kNotFound;
  }
  const unsigned i = static_cast<unsigned>(s);
  if (ld(n->slots.value(i)) != expected) {
    unlock_unchanged(n);
    return Result::kMismatch;
  }
  const auto old = n->slots.raw_key(i);
  erase_slot(n, i);
  after_remove(n);
  if constexpr (KT::kBlobs) part_->retire(const_cast<detail::Blob*>(old), &detail::Blob::free);
  (void)old;
  return Result::kOk;
}

template <class KT>
Result Session<KT>::scan(Arg start, std::size_t count, Pairs* out, ScanPage* page) {
  if (page) *page = {};
  if (!KT::valid(start, idx_->cfg_.max_key_bytes)) return Result::kTooLarge;
  if (count == 0) return Result::kOk;
  return scan_impl(start, nullptr, count, &emit_pair, out, page);
}

template <class KT>
Result Session<KT>::scan_range(Arg start, Arg end, std::size_t limit, Pairs* out, ScanPage* page) {
  if (page) *page = {};
  if (!KT::valid(start, idx_->cfg_.max_key_bytes) || !KT::valid(end, idx_->cfg_.max_key_bytes))
    return Result::kTooLarge;
  if (KT::less(end, start)) return Result::kOk;
  if (limit == 0) limit = idx_->cfg_.max_scan;
  return scan_impl(start, &end, limit, &emit_pair, out, page);
}

template <class KT>
Result Session<KT>::scan_impl(Arg start, const Arg* end, std::size_t limit, EmitFn emit, void* ctx, ScanPage* page) {
  if (limit > idx_->cfg_.max_scan) limit = idx_->cfg_.max_scan;
  auto guard = part_->pin();
  retries_ = 0;
  Owned resume = KT::own(start);
  bool inclusive = true;
  std::size_t got = 0;
  Node* n = target(jump(start), start);
  bool via_walk = true;
  struct Ent {
    Arg key;
    std::uint64_t value;
    std::uint8_t slot;
  };
  std::array<Ent, detail::kSlots> buf;
  for (;;) {
    const std::uint64_t v = n->version.load(std::memory_order_acquire);
    if (v & 1) {
      wait_retry();
      continue;
    }
    const Arg res = KT::arg(resume);
    if (n->deleted.load(std::memory_order_relaxed)) {
      n = target(n->prev.load(std::memory_order_acquire), res);
      via_walk = true;
      continue;
    }
    Node* nx = n->next.load(std::memory_order_acquire);
    if (via_walk) {
      if (!n->anchor_le(res) || (nx && nx->anchor_le(res))) {
        n = target(n, res);
        continue;
      }
    }
    // Read the node's pairs in key order: through the permuter when it was built at this
    // version, else sorted here.
    const std::uint64_t bm = load_bitmap(n->bitmap);
    const unsigned cnt = static_cast<unsigned>(std::popcount(bm));
    const bool sorted = idx_->cfg_.sorted_slots;  // slots [0, cnt) already in key order
    const bool cached = sorted || ld(n->last_scan_version) == v;
    bool torn = false;
    if (cached) {
      for (unsigned i = 0; i < cnt; ++i) {
        const std::uint8_t s = sorted ? static_cast<std::uint8_t>(i) : ld(n->permuter[i]) & 63;
        if constexpr (KT::kBlobs) {
          const detail::Blob* b = n->slots.raw_key(s);
          if (!b) {
            torn = true;
            break;
          }
          buf[i] = {b->view(), ld(n->slots.value(s)), s};
        } else {
          buf[i] = {n->slots.raw_key(s), ld(n->slots.value(s)), s};
        }
      }
    } else {
      unsigned i = 0;
      for (std::uint64_t m = bm; m; m &= m - 1) {
        const auto s = static_cast<std::uint8_t>(std::countr_zero(m));
        if constexpr (KT::kBlobs) {
          const detail::Blob* b = n->slots.raw_key(s);
          if (!b) {
            torn = true;
            break;
          }
          buf[i++] = {b->view(), ld(n->slots.value(s)), s};
        } else {
          buf[i++] = {n->slots.raw_key(s), ld(n->slots.value(s)), s};
        }
      }
      if (!torn)
        std::sort(buf.begin(), buf.begin() + cnt, [](const Ent& a, const Ent& b) { return KT::less(a.key, b.key); });
    }
    // The pairs after the resume point, within the end: buf[lo, lo + take).
    unsigned lo = 0, hi = 0;
    std::size_t take = 0;
    bool limited = false;
    if (!torn) {
      while (lo < cnt && (inclusive ? KT::less(buf[lo].key, res) : !KT::less(res, buf[lo].key))) ++lo;
      hi = lo;
      while (hi < cnt && !(end && KT::less(*end, buf[hi].key))) ++hi;
      take = hi - lo;
      if (take > limit - got) {
        take = limit - got;
        limited = true;
      }
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (torn || n->version.load(std::memory_order_relaxed) != v) {
      wait_retry();
      continue;
    }
    // Validated: emit (string keys stay readable while this thread is pinned).
    for (std::size_t i = lo; i < lo + take; ++i) emit(ctx, buf[i].key, buf[i].value);
    // Cache the order for the next scan: under the write lock, with what was just validated.
    if (!cached && cnt > 1 && lock_at(n, v)) {
      for (unsigned i = 0; i < cnt; ++i) st(n->permuter[i], buf[i].slot);
      st(n->last_scan_version, v + 2);
      unlock(n);
    }
    got += take;
    if (take) {
      resume = KT::own(buf[lo + take - 1].key);
      inclusive = false;
    }
    if (limited || got == limit) {
      if (page) page->more = limited || nx != nullptr;
      return Result::kOk;
    }
    if (!nx) return Result::kOk;
    if (end && KT::less(*end, KT::anchor_arg(nx->anchor))) return Result::kOk;
    n = nx;
    via_walk = false;
  }
}

// ======================================================================================
// Index

template <class KT>
Index<KT>::Index(const Config& c) : cfg_(c) {}

template <class KT>
Status Index<KT>::create(const Config& c, std::unique_ptr<Index>* out) {
  if (!out) return Status::InvalidArgument("hydralist: null output");
  if (c.max_sessions == 0 || c.max_sessions > 65536)
    return Status::InvalidArgument("hydralist: max_sessions must be in [1, 65536]");
  if (c.max_key_bytes == 0 || c.max_key_bytes > (std::size_t{1} << 31))
    return Status::InvalidArgument("hydralist: max_key_bytes must be in [1, 2^31]");
  if (c.max_scan == 0) return Status::InvalidArgument("hydralist: max_scan must be at least 1");
  if (c.combiner_period.count() < 1 || c.combiner_period.count() > 10'000'000)
    return Status::InvalidArgument("hydralist: combiner_period must be in [1 us, 10 s]");
  if (c.replicas > 64) return Status::InvalidArgument("hydralist: replicas must be at most 64");
  if (c.backoff_max_log2 > 30) return Status::InvalidArgument("hydralist: backoff_max_log2 must be at most 30");
  if (c.simd < -1 || c.simd > 2) return Status::InvalidArgument("hydralist: simd must be -1, 0, 1 or 2");
  if (c.simd >= 0 && !simd_supported(static_cast<SimdLevel>(c.simd)))
    return Status::Unavailable(std::string("hydralist: this CPU lacks ") + simd_name(static_cast<SimdLevel>(c.simd)));
  std::unique_ptr<Index> idx(new (std::nothrow) Index(c));
  if (!idx) return Status::ResourceExhausted("hydralist: out of memory");
  Status s = idx->start();
  if (!s.ok()) return s;
  *out = std::move(idx);
  return Status::Ok();
}

template <class KT>
Status Index<KT>::start() {
  simd_ = cfg_.simd >= 0 ? static_cast<SimdLevel>(cfg_.simd) : best_simd();
  match_ = match_fn(simd_);
  mvrlu::init_global_clock(&clock_, cfg_.counter_clock);
  head_ = detail::alloc_node<KT>();
  if (!head_) return Status::ResourceExhausted("hydralist: out of memory");
  head_->is_head = true;
  if constexpr (KT::kBlobs) {
    head_->anchor = detail::Blob::make({});
    if (!head_->anchor) return Status::ResourceExhausted("hydralist: out of memory");
  }
  logs_.reset(new (std::nothrow) detail::ThreadLog<KT>[cfg_.max_sessions]);
  if (!logs_) return Status::ResourceExhausted("hydralist: out of memory");
  const NumaTopology& topo = numa_topology();
  multi_node_ = topo.nodes() > 1;
  const unsigned nrep = cfg_.replicas ? cfg_.replicas : topo.nodes();
  for (unsigned r = 0; r < nrep; ++r) replicas_.push_back(std::make_unique<detail::Replica<KT>>());
  if (cfg_.async_search_layer) {
    for (unsigned r = 0; r < nrep; ++r) replicas_[r]->updater = std::thread([this, r] { updater_loop(r); });
    combiner_ = std::thread([this] { combiner_loop(); });
  }
  return Status::Ok();
}

template <class KT>
Index<KT>::~Index() {
  {
    std::lock_guard<std::mutex> g(cm_);
    stop_ = true;
  }
  ccv_.notify_all();
  if (combiner_.joinable()) combiner_.join();
  for (auto& rep : replicas_) {
    {
      std::lock_guard<std::mutex> g(rep->m);
      rep->queue.push_back(nullptr);  // the stop marker
    }
    rep->cv.notify_all();
    if (rep->updater.joinable()) rep->updater.join();
  }
  // Nodes merged away whose removal no replica has applied yet were never retired.
  auto free_deleted = [](const std::vector<detail::LogEntry<KT>>& es) {
    for (const auto& e : es)
      if (!e.insert) detail::free_node<KT>(e.node);
  };
  for (auto& ml : merged_) free_deleted(ml->entries);
  free_deleted(held_);
  if (logs_)
    for (unsigned i = 0; i < cfg_.max_sessions; ++i) free_deleted(logs_[i].entries);
  for (Node* n = head_; n;) {
    Node* nx = n->next.load(std::memory_order_relaxed);
    if constexpr (KT::kBlobs)
      for (std::uint64_t m = n->bitmap; m; m &= m - 1)
        detail::Blob::free(const_cast<detail::Blob*>(n->slots.raw_key(static_cast<unsigned>(std::countr_zero(m)))));
    detail::free_node<KT>(n);
    n = nx;
  }
  replicas_.clear();
}

template <class KT>
Status Index<KT>::attach(std::unique_ptr<Session<KT>>* out) {
  if (!out) return Status::InvalidArgument("hydralist: null output");
  for (unsigned i = 0; i < cfg_.max_sessions; ++i) {
    bool expected = false;
    if (logs_[i].used.compare_exchange_strong(expected, true)) {
      std::unique_ptr<Session<KT>> s(new (std::nothrow) Session<KT>(this, i, epoch_.join()));
      if (!s) {
        logs_[i].used.store(false);
        return Status::ResourceExhausted("hydralist: out of memory");
      }
      sessions_.fetch_add(1);
      *out = std::move(s);
      return Status::Ok();
    }
  }
  return Status::ResourceExhausted("hydralist: all " + std::to_string(cfg_.max_sessions) +
                                   " sessions are attached (Config::max_sessions)");
}

template <class KT>
void Index<KT>::detach(Session<KT>* s) {
  c_retries_ += s->stat_retries_;
  c_backoffs_ += s->stat_backoffs_;
  c_walk_ += s->stat_walk_;
  c_splits_ += s->stat_splits_;
  c_merges_ += s->stat_merges_;
  c_logged_ += s->stat_logged_;
  logs_[s->slot_].used.store(false, std::memory_order_release);
  sessions_.fetch_sub(1);
}

template <class KT>
void Index<KT>::pause_combiner(bool paused) {
  {
    std::lock_guard<std::mutex> g(cm_);
    paused_ = paused;
  }
  ccv_.notify_all();
}

template <class KT>
void Index<KT>::sync() {
  if (!cfg_.async_search_layer) return;
  std::unique_lock<std::mutex> lk(cm_);
  const std::uint64_t req = ++sync_requested_;
  ccv_.notify_all();
  sync_cv_.wait(lk, [&] { return sync_done_ >= req; });
}

template <class KT>
void Index<KT>::combiner_loop() {
  combiner_part_ = epoch_.join();
  std::unique_lock<std::mutex> lk(cm_);
  for (;;) {
    ccv_.wait_for(lk, cfg_.combiner_period, [&] { return stop_ || sync_requested_ > sync_done_; });
    if (stop_) break;
    const std::uint64_t req = sync_requested_;
    const bool flush = req > sync_done_;
    if (paused_ && !flush) {
      ccv_.wait(lk, [&] { return stop_ || !paused_ || sync_requested_ > sync_done_; });
      continue;
    }
    lk.unlock();
    combine_round(flush);
    if (flush) {
      // Wait until every updater has applied everything, then free what that allows.
      for (auto& rep : replicas_)
        while (rep->consumed.load(std::memory_order_acquire) < next_log_id_) std::this_thread::yield();
      combine_round(false);
    }
    lk.lock();
    if (flush) {
      sync_done_ = req;
      sync_cv_.notify_all();
    }
  }
  lk.unlock();
  combiner_part_.reset();
}

template <class KT>
void Index<KT>::combine_round(bool flush_all) {
  // Entries stamped before W are all in the logs already: each was appended under node locks
  // before its timestamp could be passed by the clock reading below (docs/hydralist.md).
  const std::uint64_t w = flush_all ? std::numeric_limits<std::uint64_t>::max()
                                    : clock_.gc_ts(mvrlu::GlobalClock::kDetectorSlot);
  for (unsigned i = 0; i < cfg_.max_sessions; ++i) {
    auto& l = logs_[i];
    std::lock_guard<std::mutex> g(l.m);
    if (l.entries.empty()) continue;
    held_.insert(held_.end(), l.entries.begin(), l.entries.end());
    l.entries.clear();
  }
  if (!held_.empty()) {
    std::stable_sort(held_.begin(), held_.end(), [](const auto& a, const auto& b) { return a.ts < b.ts; });
    std::size_t k = 0;
    while (k < held_.size() && held_[k].ts < w) ++k;
    if (k > 0) {
      auto ml = std::make_unique<detail::MergedLog<KT>>();
      ml->id = ++next_log_id_;
      ml->entries.assign(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(k));
      held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(k));
      for (auto& rep : replicas_) {
        {
          std::lock_guard<std::mutex> g(rep->m);
          rep->queue.push_back(ml.get());
        }
        rep->cv.notify_one();
      }
      merged_.push_back(std::move(ml));
      merged_logs_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  // Free merged logs every replica has applied; nodes they removed from the search layer are
  // no longer reachable from it and go to the epoch manager (freed once readers are gone).
  std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
  for (auto& rep : replicas_) least = std::min(least, rep->consumed.load(std::memory_order_acquire));
  while (!merged_.empty() && merged_.front()->id <= least) {
    for (const auto& e : merged_.front()->entries)
      if (!e.insert) combiner_part_->retire(static_cast<void*>(e.node), &detail::free_node<KT>);
    merged_.pop_front();
  }
  combiner_part_->collect();
}

template <class KT>
void Index<KT>::apply(detail::Replica<KT>& rep, const detail::LogEntry<KT>& e) {
  const typename KT::ArtKey ak(KT::anchor_arg(e.node->anchor));
  if (e.insert) (void)rep.art.insert(ak.view(), e.node);  // failure: a stale hint, not an error
  else rep.art.erase(ak.view(), e.node);
}

template <class KT>
void Index<KT>::updater_loop(unsigned r) {
  auto& rep = *replicas_[r];
  if (multi_node_ && cfg_.pin_updaters) (void)pin_to_numa_node(r % numa_topology().nodes());
  auto part = epoch_.join();
  rep.retirer = part.get();
  for (;;) {
    detail::MergedLog<KT>* ml = nullptr;
    {
      std::unique_lock<std::mutex> lk(rep.m);
      rep.cv.wait(lk, [&] { return !rep.queue.empty(); });
      ml = rep.queue.front();
      rep.queue.pop_front();
    }
    if (!ml) break;
    for (const auto& e : ml->entries) apply(rep, e);
    rep.consumed.store(ml->id, std::memory_order_release);
    part->collect();
  }
  rep.retirer = nullptr;
}

template <class KT>
Stats Index<KT>::stats() const {
  Stats s;
  for (Node* n = head_; n; n = n->next.load(std::memory_order_acquire)) {
    ++s.nodes;
    s.keys += static_cast<std::uint64_t>(std::popcount(load_bitmap(n->bitmap)));
    s.data_layer_bytes += sizeof(Node);
    if constexpr (KT::kBlobs) {
      s.data_layer_bytes += n->anchor->len + sizeof(detail::Blob);
      for (std::uint64_t m = load_bitmap(n->bitmap); m; m &= m - 1)
        s.data_layer_bytes += n->slots.raw_key(static_cast<unsigned>(std::countr_zero(m)))->len + sizeof(detail::Blob);
    }
  }
  for (auto& rep : replicas_) s.search_layer_bytes += rep->art.memory_bytes();
  s.splits = c_splits_.load();
  s.merges = c_merges_.load();
  s.merged_logs = merged_logs_.load();
  s.log_entries = c_logged_.load();
  s.retries = c_retries_.load();
  s.backoffs = c_backoffs_.load();
  s.walk_steps = c_walk_.load();
  s.replicas = replicas();
  s.simd = cfg_.sorted_slots ? "none (sorted slots)" : simd_name(simd_);
  return s;
}

template <class KT>
std::vector<std::string> Index<KT>::replica_anchors(unsigned r) const {
  std::vector<std::string> out;
  if (r >= replicas_.size()) return out;
  for (auto& [k, v] : replicas_[r]->art.entries()) out.push_back(k);
  return out;
}

template <class KT>
Status Index<KT>::check(std::uint64_t* keys) const {
  std::uint64_t total = 0;
  std::vector<std::pair<std::string, void*>> anchors;
  Node* prev = nullptr;
  for (Node* n = head_; n; n = n->next.load(std::memory_order_acquire)) {
    if (n->deleted.load()) return Status::Internal("hydralist check: a deleted node is linked");
    if (n->version.load() & 1) return Status::Internal("hydralist check: a node is still locked");
    if (n->prev.load() != prev) return Status::Internal("hydralist check: prev does not mirror next");
    if (prev && !prev->is_head && !KT::less(KT::anchor_arg(prev->anchor), KT::anchor_arg(n->anchor)))
      return Status::Internal("hydralist check: anchors not increasing");
    if (n != head_) anchors.emplace_back(std::string(typename KT::ArtKey(KT::anchor_arg(n->anchor)).view()), n);
    Node* nx = n->next.load();
    if (cfg_.sorted_slots) {
      const unsigned cnt = static_cast<unsigned>(std::popcount(n->bitmap));
      if (n->bitmap != prefix_mask(cnt))
        return Status::Internal("hydralist check: a sorted node's slots are not a prefix");
      for (unsigned i = 1; i < cnt; ++i)
        if (!KT::less(n->slots.key(i - 1), n->slots.key(i)))
          return Status::Internal("hydralist check: a sorted node's keys are out of order");
    }
    for (std::uint64_t m = n->bitmap; m; m &= m - 1) {
      const Arg k = n->slots.key(static_cast<unsigned>(std::countr_zero(m)));
      if (!n->anchor_le(k) || (nx && nx->anchor_le(k)))
        return Status::Internal("hydralist check: a key lies outside its node's range");
      ++total;
    }
    prev = n;
  }
  if (keys) *keys = total;
  for (unsigned r = 0; r < replicas_.size(); ++r) {
    auto e = replicas_[r]->art.entries();
    if (e != anchors)
      return Status::Internal("hydralist check: replica " + std::to_string(r) + " indexes " +
                              std::to_string(e.size()) + " anchors, the list has " + std::to_string(anchors.size()) +
                              " (or they differ)");
  }
  return Status::Ok();
}

template class Index<U64Keys>;
template class Index<BytesKeys>;
template class Session<U64Keys>;
template class Session<BytesKeys>;

}  // namespace duet::hydralist
