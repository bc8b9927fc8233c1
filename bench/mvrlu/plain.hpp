// Plain lock-based sets for the peers that lock writers: a sorted list, a hash table of such
// lists (a lock per bucket) and an internal BST (one lock). Readers take Policy's read side
// (a shared lock, or an RCU read-side section); writers take the write lock; removed nodes go
// to Policy::retire after the lock is released, and Policy::sync separates the two steps of a
// BST removal for readers that do not take the lock (RCU). Links are atomics stored with
// release and loaded with acquire (rcu_assign_pointer / rcu_dereference).
//
// Policy: struct with `Lock` (default-constructible), `struct ReadGuard { explicit
// ReadGuard(Lock&); }`, `struct WriteGuard { explicit WriteGuard(Lock&); }`, `static void
// sync()` (a grace period, or nothing when readers are excluded), `template <class N> static
// void retire(N* const* nodes, int n)` (frees once no reader can hold them).
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "systems.hpp"

namespace duet::bench::mvrlu {

struct PlainListNode {
  std::uint64_t key;
  std::atomic<PlainListNode*> next;
};

/// A sorted singly linked list with a head sentinel and one lock.
template <class Policy>
class alignas(64) PlainList {
 public:
  PlainList() { head_.next.store(nullptr, std::memory_order_relaxed); }
  ~PlainList() {
    for (PlainListNode* n = head_.next.load(std::memory_order_relaxed); n != nullptr;) {
      PlainListNode* x = n->next.load(std::memory_order_relaxed);
      delete n;
      n = x;
    }
  }
  PlainList(const PlainList&) = delete;
  PlainList& operator=(const PlainList&) = delete;

  bool contains(std::uint64_t k) {
    typename Policy::ReadGuard g(lock_);
    PlainListNode* n = head_.next.load(std::memory_order_acquire);
    while (n != nullptr && n->key < k) n = n->next.load(std::memory_order_acquire);
    return n != nullptr && n->key == k;
  }
  bool insert(std::uint64_t k) {
    typename Policy::WriteGuard g(lock_);
    PlainListNode* prev = &head_;
    PlainListNode* n = prev->next.load(std::memory_order_relaxed);
    while (n != nullptr && n->key < k) prev = n, n = n->next.load(std::memory_order_relaxed);
    if (n != nullptr && n->key == k) return false;
    auto* x = new PlainListNode{k, {}};
    x->next.store(n, std::memory_order_relaxed);
    prev->next.store(x, std::memory_order_release);
    return true;
  }
  bool remove(std::uint64_t k) {
    PlainListNode* victim = nullptr;
    {
      typename Policy::WriteGuard g(lock_);
      PlainListNode* prev = &head_;
      PlainListNode* n = prev->next.load(std::memory_order_relaxed);
      while (n != nullptr && n->key < k) prev = n, n = n->next.load(std::memory_order_relaxed);
      if (n == nullptr || n->key != k) return false;
      prev->next.store(n->next.load(std::memory_order_relaxed), std::memory_order_release);
      victim = n;
    }
    Policy::retire(&victim, 1);
    return true;
  }

 private:
  typename Policy::Lock lock_;
  PlainListNode head_{0, {}};
};

/// A hash table of PlainLists, one lock each.
template <class Policy>
class PlainHash {
 public:
  explicit PlainHash(std::size_t buckets) : n_(buckets), b_(new PlainList<Policy>[buckets]) {}
  bool contains(std::uint64_t k) { return b_[bucket_of(k, n_)].contains(k); }
  bool insert(std::uint64_t k) { return b_[bucket_of(k, n_)].insert(k); }
  bool remove(std::uint64_t k) { return b_[bucket_of(k, n_)].remove(k); }

 private:
  std::size_t n_;
  std::unique_ptr<PlainList<Policy>[]> b_;
};

struct PlainBstNode {
  std::uint64_t key;
  std::atomic<PlainBstNode*> left, right;
};

/// An internal BST under one lock, with a sentinel root (key UINT64_MAX; the tree is its left
/// subtree). A node with two children is replaced by a new node carrying its successor's key;
/// after Policy::sync (readers that passed the old node are gone) the successor is unlinked.
template <class Policy>
class PlainBst {
 public:
  PlainBst() {
    root_.key = std::numeric_limits<std::uint64_t>::max();
    root_.left.store(nullptr, std::memory_order_relaxed);
    root_.right.store(nullptr, std::memory_order_relaxed);
  }
  ~PlainBst() { destroy(root_.left.load(std::memory_order_relaxed)); }
  PlainBst(const PlainBst&) = delete;
  PlainBst& operator=(const PlainBst&) = delete;

