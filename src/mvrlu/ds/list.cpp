#include "mvrlu/ds/list.hpp"

#include "common/log.hpp"

namespace duet::mvrlu::ds {

namespace list_ops {

namespace {

/// The last node with key < `key` (or the head) and its successor, in this section's snapshot.
void find(Thread& t, ListNode* head, std::uint64_t key, ListNode** prev, ListNode** cur) {
  ListNode* p = t.deref(head);
  ListNode* n = t.deref(p->next);
  while (n != nullptr && n->key < key) {
    p = n;
    n = t.deref(n->next);
  }
  *prev = p;
  *cur = n;
}

}  // namespace

Status contains(Thread& t, ListNode* head, std::uint64_t key, bool* found) {
  ListNode *p, *n;
  find(t, head, key, &p, &n);
  *found = n != nullptr && n->key == key;
  return Status::Ok();
}

Status insert(Thread& t, ListNode* head, std::uint64_t key, bool* inserted) {
  ListNode *p, *n;
  find(t, head, key, &p, &n);
  if (n != nullptr && n->key == key) {
    *inserted = false;
    return Status::Ok();
  }
  // Locking the predecessor suffices: any change of the interval (p, n) changes p.next, and a
  // removed p stays locked forever (free), so try_lock fails unless p is as this snapshot saw it.
  Status s = t.try_lock(p);
  if (!s.ok()) return s;
  ListNode* node = nullptr;
  s = t.alloc(&node, ListNode{key, p->next});
  if (!s.ok()) return s;
  t.assign_ptr(&p->next, node);
  *inserted = true;
  return Status::Ok();
}

Status remove(Thread& t, ListNode* head, std::uint64_t key, bool* removed) {
  ListNode *p, *n;
  find(t, head, key, &p, &n);
  if (n == nullptr || n->key != key) {
    *removed = false;
    return Status::Ok();
  }
  Status s = t.try_lock(p);
  if (!s.ok()) return s;
  s = t.try_lock(n);
  if (!s.ok()) return s;
  p->next = n->next;
  s = t.free(n);
  if (!s.ok()) return s;
  *removed = true;
  return Status::Ok();
}

void destroy(Domain& d, ListNode* head) {
  ListNode* n = head;
  while (n != nullptr) {
    ListNode* next = n->next;
    d.destroy_quiescent(n);
    n = next;
  }
}

Status keys(Thread& t, ListNode* head, std::vector<std::uint64_t>* out) {
  return t.run([&] {
    out->clear();
    for (ListNode* n = t.deref(t.deref(head)->next); n != nullptr; n = t.deref(n->next)) out->push_back(n->key);
    return Status::Ok();
  });
}

}  // namespace list_ops

namespace {

void drain_or_log(Domain& d) {
  Status s = d.drain();
  if (!s.ok()) log(LogLevel::kError, "mvrlu: structure torn down without a drained domain: " + s.to_string());
}

}  // namespace

Status List::create(Domain& d, Thread& t, std::unique_ptr<List>* out) {
  ListNode* head = nullptr;
  Status s = t.alloc(&head, ListNode{0, nullptr});
  if (!s.ok()) return s;
  out->reset(new List(d, head));
  return Status::Ok();
}

List::~List() {
  drain_or_log(d_);
  list_ops::destroy(d_, head_);
}

Status List::contains(Thread& t, std::uint64_t key, bool* found) {
  return t.run([&] { return list_ops::contains(t, head_, key, found); });
}
Status List::insert(Thread& t, std::uint64_t key, bool* inserted) {
  return t.run([&] { return list_ops::insert(t, head_, key, inserted); });
}
Status List::remove(Thread& t, std::uint64_t key, bool* removed) {
  return t.run([&] { return list_ops::remove(t, head_, key, removed); });
}

Status HashTable::create(Domain& d, Thread& t, std::size_t buckets, std::unique_ptr<HashTable>* out) {
  if (buckets == 0) return Status::InvalidArgument("mvrlu: a hash table needs at least one bucket");
  std::vector<ListNode*> heads(buckets, nullptr);
  for (auto& h : heads) {
    Status s = t.alloc(&h, ListNode{0, nullptr});
    if (!s.ok()) {
      for (ListNode* x : heads) d.destroy_quiescent(x);
      return s;
    }
  }
  out->reset(new HashTable(d, std::move(heads)));
  return Status::Ok();
}

HashTable::~HashTable() {
  drain_or_log(d_);
  for (ListNode* h : heads_) list_ops::destroy(d_, h);
}

ListNode* HashTable::bucket(std::uint64_t key) const {
  std::uint64_t h = key;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return heads_[static_cast<std::size_t>((static_cast<unsigned __int128>(h) * heads_.size()) >> 64)];
}

Status HashTable::contains(Thread& t, std::uint64_t key, bool* found) {
  ListNode* head = bucket(key);
  return t.run([&] { return list_ops::contains(t, head, key, found); });
}
Status HashTable::insert(Thread& t, std::uint64_t key, bool* inserted) {
  ListNode* head = bucket(key);
  return t.run([&] { return list_ops::insert(t, head, key, inserted); });
}
Status HashTable::remove(Thread& t, std::uint64_t key, bool* removed) {
  ListNode* head = bucket(key);
  return t.run([&] { return list_ops::remove(t, head, key, removed); });
}

}  // namespace duet::mvrlu::ds
