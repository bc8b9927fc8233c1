#include "batch/orangutan/dag.hpp"

#include <algorithm>

#include "batch/orangutan/union_find.hpp"

namespace duet::batch::orangutan {

void build_dag_cpu_pairs(Team& team, const Tx* txs, std::size_t n, std::uint32_t* parent, std::uint32_t* root,
                         DagFaults faults) {
  const unsigned T = team.size();
  team.run([&](unsigned m) {
    auto [b, e] = team.slice(n, m);
    for (std::size_t i = b; i < e; ++i) parent[i] = static_cast<std::uint32_t>(i);
    team.barrier(m);
    // Rows dealt round-robin in tiles (row i checks the n-i-1 columns after it, so dealing
    // evens the work); within a row, columns in tiles of kDagTile as the kernel walks them.
    const std::size_t row_tiles = (n + kDagTile - 1) / kDagTile;
    for (std::size_t rt = m; rt < row_tiles; rt += T) {
      const std::size_t r0 = rt * kDagTile, r1 = std::min(n, r0 + kDagTile);
      for (std::size_t c0 = r0; c0 < n; c0 += kDagTile) {
        const std::size_t c1 = std::min(n, c0 + kDagTile);
        for (std::size_t i = r0; i < r1; ++i) {
          // As the kernel: the first later transaction of the tile on each of i's accounts.
          const std::uint32_t si = txs[i].sender, ri = txs[i].receiver;
          bool need_s = true, need_r = !faults.ignore_receiver;
          for (std::size_t j = std::max(c0, i + 1); j < c1 && (need_s || need_r); ++j) {
            const std::uint32_t sj = txs[j].sender, rj = txs[j].receiver;
            const bool hit_s = faults.ignore_receiver ? sj == si : (sj == si || rj == si);
            const bool hit_r = sj == ri || rj == ri;
            if ((need_s && hit_s) || (need_r && hit_r)) {
              uf_union(parent, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j), faults.larger_root);
              if (hit_s) need_s = false;
              if (hit_r) need_r = false;
            }
          }
        }
      }
    }
    team.barrier(m);
    for (std::size_t i = b; i < e; ++i) root[i] = uf_find(parent, static_cast<std::uint32_t>(i));
  });
}

void build_dag_cpu_accounts(Team& team, const Tx* txs, std::size_t n, std::uint32_t* first, std::uint32_t* parent,
                            std::uint32_t* root, DagFaults faults) {
  auto atomic_min = [](std::uint32_t* p, std::uint32_t v) {
    std::uint32_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
  };
  team.run([&](unsigned m) {
    auto [b, e] = team.slice(n, m);
    for (std::size_t i = b; i < e; ++i) {
      parent[i] = static_cast<std::uint32_t>(i);
      atomic_min(first + txs[i].sender, static_cast<std::uint32_t>(i));
      if (!faults.ignore_receiver) atomic_min(first + txs[i].receiver, static_cast<std::uint32_t>(i));
    }
    team.barrier(m);
    for (std::size_t i = b; i < e; ++i) {
      const auto x = static_cast<std::uint32_t>(i);
      const std::uint32_t fs = __atomic_load_n(first + txs[i].sender, __ATOMIC_RELAXED);
      if (fs != x) uf_union(parent, x, fs, faults.larger_root);
      if (!faults.ignore_receiver) {
        const std::uint32_t fr = __atomic_load_n(first + txs[i].receiver, __ATOMIC_RELAXED);
        if (fr != x) uf_union(parent, x, fr, faults.larger_root);
      }
    }
    team.barrier(m);
    for (std::size_t i = b; i < e; ++i) {
      root[i] = uf_find(parent, static_cast<std::uint32_t>(i));
      __atomic_store_n(first + txs[i].sender, UINT32_MAX, __ATOMIC_RELAXED);
      __atomic_store_n(first + txs[i].receiver, UINT32_MAX, __ATOMIC_RELAXED);
    }
  });
}

void cluster_lists(const std::uint32_t* root, std::size_t n, std::uint32_t* next, std::uint32_t* tail) {
  // tail[r]: the last member appended to r's list so far (valid only once r itself is seen).
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = root[i];
    next[i] = UINT32_MAX;
    if (r > i) continue;  // no entry below the diagonal of D
    if (r != i) next[tail[r]] = static_cast<std::uint32_t>(i);
    tail[r] = static_cast<std::uint32_t>(i);
  }
}

}  // namespace duet::batch::orangutan