  bool contains(std::uint64_t k) {
    typename Policy::ReadGuard g(lock_);
    PlainBstNode* n = root_.left.load(std::memory_order_acquire);
    while (n != nullptr && n->key != k)
      n = (k < n->key ? n->left : n->right).load(std::memory_order_acquire);
    return n != nullptr;
  }
  bool insert(std::uint64_t k) {
    typename Policy::WriteGuard g(lock_);
    PlainBstNode* p = &root_;
    std::atomic<PlainBstNode*>* slot = &root_.left;
    for (PlainBstNode* n = slot->load(std::memory_order_relaxed); n != nullptr; n = slot->load(std::memory_order_relaxed)) {
      if (n->key == k) return false;
      p = n;
      slot = k < n->key ? &n->left : &n->right;
    }
    (void)p;
    auto* x = new PlainBstNode{k, {}, {}};
    x->left.store(nullptr, std::memory_order_relaxed);
    x->right.store(nullptr, std::memory_order_relaxed);
    slot->store(x, std::memory_order_release);
    return true;
  }
  bool remove(std::uint64_t k) {
    PlainBstNode* gone[2] = {nullptr, nullptr};
    int ngone = 0;
    {
      typename Policy::WriteGuard g(lock_);
      std::atomic<PlainBstNode*>* slot = &root_.left;
      PlainBstNode* n = slot->load(std::memory_order_relaxed);
      while (n != nullptr && n->key != k) {
        slot = k < n->key ? &n->left : &n->right;
        n = slot->load(std::memory_order_relaxed);
      }
      if (n == nullptr) return false;
      PlainBstNode* l = n->left.load(std::memory_order_relaxed);
      PlainBstNode* r = n->right.load(std::memory_order_relaxed);
      if (l == nullptr || r == nullptr) {
        slot->store(l != nullptr ? l : r, std::memory_order_release);
        gone[ngone++] = n;
      } else {
        std::atomic<PlainBstNode*>* sslot = &n->right;
        PlainBstNode* s = r;
        for (PlainBstNode* x = s->left.load(std::memory_order_relaxed); x != nullptr; x = s->left.load(std::memory_order_relaxed))
          sslot = &s->left, s = x;
        auto* copy = new PlainBstNode{s->key, {}, {}};
        copy->left.store(l, std::memory_order_relaxed);
        copy->right.store(r, std::memory_order_relaxed);
        slot->store(copy, std::memory_order_release);
        Policy::sync();  // readers on their way to s through n are gone
        std::atomic<PlainBstNode*>* unlink = sslot == &n->right ? &copy->right : sslot;
        unlink->store(s->right.load(std::memory_order_relaxed), std::memory_order_release);
        gone[ngone++] = n;
        gone[ngone++] = s;
      }
    }
    Policy::retire(gone, ngone);
    return true;
  }

 private:
  static void destroy(PlainBstNode* n) {
    if (n == nullptr) return;
    destroy(n->left.load(std::memory_order_relaxed));
    destroy(n->right.load(std::memory_order_relaxed));
    delete n;
  }
  typename Policy::Lock lock_;
  PlainBstNode root_;
};

/// A System over the three plain structures with Policy, whose workers call `Attach` (a
/// per-thread registration object, e.g. RCU's) on their thread.
template <class Policy, class Attach>
class PlainSystem final : public System {
 public:
  explicit PlainSystem(const SetSpec& spec) {
    switch (spec.structure) {
      case Structure::kList: list_ = std::make_unique<PlainList<Policy>>(); break;
      case Structure::kHash: hash_ = std::make_unique<PlainHash<Policy>>(spec.buckets); break;
      case Structure::kBst: bst_ = std::make_unique<PlainBst<Policy>>(); break;
    }
  }
  Status attach(std::unique_ptr<Worker>* out) override {
    *out = std::make_unique<W>(this);
    return Status::Ok();
  }

 private:
  class W final : public Worker {
   public:
    explicit W(PlainSystem* s) : s_(s) {}
    bool contains(std::uint64_t k, bool* r) override {
      *r = s_->list_ ? s_->list_->contains(k) : s_->hash_ ? s_->hash_->contains(k) : s_->bst_->contains(k);
      return true;
    }
    bool insert(std::uint64_t k, bool* r) override {
      *r = s_->list_ ? s_->list_->insert(k) : s_->hash_ ? s_->hash_->insert(k) : s_->bst_->insert(k);
      return true;
    }
    bool remove(std::uint64_t k, bool* r) override {
      *r = s_->list_ ? s_->list_->remove(k) : s_->hash_ ? s_->hash_->remove(k) : s_->bst_->remove(k);
      return true;
    }

   private:
    Attach attached_;
    PlainSystem* s_;
  };
  std::unique_ptr<PlainList<Policy>> list_;
  std::unique_ptr<PlainHash<Policy>> hash_;
  std::unique_ptr<PlainBst<Policy>> bst_;
};

}  // namespace duet::bench::mvrlu
