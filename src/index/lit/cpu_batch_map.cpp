// The CPU twin of the batched LIT: the algorithm of batch_core.hpp run by CPU threads (group =
// one cods::CpuThread) over host memory, each pass of a batch spread across a thread pool. It
// runs the same passes as the GPU map's kernels, in the same order, so every batch has the same
// outcomes on both (batch.hpp); only the node indices it hands out may differ.
#include <algorithm>
#include <mutex>
#include <new>
#include <numeric>
#include <string>
#include <vector>

#include "cods/group.hpp"
#include "index/lit/batch.hpp"
#include "index/lit/batch_core.hpp"
#include "index/lit/common.hpp"
#include "mem/host_memory.hpp"
#include "sched/thread_pool.hpp"

namespace duet::lit {
namespace {

using core::Node;
using core::Pool;
using core::View;

/// Items one worker takes before a pass is split across the pool's threads.
constexpr std::size_t kGrain = 1024;

class CpuBatchMap final : public BatchMap {
 public:
  explicit CpuBatchMap(const BatchConfig& c) : config_(c), workers_(c.threads) {}

  ~CpuBatchMap() override {
    mem::unmap(view_.buckets, nbuckets_ * sizeof(std::uint64_t));
    mem::unmap(view_.nodes, capacity_ * sizeof(Node));
    mem::unmap(view_.free_list, capacity_ * sizeof(std::uint32_t));
    mem::unmap(view_.retired, capacity_ * sizeof(std::uint32_t));
  }

  /// Maps the root and the pool (committed on first touch) for a checked configuration.
  Status init() {
    const RootLayout layout = root_layout(config_);
    nbuckets_ = layout.buckets;
    capacity_ = layout.node_capacity;
    view_.buckets = static_cast<std::uint64_t*>(mem::map_zeroed(nbuckets_ * sizeof(std::uint64_t)));
    view_.nodes = static_cast<Node*>(mem::map_zeroed(capacity_ * sizeof(Node)));
    view_.free_list = static_cast<std::uint32_t*>(mem::map_zeroed(capacity_ * sizeof(std::uint32_t)));
    view_.retired = static_cast<std::uint32_t*>(mem::map_zeroed(capacity_ * sizeof(std::uint32_t)));
    if (!view_.buckets || !view_.nodes || !view_.free_list || !view_.retired)
      return Status::ResourceExhausted("lit: cannot map host memory for " + std::to_string(nbuckets_) +
                                       " buckets and " + std::to_string(capacity_) + " nodes");
    view_.pool = &pool_;
    core::set_shape(view_, config_, nbuckets_, capacity_);
    workers_.parallel_for(nbuckets_, std::size_t{1} << 16, [&](std::size_t b, std::size_t e, unsigned) {
      for (std::size_t i = b; i < e; ++i) view_.buckets[i] = core::empty_word();
    });
    return Status::Ok();
  }

  const BatchConfig& config() const override { return config_; }
  std::uint64_t bucket_of(std::uint64_t key) const override {
    return root_bucket(config_.predicted_min, config_.bucket_width, nbuckets_, key);
  }
  const char* backend() const override { return "cpu"; }

  BatchStats stats() override {
    std::lock_guard<std::mutex> lock(m_);
    BatchStats s;
    s.epoch = epoch_;
    s.buckets = nbuckets_;
    s.node_capacity = capacity_;
    s.nodes_touched = std::min<std::uint64_t>(pool_.bump, capacity_);
    s.nodes_free = pool_.free_count;
    s.nodes_recycled = pool_.recycled;
    return s;
  }

  Status execute_resident(const PointBatch& points, PointResults results, const RangeBatch* ranges,
                          RangeResidentResults* rr) override {
    Status s = detail::check_batch_args(points, results, ranges, rr != nullptr);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(m_);
    return run_locked(points, results, ranges, rr);
  }

  Status execute(const PointBatch& points, PointResults results, const RangeBatch* ranges,
                 RangeResults* rr) override {
    Status s = detail::check_batch_args(points, results, ranges, rr != nullptr);
    if (!s.ok()) return s;
    std::lock_guard<std::mutex> lock(m_);
    RangeResidentResults dr{};
    const Status run = run_locked(points, results, ranges, &dr);
    if (!run.ok() && run.code() != StatusCode::kResourceExhausted) return run;
    if (rr) {
      const std::size_t nr = ranges ? ranges->n : 0;
      detail::size_range_results(rr, nr, dr.total, dr.snapshot);
      if (nr && dr.offsets) {
        std::copy(dr.offsets, dr.offsets + nr + 1, rr->offsets.begin());
        std::copy(dr.status, dr.status + nr, rr->status.begin());
        std::copy(dr.more, dr.more + nr, rr->more.begin());
        std::copy(dr.resume, dr.resume + nr, rr->resume.begin());
      }
      if (dr.total) {
        std::copy(dr.keys, dr.keys + dr.total, rr->keys.begin());
        std::copy(dr.values, dr.values + dr.total, rr->values.begin());
      }
    }
    return run;
  }

