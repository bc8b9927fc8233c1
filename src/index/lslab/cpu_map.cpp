// The CPU twin of L-Slab: the algorithm of core.hpp run by CPU threads (group = one thread)
// over host memory, with batches spread across a thread pool.
#include <atomic>
#include <mutex>
#include <string>

#include "index/lslab/core.hpp"
#include "index/lslab/factory.hpp"
#include "index/lslab/map.hpp"
#include "mem/host_memory.hpp"
#include "sched/thread_pool.hpp"

namespace duet::lslab {
namespace {

/// Requests handed to one worker before the batch is split across threads.
constexpr std::size_t kParallelGrain = 2048;
/// How many requests ahead a worker prefetches the bucket's head slab.
constexpr std::size_t kPrefetchDistance = 12;

template <unsigned W>
class CpuMap final : public Map {
 public:
  explicit CpuMap(const Config& c) : config_(c), workers_(c.threads) {
    buckets_ = bucket_count(c, W);
    chunks_.reset(new Slab<W>*[kMaxChunks]());
    counters_ = new PoolCounters();
    counters_->clear_free_lists();
    chunk_shift_ = detail::chunk_shift_for(buckets_);
    view_.buckets = buckets_;
    view_.chunks = chunks_.get();
    view_.chunk_shift = chunk_shift_;
    view_.pool = counters_;
    view_.read_policy = c.read_policy;
  }

  ~CpuMap() override {
    const std::size_t chunk_bytes = sizeof(Slab<W>) << chunk_shift_;
    for (unsigned i = 0; i < kMaxChunks && chunks_[i]; ++i) mem::unmap(chunks_[i], chunk_bytes);
    mem::unmap(view_.heads, heads_bytes_);
    delete counters_;
  }

  Status init() {
    heads_bytes_ = sizeof(Slab<W>) * buckets_;
    // The bucket heads are written whole before the map is used: heads larger than half of
    // physical memory are refused rather than mapped, or the kernel would kill the process
    // while they are being written.
    const std::uint64_t half = mem::half_of_physical_memory();
    if (heads_bytes_ > half)
      return Status::ResourceExhausted("the bucket heads for " + std::to_string(config_.expected_keys) +
                                       " expected keys take " + std::to_string(heads_bytes_) +
                                       " bytes, more than half of physical memory (" + std::to_string(half) +
                                       " bytes)");
    auto* heads = static_cast<Slab<W>*>(mem::map_zeroed(heads_bytes_));
    if (!heads) return Status::ResourceExhausted("cannot map " + std::to_string(heads_bytes_) + " bytes for buckets");
    view_.heads = heads;
    workers_.parallel_for(buckets_, 1 << 16,
                          [&](std::size_t b, std::size_t e, unsigned) {
                            for (std::size_t i = b; i < e; ++i) init_head_slab(heads[i]);
                          });
    Status s = grow(detail::initial_pool_slabs(config_, Slab<W>::kKeySlots));
    grows_.store(0);  // the initial commit is not growth
    return s;
  }

  Status execute(const Batch& batch, BatchResult& result) override {
    Status s = detail::check_batch(batch, result);
    if (!s.ok() || batch.n == 0) return s;
    std::atomic<bool> exhausted{false};
    workers_.parallel_for(batch.n, kParallelGrain, [&](std::size_t begin, std::size_t end, unsigned) {
      const cods::CpuThread g;
      for (std::size_t i = begin; i < end; ++i) {
        if (i + kPrefetchDistance < end) {
          const auto* h = view_.head_of(batch.keys[i + kPrefetchDistance]);
          __builtin_prefetch(&h->keys);
          __builtin_prefetch(&h->values);
        }
        const Op op = batch.ops[i];
        if (op == Op::kPut && !batch.values) {
          result.status[i] = OpStatus::kInvalid;
          result.values[i] = 0;
          continue;
        }
        const std::uint64_t value = op == Op::kPut ? batch.values[i] : 0;
        OpResult r = lslab_execute_group(g, view_, true, op, batch.keys[i], value);
        while (r.status == OpStatus::kRetry) {
          if (!grow(cods::atomic_load(&counters_->capacity) + 1).ok()) {
            exhausted.store(true, std::memory_order_relaxed);
            break;
          }
          r = lslab_execute_group(g, view_, true, op, batch.keys[i], value);
        }
        result.status[i] = r.status;
        result.values[i] = r.value;
      }
    });
    if (exhausted.load())
      return Status::ResourceExhausted("slab pool is at its limit of " + std::to_string(max_slabs()) +
                                       " slabs; requests marked retry were not applied");
    return Status::Ok();
  }

