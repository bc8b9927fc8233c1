// A binary search tree on MV-RLU, in the style of RLU's and Citrus's internal trees: keys live
// in every node; a node with two children is removed by moving its successor's key into it
// (the node is locked and rewritten) and unlinking the successor. Readers walk the snapshot of
// their section; updates lock every node they change. Linearizable (docs/mvrlu.md).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "duet/mvrlu.hpp"

namespace duet::mvrlu::ds {

struct BstNode {
  std::uint64_t key;
  BstNode* left;   ///< master pointers (assign_ptr)
  BstNode* right;
};

/// A set of 64-bit keys below UINT64_MAX (the root sentinel's key; InvalidArgument for it).
/// Each call is one section of `t`, retried on conflict; not to be called inside a section.
/// Cost: O(depth) derefs; an update locks 1 to 3 nodes.
class Bst {
 public:
  static Status create(Domain& d, Thread& t, std::unique_ptr<Bst>* out);
  /// Drains the domain (no section may be open) and deallocates every node.
  ~Bst();
  Status contains(Thread& t, std::uint64_t key, bool* found);
  Status insert(Thread& t, std::uint64_t key, bool* inserted);
  Status remove(Thread& t, std::uint64_t key, bool* removed);
  /// In-order keys of one snapshot.
  Status keys(Thread& t, std::vector<std::uint64_t>* out);

 private:
  Bst(Domain& d, BstNode* root) : d_(d), root_(root) {}
  Domain& d_;
  BstNode* root_;  ///< sentinel, key UINT64_MAX; the tree is its left subtree
};

}  // namespace duet::mvrlu::ds