 private:
  /// One batch, the passes of batch_core.hpp in order; m_ is held. Arrays are the caller's.
  Status run_locked(const PointBatch& p, PointResults r, const RangeBatch* ranges, RangeResidentResults* rr) {
    const std::uint64_t np = p.n, nr = ranges ? ranges->n : 0;
    if (np == 0 && nr == 0) {
      if (rr) {
        *rr = {};
        rr->snapshot = epoch_;
        if (ranges) {
          counts_.assign(1, 0);
          rr->offsets = counts_.data();
        }
      }
      return Status::Ok();
    }
    std::uint64_t limit = ranges ? ranges->limit : 0;
    if (limit == 0 || limit > config_.max_range_results) limit = config_.max_range_results;
    try {
      if (nr) {
        counts_.assign(nr + 1, 0);
        offsets_.resize(nr + 1);
        rstatus_.resize(nr);
        more_.resize(nr);
        resume_.resize(nr);
      }
      if (np) {
        sort_bucket_.resize(np);
        sort_index_.resize(np);
        unsorted_.resize(np);
      }
    } catch (const std::bad_alloc&) {
      return Status::ResourceExhausted("lit: host memory for a batch of " + std::to_string(np + nr) + " requests");
    }
    const std::uint64_t epoch = ++epoch_;
    const View v = view_;
    if (np) {  // pass 1: updates, grouped by bucket (see core::update_window)
      workers_.parallel_for(np, kGrain, [&](std::size_t b, std::size_t e, unsigned) {
        for (std::size_t i = b; i < e; ++i) {
          unsorted_[i] = core::update_sort_key(v, p.ops, p.keys, p.values != nullptr, i);
          sort_index_[i] = std::uint32_t(i);
        }
      });
      std::stable_sort(sort_index_.begin(), sort_index_.end(),
                       [&](std::uint32_t a, std::uint32_t b) { return unsorted_[a] < unsorted_[b]; });
      for (std::uint64_t i = 0; i < np; ++i) sort_bucket_[i] = unsorted_[sort_index_[i]];
      const std::uint64_t fc = pool_.free_count;
      workers_.parallel_for(np, kGrain, [&](std::size_t b, std::size_t e, unsigned) {
        const cods::CpuThread g;
        for (std::size_t base = b; base < e; ++base)
          if (!core::update_window(g, v, epoch, fc, p.ops, p.keys, p.values, sort_bucket_.data(), sort_index_.data(),
                                   np, base, r.status, r.out))
            break;
      });
    }
    // Pass 2: GETs and range counts, after every update of the batch.
    const std::uint64_t* starts = nr ? ranges->starts : nullptr;
    const std::uint64_t* ends = nr ? ranges->ends : nullptr;
    workers_.parallel_for(np + nr, kGrain, [&](std::size_t b, std::size_t e, unsigned) {
      const cods::CpuThread g;
      for (std::size_t base = b; base < e; ++base)
        core::batch_window(g, v, epoch, p.ops, p.keys, p.values, r.status, r.out, np, starts, ends, nr, limit,
                           counts_.data(), rstatus_.data(), more_.data(), resume_.data(), base);
    });
    std::uint64_t total = 0;
    Status failed;
    if (nr) {  // pass 3: offsets, then fills
      std::exclusive_scan(counts_.begin(), counts_.end(), offsets_.begin(), std::uint64_t{0});
      total = offsets_[nr];
      try {
        okeys_.resize(total);
        ovals_.resize(total);
      } catch (const std::bad_alloc&) {
        failed = Status::ResourceExhausted("lit: host memory for " + std::to_string(total) + " range entries");
        total = 0;
      }
      if (total)
        workers_.parallel_for(nr, kGrain, [&](std::size_t b, std::size_t e, unsigned) {
          const cods::CpuThread g;
          for (std::size_t base = b; base < e; ++base)
            core::fill_window(g, v, epoch, starts, ends, nr, limit, rstatus_.data(), offsets_.data(), okeys_.data(),
                              ovals_.data(), base);
        });
    }
    if (rr) {
      rr->offsets = nr ? offsets_.data() : nullptr;
      rr->keys = okeys_.data();
      rr->values = ovals_.data();
      rr->status = rstatus_.data();
      rr->more = more_.data();
      rr->resume = resume_.data();
      rr->total = total;
      rr->snapshot = epoch - 1;
      if (!failed.ok()) *rr = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, epoch - 1};
    }
    // Pass 4: recycling. The retry counter is read before it is cleared.
    const std::uint64_t retries = pool_.retries;
    const std::uint64_t base = core::recycle_base(pool_);
    for (std::uint64_t i = 0; i < pool_.retired; ++i) core::recycle_one(v, base, i);
    core::recycle_finish(&pool_);
    if (!failed.ok()) return failed;
    if (retries)
      return Status::ResourceExhausted(std::to_string(retries) + " requests found the node pool exhausted (kRetry)");
    return Status::Ok();
  }

  BatchConfig config_;
  sched::ThreadPool workers_;
  std::mutex m_;
  std::uint64_t nbuckets_ = 0, capacity_ = 0, epoch_ = 0;
  Pool pool_{};
  View view_{};
  std::vector<std::uint32_t> unsorted_, sort_bucket_, sort_index_;  // pass 1's sort keys, sorted keys, order
  std::vector<std::uint64_t> counts_, offsets_, resume_, okeys_, ovals_;
  std::vector<BatchStatus> rstatus_;
  std::vector<std::uint8_t> more_;
};

}  // namespace

Status make_cpu_batch_map(const BatchConfig& c, std::unique_ptr<BatchMap>* out) {
  if (!out) return Status::InvalidArgument("out is null");
  if (Status s = check_config(c); !s.ok()) return s;
  auto m = std::make_unique<CpuBatchMap>(c);
  Status s = m->init();
  if (!s.ok()) return s;
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace duet::lit
