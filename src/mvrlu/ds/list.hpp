// Structures on MV-RLU: a sorted linked list (a set of 64-bit keys) and a hash table of such
// lists. Readers traverse the snapshot of their section with no locks and no validation;
// updates lock what they change (an insert its predecessor; a remove the predecessor and the
// node) and commit at read_unlock. Every operation is linearizable: reads at their local-ts,
// updates at their commit (docs/mvrlu.md, "Structures").
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "duet/mvrlu.hpp"

namespace duet::mvrlu::ds {

struct ListNode {
  std::uint64_t key;
  ListNode* next;  ///< master pointer (assign_ptr)
};

/// The list's algorithm on a head sentinel, for use inside a caller's section (the hash
/// table composes it). Conflicts come back as a conflict Status (is_conflict).
namespace list_ops {
Status contains(Thread& t, ListNode* head, std::uint64_t key, bool* found);
Status insert(Thread& t, ListNode* head, std::uint64_t key, bool* inserted);
Status remove(Thread& t, ListNode* head, std::uint64_t key, bool* removed);
/// After Domain::drain, with no section open: deallocates the nodes after `head` and `head`.
void destroy(Domain& d, ListNode* head);
/// With no section open and no writer: the keys in order, read from the masters after drain,
/// or through a section of `t` (used by tests).
Status keys(Thread& t, ListNode* head, std::vector<std::uint64_t>* out);
}  // namespace list_ops

/// A sorted set of 64-bit keys. Each call is one section of `t` (retried on conflict), so it
/// must not be made inside an open section. Cost: O(n) derefs; updates lock one or two nodes.
class List {
 public:
  /// Allocates the head sentinel with `t`.
  static Status create(Domain& d, Thread& t, std::unique_ptr<List>* out);
  /// Drains the domain (no section may be open then) and deallocates every node.
  ~List();
  Status contains(Thread& t, std::uint64_t key, bool* found);
  Status insert(Thread& t, std::uint64_t key, bool* inserted);
  Status remove(Thread& t, std::uint64_t key, bool* removed);
  Status keys(Thread& t, std::vector<std::uint64_t>* out) { return list_ops::keys(t, head_, out); }

 private:
  List(Domain& d, ListNode* head) : d_(d), head_(head) {}
  Domain& d_;
  ListNode* head_;
};

/// A hash table of sorted lists (one head sentinel per bucket); MurmurHash3's finaliser
/// picks the bucket. Same contract as List; updates of different buckets never conflict.
class HashTable {
 public:
  /// InvalidArgument for zero buckets.
  static Status create(Domain& d, Thread& t, std::size_t buckets, std::unique_ptr<HashTable>* out);
  ~HashTable();
  Status contains(Thread& t, std::uint64_t key, bool* found);
  Status insert(Thread& t, std::uint64_t key, bool* inserted);
  Status remove(Thread& t, std::uint64_t key, bool* removed);
  std::size_t buckets() const { return heads_.size(); }

 private:
  HashTable(Domain& d, std::vector<ListNode*> heads) : d_(d), heads_(std::move(heads)) {}
  ListNode* bucket(std::uint64_t key) const;
  Domain& d_;
  std::vector<ListNode*> heads_;
};

}  // namespace duet::mvrlu::ds