  Status execute_resident(const Batch& batch, BatchResult& result) override { return execute(batch, result); }

  PoolStats stats() const override {
    PoolStats s;
    s.buckets = buckets_;
    s.pool_capacity = cods::atomic_load(&counters_->capacity);
    s.pool_handed_out = counters_->handed_out();
    s.pool_free = counters_->free_slabs();
    s.pool_grows = grows_.load();
    s.slab_bytes = sizeof(Slab<W>);
    return s;
  }
  const char* backend() const override { return "cpu"; }
  unsigned slab_width() const override { return W; }

 private:
  std::uint64_t max_slabs() const { return detail::pool_slab_limit(config_, chunk_shift_); }

  /// Commits chunks until the pool holds at least `want` slabs (1.5x growth), or fails.
  Status grow(std::uint64_t want) {
    std::lock_guard<std::mutex> lk(grow_mutex_);
    const std::uint64_t cap = cods::atomic_load(&counters_->capacity);
    if (cap >= want) return Status::Ok();
    const std::uint64_t chunk = std::uint64_t(1) << chunk_shift_;
    const std::uint64_t target = detail::pool_growth_target(cap, want, chunk_shift_, max_slabs());
    if (target < want) return Status::ResourceExhausted("slab pool limit reached");
    std::uint64_t committed = cap;  // always a multiple of the chunk size
    while (committed < target) {
      const unsigned k = static_cast<unsigned>(committed >> chunk_shift_);
      void* p = mem::map_zeroed(sizeof(Slab<W>) * chunk);
      if (!p) break;
      chunks_[k] = static_cast<Slab<W>*>(p);
      committed += chunk;
    }
    committed = std::min(committed, max_slabs());
    cods::atomic_store(&counters_->capacity, committed, cods::Order::release);
    grows_.fetch_add(1);
    return committed >= want ? Status::Ok() : Status::ResourceExhausted("host memory exhausted growing slab pool");
  }

  Status export_entries(std::vector<std::uint64_t>* keys, std::vector<std::uint64_t>* values) override {
    for (std::uint64_t b = 0; b < buckets_; ++b) export_slab(view_.heads[b], keys, values);
    const std::uint64_t used = counters_->handed_out();
    for (std::uint64_t i = 0; i < used; ++i)
      if (Slab<W>* sl = view_.resolve(i)) export_slab(*sl, keys, values);
    return Status::Ok();
  }

  Status export_range(std::uint64_t from, std::uint64_t max_slabs, std::vector<std::uint64_t>* keys,
                      std::vector<std::uint64_t>* values, std::uint64_t* next) override {
    const std::uint64_t used = counters_->handed_out();
    const std::uint64_t total = buckets_ + used;
    const std::uint64_t end = from < total ? from + std::min(max_slabs, total - from) : from;
    std::uint64_t at = from;
    for (; at < end; ++at) {
      if (at < buckets_) export_slab_live(view_.heads[at], keys, values);
      else if (Slab<W>* sl = view_.resolve(at - buckets_)) export_slab_live(*sl, keys, values);
    }
    *next = at >= total ? 0 : at;
    return Status::Ok();
  }

  Config config_;
  sched::ThreadPool workers_;
  std::uint64_t buckets_ = 0;
  std::size_t heads_bytes_ = 0;
  std::unique_ptr<Slab<W>*[]> chunks_;
  unsigned chunk_shift_ = 16;
  PoolCounters* counters_ = nullptr;
  std::mutex grow_mutex_;
  std::atomic<std::uint64_t> grows_{0};
  MapView<W> view_;
};

}  // namespace

Status make_cpu_map(const Config& c, std::unique_ptr<Map>* out, unsigned slab_width) {
  return detail::make_map<CpuMap>(c, out, slab_width);
}

}  // namespace duet::lslab
