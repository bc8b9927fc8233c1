// The CPU twin of the CODS GPU batch driver (gpu_batch.hpp: make_cpu_structure, make_cpu_*):
// cpu.hpp's front ends behind the GpuStructure interface. Plain C++, compiled in every build.
//
// keys_per_node is dispatched at run time over the three values the GPU builds (6, 14, 30), in
// both regimes, for two front ends (a list is the hash set of one bucket, as on the GPU): 12
// instantiations here, once, rather than in every caller.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "index/cods/cpu.hpp"
#include "index/cods/gpu_batch.hpp"

namespace duet::cods::ds {
namespace {

// The limits of cpu.hpp's templates, by kind and regime (each a static_assert there): a list
// node (and so a hash set's) holds up to 30 keys fully atomic (FoldedMeta::kMaxKeys: the bitset
// shares its word with the lock and version) and 61 elementwise (ListShape); a tree node 48
// (TreeShape: the bitset stays below the level field). Every K the GPU builds fits them all.
constexpr unsigned kListMaxKeysElementwise = 61;
constexpr unsigned kTreeMaxKeys = 48;

constexpr unsigned max_keys(GpuKind kind, Regime r) {
  if (kind == GpuKind::kTree) return kTreeMaxKeys;
  return r == Regime::kFullyAtomic ? FoldedMeta::kMaxKeys : kListMaxKeysElementwise;
}

const char* kind_name(GpuKind k) { return k == GpuKind::kList ? "list" : k == GpuKind::kHashSet ? "hash set" : "tree"; }
const char* regime_name(Regime r) { return r == Regime::kFullyAtomic ? "fully atomic" : "elementwise"; }

template <class Front>
inline constexpr bool kIsTree = false;
template <unsigned K, Regime R>
inline constexpr bool kIsTree<CpuBLinkTree<K, R>> = true;

/// What every twin reports beyond GpuStructure (cpu_node_reads).
class CpuTwinBase : public GpuStructure {
 public:
  virtual std::uint64_t node_reads() const = 0;
};

/// One front end behind GpuStructure. Sessions (a CpuEnv each: an epoch participant, which one
/// thread uses at a time) are kept in a free list: a call borrows one, or opens one when every
/// session is in use, and returns it after, so concurrent calls each hold their own and the
/// object keeps as many as calls ever ran at once.
template <class Front>
class CpuTwin final : public CpuTwinBase {
 public:
  explicit CpuTwin(std::unique_ptr<Front> front) : front_(std::move(front)) {}

  Status execute(const Batch& b, BatchResult& r) override { return run(b, r); }
  Status execute_resident(const Batch& b, BatchResult& r) override { return run(b, r); }
  std::uint64_t nodes_used() const override { return 0; }     // no pool: nodes come from the heap
  std::uint64_t pool_capacity() const override { return 0; }  // no pool, no limit but the heap's
  std::uint64_t node_reads() const override {
    std::lock_guard<std::mutex> lk(m_);
    std::uint64_t sum = 0;
    for (const auto& s : idle_) sum += s->counters().node_reads;
    return sum;
  }

 private:
  Status run(const Batch& b, BatchResult& r) {
    std::unique_ptr<CpuEnv> s = borrow();
    const Status st = r.stamps ? run_stamped(*s, b, r) : front_->execute(*s, b, r);
    give_back(std::move(s));
    return st;
  }

  /// The front end's batch execute, request by request, each between two tickets of ticket_.
  Status run_stamped(CpuEnv& s, const Batch& b, BatchResult& r) {
    if (Status st = detail::check_batch(b, r, kIsTree<Front>); !st.ok()) return st;
    for (std::uint64_t i = 0; i < b.n; ++i) {
      r.stamps[2 * i] = ticket_.fetch_add(1, std::memory_order_seq_cst);
      if constexpr (kIsTree<Front>) {
        const TreeResult x = front_->execute(s, b.ops[i], b.keys[i], b.ops[i] == Op::kInsert ? b.values[i] : 0);
        r.status[i] = x.status;
        r.values[i] = x.status == OpStatus::kFound ? x.value : 0;
      } else {
        r.status[i] = front_->execute(s, b.ops[i], b.keys[i]);
        r.values[i] = 0;
      }
      r.stamps[2 * i + 1] = ticket_.fetch_add(1, std::memory_order_seq_cst);
    }
    return detail::retries_exhausted(b, r);
  }

