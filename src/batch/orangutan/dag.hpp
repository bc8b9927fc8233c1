// OranguTAN's conflict DAG (Alg. 13 / 15): transactions that share an account (sender or
// receiver, so RW, WR and WW conflicts all count) are unioned; each cluster's root is its
// earliest transaction. The result is the root array: root[i] = the first transaction of i's
// cluster (root[i] <= i). The cluster of root r, read in increasing index, is row r of the
// seed's upper-triangular matrix D, in block order.
//
// Builders (all produce the same root array for the same block):
//   - kGpu: tiled all-pairs kernels on the device (gpu_dag.hpp);
//   - kCpuPairs: the GPU algorithm's CPU twin, the same tiled all-pairs check and union-find
//     on the team's threads (O(n^2) comparisons). In each tile, a row is unioned with the first
//     later transaction on each of its two accounts only: chaining each transaction to the next
//     one on each account connects every conflicting pair, so the clusters are those of
//     unioning all pairs, with far fewer contended CAS operations;
//   - kCpuAccounts: a CPU builder that unions each transaction with the first transaction of
//     each account it touches (O(n), through a per-account scratch array).
#pragma once

#include <cstddef>
#include <cstdint>

#include "batch/orangutan/profiles.hpp"
#include "batch/orangutan/team.hpp"
#include "cods/hd.hpp"

namespace duet::batch::orangutan {

/// Planted bugs for the tests' negative controls. All false in normal use.
struct DagFaults {
  bool ignore_receiver = false;  ///< the conflict test compares senders only
  bool larger_root = false;      ///< the larger index becomes the root
};

/// Do two transactions touch a common account? (The seed's `conflicts(other)`.)
DUET_HD DUET_INLINE bool conflicts(std::uint32_t s1, std::uint32_t r1, std::uint32_t s2, std::uint32_t r2,
                                   bool ignore_receiver = false) {
  if (ignore_receiver) return s1 == s2;
  return s1 == s2 || s1 == r2 || r1 == s2 || r1 == r2;
}

/// Columns per tile in the all-pairs check (the GPU's threads per block).
constexpr unsigned kDagTile = 256;

/// CPU twin of the GPU kernels: parent[] and root[] hold n entries each. Runs on every member of
/// `team` (call from outside team.run).
void build_dag_cpu_pairs(Team& team, const Tx* txs, std::size_t n, std::uint32_t* parent, std::uint32_t* root,
                         DagFaults faults = {});

/// Per-account builder. `first` has one entry per account, all UINT32_MAX on entry and on
/// return. Runs on every member of `team`.
void build_dag_cpu_accounts(Team& team, const Tx* txs, std::size_t n, std::uint32_t* first, std::uint32_t* parent,
                            std::uint32_t* root, DagFaults faults = {});

/// The clusters of a root array as per-root lists in block order: next[i] is the next member
/// of i's cluster after i (UINT32_MAX at the end); a cluster is walked from its root. Entries
/// with root[i] > i (impossible with a correct union-find) have no place in the upper-
/// triangular D and are left out of every list. O(n), one thread.
void cluster_lists(const std::uint32_t* root, std::size_t n, std::uint32_t* next, std::uint32_t* tail_scratch);

}  // namespace duet::batch::orangutan
