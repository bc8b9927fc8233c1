// Small helpers for driving L-Slab maps in tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "index/lslab/map.hpp"

namespace duet::lslab::testing {

/// A batch with its own storage.
struct OwnedBatch {
  std::vector<Op> ops;
  std::vector<std::uint64_t> keys, values;
  std::vector<OpStatus> status;
  std::vector<std::uint64_t> out;

  void add(Op op, std::uint64_t key, std::uint64_t value = 0) {
    ops.push_back(op);
    keys.push_back(key);
    values.push_back(value);
  }
  std::size_t size() const { return ops.size(); }
  Status run(Map& m) {
    status.assign(ops.size(), OpStatus::kRetry);
    out.assign(ops.size(), ~std::uint64_t(0));
    Batch b{ops.data(), keys.data(), values.data(), ops.size()};
    BatchResult r{status.data(), out.data()};
    return m.execute(b, r);
  }
};

inline std::unique_ptr<Map> cpu_map(Config c = {}, unsigned width = 8) {
  std::unique_ptr<Map> m;
  Status s = make_cpu_map(c, &m, width);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return m;
}

/// One request, run as a batch of one.
inline std::pair<OpStatus, std::uint64_t> one(Map& m, Op op, std::uint64_t key, std::uint64_t value = 0) {
  OwnedBatch b;
  b.add(op, key, value);
  Status s = b.run(m);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return {b.status[0], b.out[0]};
}

}  // namespace duet::lslab::testing