  std::unique_ptr<CpuEnv> borrow() {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (!idle_.empty()) {
        std::unique_ptr<CpuEnv> s = std::move(idle_.back());
        idle_.pop_back();
        return s;
      }
    }
    return front_->session();
  }
  void give_back(std::unique_ptr<CpuEnv> s) {
    std::lock_guard<std::mutex> lk(m_);
    idle_.push_back(std::move(s));
  }

  std::unique_ptr<Front> front_;  // declared first, destroyed last: sessions go before it
  mutable std::mutex m_;
  std::vector<std::unique_ptr<CpuEnv>> idle_;  // sessions not in a call now (all of them between calls)
  std::atomic<std::uint64_t> ticket_{0};
};

/// InvalidArgument naming a (kind, K, regime) that cpu.hpp's templates do not hold.
Status no_twin(GpuKind kind, unsigned k, Regime r) {
  return Status::InvalidArgument(std::string("the CPU twin has no ") + regime_name(r) + " " + kind_name(kind) + " of " +
                                 std::to_string(k) + " keys per node (at most " +
                                 std::to_string(max_keys(kind, r)) + ")");
}

template <unsigned K, Regime R>
Status build(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (c.kind == GpuKind::kTree) {
    if constexpr (K <= max_keys(GpuKind::kTree, R)) {
      *out = std::make_unique<CpuTwin<CpuBLinkTree<K, R>>>(std::make_unique<CpuBLinkTree<K, R>>());
      return Status::Ok();
    }
    return no_twin(c.kind, K, R);
  }
  if constexpr (K <= max_keys(GpuKind::kHashSet, R)) {
    std::unique_ptr<CpuHashSet<K, R>> set;
    if (Status s = CpuHashSet<K, R>::make(c.kind == GpuKind::kList ? 1 : c.buckets, &set); !s.ok()) return s;
    *out = std::make_unique<CpuTwin<CpuHashSet<K, R>>>(std::move(set));
    return Status::Ok();
  }
  return no_twin(c.kind, K, R);
}

template <unsigned K>
Status build(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  return c.regime == Regime::kFullyAtomic ? build<K, Regime::kFullyAtomic>(c, out)
                                          : build<K, Regime::kElementwise>(c, out);
}

// Every K the GPU builds (6, 14, 30; check_gpu_config) fits every kind and regime, so no_twin
// is never reached today; a K added there must be added to make_cpu_structure's switch.
static_assert(30 <= max_keys(GpuKind::kHashSet, Regime::kFullyAtomic) &&
              30 <= max_keys(GpuKind::kHashSet, Regime::kElementwise) &&
              30 <= max_keys(GpuKind::kTree, Regime::kFullyAtomic) && 30 <= max_keys(GpuKind::kTree, Regime::kElementwise));

}  // namespace

Status make_cpu_structure(const GpuConfig& c, std::unique_ptr<GpuStructure>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_gpu_config(c); !s.ok()) return s;
  if (c.planted != Bug::kNone)
    return Status::InvalidArgument(
        "planted bug " + std::to_string(static_cast<unsigned>(c.planted)) +
        ": planted bugs select the GPU's test instantiation of the kernels; the CPU twin has none (on the CPU "
        "a session's Hooks plant them, on cpu.hpp's templates)");
  switch (c.keys_per_node) {
    case 6: return build<6>(c, out);
    case 14: return build<14>(c, out);
    case 30: return build<30>(c, out);
  }
  return Status::InvalidArgument("keys_per_node " + std::to_string(c.keys_per_node) +
                                 " has no CPU twin (it has 6, 14 and 30, the GPU's)");
}

Status cpu_node_reads(const GpuStructure& twin, std::uint64_t* reads) {
  if (!reads) return Status::InvalidArgument("reads is null");
  const auto* t = dynamic_cast<const CpuTwinBase*>(&twin);
  if (!t) return Status::InvalidArgument("the structure is not a CPU twin (make_cpu_structure)");
  *reads = t->node_reads();
  return Status::Ok();
}

}  // namespace duet::cods::ds
