// Alg. 2-4 on the CPU: the twin of the GPU planner (gpu.cu), step for step.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "batch/epic/epic.hpp"
#include "batch/epic/pool.hpp"

namespace duet::batch::epic {

namespace {

// Stable LSD radix sort on the record bits (63-32) only: ops were submitted in txn order with a
// txn's reads before its writes, and stability keeps that order inside each record. Three 11-bit
// digits; one pass counts all three, and a digit every op shares is skipped.
void sort_by_record(std::vector<std::uint64_t>& ops) {
  constexpr int kBits = 11, kDigits = 3;
  constexpr std::uint32_t kBuckets = 1u << kBits, kMask = kBuckets - 1;
  const std::size_t m = ops.size();
  if (m < 2) return;
  std::vector<std::size_t> count(static_cast<std::size_t>(kDigits) * kBuckets, 0);
  for (auto op : ops) {
    const std::uint32_t rec = op_record(op);
    for (int d = 0; d < kDigits; ++d) ++count[d * kBuckets + ((rec >> (d * kBits)) & kMask)];
  }
  thread_local std::vector<std::uint64_t> tmp;  // reused across epochs
  tmp.resize(m);
  for (int d = 0; d < kDigits; ++d) {
    std::size_t* c = count.data() + static_cast<std::size_t>(d) * kBuckets;
    const int shift = 32 + d * kBits;
    if (c[(ops[0] >> shift) & kMask] == m) continue;  // every op has the same digit
    std::size_t sum = 0;
    for (std::uint32_t k = 0; k < kBuckets; ++k) {
      const std::size_t x = c[k];
      c[k] = sum;
      sum += x;
    }
    for (auto op : ops) tmp[c[(op >> shift) & kMask]++] = op;
    ops.swap(tmp);
  }
}


// The same plan in `parts` contiguous ranges, run as chunks of the calling thread's WorkPool:
// packing by txn ranges; per digit, each range is counted and then scattered (ranges in order,
// so the sort stays stable); the segmented counts, classes and the temp-write scan per range,
// each range starting from the counts across its edges and the temp writes of the ranges before
// it. Equal to the sequential plan bit for bit (tests: EpicPlan.ParallelEqualsSequential).
//
// Ops of records that no op of the batch writes are not sorted at all: with no write before or
// after them they are prev reads (location and copy-from kPrev), which is what the full plan gives
// them. A bitmap over global ids marks the written records; only their ops (and every write) go
// through the sort. On TPC-C NP this leaves out the item reads and most customer reads; on a
// read-only YCSB-C batch, everything.
void plan_parallel(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, std::size_t parts,
                   WorkPool& pool) {
  auto on_threads = [&pool](std::size_t n, auto&& f) { pool.run(n, f); };
  constexpr int kBits = 11, kDigits = 3;
  constexpr std::uint32_t kBuckets = 1u << kBits, kMask = kBuckets - 1;
  const std::size_t n = b.size(), m = b.keys.size();
  // The calling thread's reused buffers, named through references: inside the workers' lambdas
  // a thread_local name would mean the worker's own (empty) instance.
  thread_local std::vector<std::uint64_t> tl_ops, tl_tmp;
  thread_local std::vector<std::uint32_t> tl_wb, tl_wa;
  std::vector<std::uint64_t>& ops = tl_ops;
  std::vector<std::uint64_t>& tmp = tl_tmp;
  std::vector<std::uint32_t>& wb = tl_wb;
  std::vector<std::uint32_t>& wa = tl_wa;
  thread_local std::vector<std::uint64_t> tl_written;
  std::vector<std::uint64_t>& written = tl_written;
  ops.resize(m);
  tmp.resize(m);
  wb.resize(m);
  wa.resize(m);
  out->loc.resize(m);
  out->copy.resize(m);
  auto lo = [&](std::size_t p, std::size_t total) { return total * p / parts; };
  // The written records: the largest written id sizes the bitmap, then each range sets its bits.
  std::vector<std::uint32_t> top(parts, 0);
  on_threads(parts, [&](std::size_t p) {
    std::uint32_t mx = 0;
    for (std::size_t t = lo(p, n); t < lo(p + 1, n); ++t)
      for (std::uint32_t i = b.op_begin[t] + b.nreads[t]; i < b.op_begin[t + 1]; ++i) mx = std::max(mx, global[i]);
    top[p] = mx;
  });
  const std::uint32_t max_written = *std::max_element(top.begin(), top.end());
  written.assign(static_cast<std::size_t>(max_written / 64) + 1, 0);
  on_threads(parts, [&](std::size_t p) {
    for (std::size_t t = lo(p, n); t < lo(p + 1, n); ++t)
      for (std::uint32_t i = b.op_begin[t] + b.nreads[t]; i < b.op_begin[t + 1]; ++i)
        std::atomic_ref<std::uint64_t>(written[global[i] / 64]).fetch_or(1ull << (global[i] % 64), std::memory_order_relaxed);
  });
  // Pack the ops of written records, each range at the front of its own op range; plan the rest.
  std::vector<std::size_t> kept(parts + 1, 0);
  on_threads(parts, [&](std::size_t p) {
    const std::size_t t0 = lo(p, n), t1 = lo(p + 1, n);
    std::size_t k = b.op_begin[t0];
    for (std::size_t t = t0; t < t1; ++t) {
      const std::uint32_t beg = b.op_begin[t], cnt = b.op_begin[t + 1] - beg, nr = b.nreads[t];
      for (std::uint32_t i = 0; i < cnt; ++i) {
        const std::uint32_t g = global[beg + i];
        if (i >= nr || (g <= max_written && (written[g / 64] >> (g % 64) & 1u))) {
          ops[k++] = pack_op(g, static_cast<std::uint32_t>(t), i >= nr, i);
        } else {
          out->loc[beg + i] = kPrev;
          out->copy[beg + i] = kPrev;
        }
      }
    }
    kept[p + 1] = k - b.op_begin[t0];
  });
  // Close the gaps between the ranges (in order, so the sort's input stays in op order).
  std::size_t m_all = 0;
  for (std::size_t p = 0; p < parts; ++p) {
    const std::size_t from = b.op_begin[lo(p, n)];
    if (from != m_all && kept[p + 1]) std::memmove(ops.data() + m_all, ops.data() + from, kept[p + 1] * sizeof(std::uint64_t));
    m_all += kept[p + 1];
  }
  const std::size_t m_sorted = m_all;
  if (m_sorted == 0) {
    out->temp_count = 0;
    return;
  }
  {
    const std::size_t m = m_sorted;  // the rest of the plan works on the sorted ops only
    std::vector<std::size_t> count(parts * kBuckets);
    for (int d = 0; d < kDigits; ++d) {
      const int shift = 32 + d * kBits;
      std::fill(count.begin(), count.end(), 0);
      on_threads(parts, [&](std::size_t p) {
        std::size_t* c = count.data() + p * kBuckets;
        for (std::size_t i = lo(p, m); i < lo(p + 1, m); ++i) ++c[(ops[i] >> shift) & kMask];
      });
      std::size_t first = 0;
      for (std::size_t p = 0; p < parts; ++p) first += count[p * kBuckets + ((ops[0] >> shift) & kMask)];
      if (first == m) continue;  // every op has the same digit
      std::size_t sum = 0;
      for (std::uint32_t k = 0; k < kBuckets; ++k)
        for (std::size_t p = 0; p < parts; ++p) {
          const std::size_t x = count[p * kBuckets + k];
          count[p * kBuckets + k] = sum;
          sum += x;
        }
      on_threads(parts, [&](std::size_t p) {
        std::size_t* c = count.data() + p * kBuckets;
        for (std::size_t i = lo(p, m); i < lo(p + 1, m); ++i) tmp[c[(ops[i] >> shift) & kMask]++] = ops[i];
      });
      ops.swap(tmp);
    }
    std::vector<std::uint32_t> temps(parts + 1, 0);
    on_threads(parts, [&](std::size_t p) {
      const std::size_t a = lo(p, m), e = lo(p + 1, m);
      if (a == e) return;
      // Writes of this range's first record before the range, and of its last record after it.
      std::uint32_t before = 0, after = 0;
      for (std::size_t i = a; i-- > 0 && op_record(ops[i]) == op_record(ops[a]);) before += op_is_write(ops[i]);
      for (std::size_t i = e; i < m && op_record(ops[i]) == op_record(ops[e - 1]); ++i) after += op_is_write(ops[i]);
      for (std::size_t i = a; i < e; ++i)
        wb[i] = i == a ? before : op_record(ops[i]) != op_record(ops[i - 1]) ? 0 : wb[i - 1] + op_is_write(ops[i - 1]);
      for (std::size_t k = e; k-- > a;)
        wa[k] = k + 1 == e ? after : op_record(ops[k]) != op_record(ops[k + 1]) ? 0 : wa[k + 1] + op_is_write(ops[k + 1]);
      std::uint32_t tw = 0;
      for (std::size_t i = a; i < e; ++i) tw += classify(op_is_write(ops[i]), wb[i], wa[i]) == kTempWrite;
      temps[p + 1] = tw;
    });
    for (std::size_t p = 0; p < parts; ++p) temps[p + 1] += temps[p];
    on_threads(parts, [&](std::size_t p) {
      std::uint32_t tw = temps[p];
      for (std::size_t i = lo(p, m); i < lo(p + 1, m); ++i) {
        const bool w = op_is_write(ops[i]);
        const OpType ty = classify(w, wb[i], wa[i]);
        const std::size_t dst = b.op_begin[op_txn(ops[i])] + op_index(ops[i]);
        out->loc[dst] = location(ty, tw);
        out->copy[dst] = copy_location(w, wb[i], tw);
        tw += ty == kTempWrite;
      }
    });
    out->temp_count = temps[parts];
  }
}

}  // namespace

void plan_cpu(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, const Faults& f, int threads) {
  // Large batches without planted faults plan on `threads` threads.
  if (threads > 1 && b.keys.size() >= 65536 && !f.inclusive_scan && !f.write_before_read)
    return plan_parallel(b, global, out, 2 * static_cast<std::size_t>(threads), thread_pool(threads - 1));
  const std::size_t n = b.size();
  const std::size_t m = b.keys.size();
  // Step 1: submit ops in txn order, reads before writes.
  // Work buffers are reused across calls on this thread: fresh ones each epoch would fault
  // their pages in again.
  thread_local std::vector<std::uint64_t> ops;
  thread_local std::vector<std::uint32_t> wb, wa;
  ops.clear();
  ops.reserve(m);
  for (std::size_t t = 0; t < n; ++t) {
    const std::uint32_t beg = b.op_begin[t], cnt = b.op_begin[t + 1] - beg, nr = b.nreads[t];
    if (f.write_before_read) {
      for (std::uint32_t i = nr; i < cnt; ++i) ops.push_back(pack_op(global[beg + i], t, true, i));
      for (std::uint32_t i = 0; i < nr; ++i) ops.push_back(pack_op(global[beg + i], t, false, i));
    } else {
      for (std::uint32_t i = 0; i < cnt; ++i) ops.push_back(pack_op(global[beg + i], t, i >= nr, i));
    }
  }
  // Step 2: stable sort by record.
  sort_by_record(ops);
  // Steps 3-4: exclusive segmented prefix and postfix write counts.
  wb.resize(m);
  wa.resize(m);
  for (std::size_t i = 0; i < m; ++i) {
    const bool seg_start = i == 0 || op_record(ops[i]) != op_record(ops[i - 1]);
    wb[i] = seg_start ? 0 : wb[i - 1] + op_is_write(ops[i - 1]);
  }
  for (std::size_t k = m; k-- > 0;) {
    const bool seg_end = k + 1 == m || op_record(ops[k]) != op_record(ops[k + 1]);
    wa[k] = seg_end ? 0 : wa[k + 1] + op_is_write(ops[k + 1]);
  }
  if (f.inclusive_scan)
    for (std::size_t i = 0; i < m; ++i) {
      wb[i] += op_is_write(ops[i]);
      wa[i] += op_is_write(ops[i]);
    }
  // Steps 5-8: classes, the global exclusive temp-write scan, locations, scatter.
  out->loc.assign(m, kPrev);
  out->copy.assign(m, kPrev);
  std::uint32_t tw = 0;
  for (std::size_t i = 0; i < m; ++i) {
    const bool w = op_is_write(ops[i]);
    const OpType ty = classify(w, wb[i], wa[i]);
    const std::size_t dst = b.op_begin[op_txn(ops[i])] + op_index(ops[i]);
    out->loc[dst] = location(ty, tw);
    out->copy[dst] = copy_location(w, wb[i], tw);
    tw += ty == kTempWrite;
  }
  out->temp_count = tw;
}

}  // namespace duet::batch::epic
