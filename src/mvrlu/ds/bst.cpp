#include "mvrlu/ds/bst.hpp"

#include "common/log.hpp"

namespace duet::mvrlu::ds {

namespace {

constexpr std::uint64_t kSentinel = ~std::uint64_t{0};

Status bad_key() { return Status::InvalidArgument("mvrlu: the BST reserves key UINT64_MAX"); }

void collect(BstNode* n, std::vector<BstNode*>* out) {
  // Iterative: a degenerate tree is as deep as it is large.
  std::vector<BstNode*> stack;
  if (n != nullptr) stack.push_back(n);
  while (!stack.empty()) {
    BstNode* x = stack.back();
    stack.pop_back();
    out->push_back(x);
    if (x->left != nullptr) stack.push_back(x->left);
    if (x->right != nullptr) stack.push_back(x->right);
  }
}

}  // namespace

Status Bst::create(Domain& d, Thread& t, std::unique_ptr<Bst>* out) {
  BstNode* root = nullptr;
  Status s = t.alloc(&root, BstNode{kSentinel, nullptr, nullptr});
  if (!s.ok()) return s;
  out->reset(new Bst(d, root));
  return Status::Ok();
}

Bst::~Bst() {
  Status s = d_.drain();
  if (!s.ok()) log(LogLevel::kError, "mvrlu: BST torn down without a drained domain: " + s.to_string());
  std::vector<BstNode*> all;
  collect(root_, &all);
  for (BstNode* n : all) d_.destroy_quiescent(n);
}

Status Bst::contains(Thread& t, std::uint64_t key, bool* found) {
  if (key == kSentinel) return bad_key();
  return t.run([&] {
    BstNode* cur = t.deref(t.deref(root_)->left);
    while (cur != nullptr && cur->key != key) cur = t.deref(key < cur->key ? cur->left : cur->right);
    *found = cur != nullptr;
    return Status::Ok();
  });
}

Status Bst::insert(Thread& t, std::uint64_t key, bool* inserted) {
  if (key == kSentinel) return bad_key();
  return t.run([&] {
    BstNode* parent = t.deref(root_);
    BstNode* cur = t.deref(parent->left);
    while (cur != nullptr) {
      if (cur->key == key) {
        *inserted = false;
        return Status::Ok();
      }
      parent = cur;
      cur = t.deref(key < cur->key ? cur->left : cur->right);
    }
    // The empty slot is parent's child; locking parent (latest version = this snapshot's)
    // keeps the slot empty, and any change that would put key elsewhere locks parent too.
    Status s = t.try_lock(parent);
    if (!s.ok()) return s;
    BstNode* node = nullptr;
    s = t.alloc(&node, BstNode{key, nullptr, nullptr});
    if (!s.ok()) return s;
    t.assign_ptr(key < parent->key ? &parent->left : &parent->right, node);
    *inserted = true;
    return Status::Ok();
  });
}

Status Bst::remove(Thread& t, std::uint64_t key, bool* removed) {
  if (key == kSentinel) return bad_key();
  return t.run([&] {
    BstNode* parent = t.deref(root_);
    BstNode* cur = t.deref(parent->left);
    while (cur != nullptr && cur->key != key) {
      parent = cur;
      cur = t.deref(key < cur->key ? cur->left : cur->right);
    }
    if (cur == nullptr) {
      *removed = false;
      return Status::Ok();
    }
    *removed = true;
    if (cur->left == nullptr || cur->right == nullptr) {
      // At most one child: the parent's link skips the node.
      Status s = t.try_lock(parent);
      if (!s.ok()) return s;
      s = t.try_lock(cur);
      if (!s.ok()) return s;
      BstNode* child = cur->left != nullptr ? cur->left : cur->right;
      if (t.cmp_ptr(parent->left, cur)) parent->left = child;
      else parent->right = child;
      return t.free(cur);
    }
    // Two children: the successor's key moves into cur, the successor is unlinked.
    BstNode* sp = cur;
    BstNode* succ = t.deref(cur->right);
    for (BstNode* l = t.deref(succ->left); l != nullptr; l = t.deref(succ->left)) {
      sp = succ;
      succ = l;
    }
    Status s = t.try_lock(cur);
    if (!s.ok()) return s;
    s = t.try_lock(succ);
    if (!s.ok()) return s;
    if (t.cmp_ptr(sp, cur)) {
      cur->right = succ->right;
    } else {
      s = t.try_lock(sp);
      if (!s.ok()) return s;
      sp->left = succ->right;
    }
    cur->key = succ->key;
    return t.free(succ);
  });
}

Status Bst::keys(Thread& t, std::vector<std::uint64_t>* out) {
  return t.run([&] {
    out->clear();
    std::vector<BstNode*> stack;
    BstNode* cur = t.deref(t.deref(root_)->left);
    while (cur != nullptr || !stack.empty()) {
      while (cur != nullptr) {
        stack.push_back(cur);
        cur = t.deref(cur->left);
      }
      cur = stack.back();
      stack.pop_back();
      out->push_back(cur->key);
      cur = t.deref(cur->right);
    }
    return Status::Ok();
  });
}

}  // namespace duet::mvrlu::ds
