// Alg. 2-4 on the CPU: the twin of the GPU planner (gpu.cu), step for step.
#include <vector>

#include "batch/epic/epic.hpp"

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

}  // namespace

void plan_cpu(const Batch& b, const std::vector<std::uint32_t>& global, Plan* out, const Faults& f) {
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
