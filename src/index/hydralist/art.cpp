#include "index/hydralist/art.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace duet::hydralist {

enum class NodeType : std::uint8_t { kLeaf, kN4, kN16, kN48, kN256 };

struct ArtNode {
  NodeType type;
};

namespace {

struct Leaf : ArtNode {
  void* value;
  std::uint32_t len;
  std::uint8_t key[1];  // len bytes (allocated past the struct)
  std::string_view view() const { return {reinterpret_cast<const char*>(key), len}; }
};

struct Inner : ArtNode {
  std::uint32_t prefix_len;
  const std::uint8_t* prefix;        // prefix_len bytes, stored after the node
  std::atomic<Leaf*> self{nullptr};  // the key that ends at this node
};

// N4 and N16: unsorted, append-only key bytes; `count` (release-stored after the entry)
// says how many entries are visible. A cleared entry keeps its byte with a null child and is
// reused when the byte comes back.
template <unsigned Cap>
struct NSmall : Inner {
  std::atomic<std::uint8_t> count{0};
  std::uint8_t keys[Cap];
  std::atomic<ArtNode*> child[Cap];
};
using N4 = NSmall<4>;
using N16 = NSmall<16>;

struct N48 : Inner {
  std::atomic<std::uint8_t> count{0};       // child slots used (append-only)
  std::atomic<std::uint8_t> index[256];      // slot + 1, 0 = none; stored after the child
  std::atomic<ArtNode*> child[48];
};

struct N256 : Inner {
  std::atomic<ArtNode*> child[256];
};

std::size_t node_size(NodeType t) {
  switch (t) {
    case NodeType::kN4: return sizeof(N4);
    case NodeType::kN16: return sizeof(N16);
    case NodeType::kN48: return sizeof(N48);
    case NodeType::kN256: return sizeof(N256);
    case NodeType::kLeaf: break;
  }
  return sizeof(Leaf);
}

Leaf* new_leaf(std::string_view key, void* value) {
  void* mem = ::operator new(sizeof(Leaf) + key.size(), std::nothrow);
  if (!mem) return nullptr;
  Leaf* l = static_cast<Leaf*>(mem);
  l->type = NodeType::kLeaf;
  l->value = value;
  l->len = static_cast<std::uint32_t>(key.size());
  if (!key.empty()) std::memcpy(l->key, key.data(), key.size());
  return l;
}

Inner* new_inner(NodeType t, const std::uint8_t* prefix, std::uint32_t plen) {
  const std::size_t base = node_size(t);
  void* mem = ::operator new(base + plen, std::nothrow);
  if (!mem) return nullptr;
  Inner* n = nullptr;
  switch (t) {
    case NodeType::kN4: {
      auto* x = new (mem) N4();
      for (auto& c : x->child) c.store(nullptr, std::memory_order_relaxed);
      n = x;
      break;
    }
    case NodeType::kN16: {
      auto* x = new (mem) N16();
      for (auto& c : x->child) c.store(nullptr, std::memory_order_relaxed);
      n = x;
      break;
    }
    case NodeType::kN48: {
      auto* x = new (mem) N48();
      for (auto& c : x->child) c.store(nullptr, std::memory_order_relaxed);
      for (auto& i : x->index) i.store(0, std::memory_order_relaxed);
      n = x;
      break;
    }
    case NodeType::kN256: {
      auto* x = new (mem) N256();
      for (auto& c : x->child) c.store(nullptr, std::memory_order_relaxed);
      n = x;
      break;
    }
    case NodeType::kLeaf: return nullptr;
  }
  n->type = t;
  n->prefix_len = plen;
  auto* p = static_cast<std::uint8_t*>(mem) + base;
  if (plen) std::memcpy(p, prefix, plen);
  n->prefix = p;
  return n;
}

/// Calls f(byte, child) for every non-null child, in no particular order.
template <class F>
void for_children(const Inner* n, F&& f) {
  switch (n->type) {
    case NodeType::kN4:
    case NodeType::kN16: {
      const bool small = n->type == NodeType::kN4;
      const unsigned cnt = small ? static_cast<const N4*>(n)->count.load(std::memory_order_acquire)
                                 : static_cast<const N16*>(n)->count.load(std::memory_order_acquire);
      for (unsigned i = 0; i < cnt; ++i) {
        const std::uint8_t b = small ? static_cast<const N4*>(n)->keys[i] : static_cast<const N16*>(n)->keys[i];
        ArtNode* c = small ? static_cast<const N4*>(n)->child[i].load(std::memory_order_acquire)
                           : static_cast<const N16*>(n)->child[i].load(std::memory_order_acquire);
        if (c) f(b, c);
      }
      break;
    }
    case NodeType::kN48: {
      auto* x = static_cast<const N48*>(n);
      for (unsigned b = 0; b < 256; ++b) {
        const unsigned s = x->index[b].load(std::memory_order_acquire);
        if (!s) continue;
        if (ArtNode* c = x->child[s - 1].load(std::memory_order_acquire)) f(static_cast<std::uint8_t>(b), c);
      }
      break;
    }
    case NodeType::kN256: {
      auto* x = static_cast<const N256*>(n);
      for (unsigned b = 0; b < 256; ++b)
        if (ArtNode* c = x->child[b].load(std::memory_order_acquire)) f(static_cast<std::uint8_t>(b), c);
      break;
    }
    case NodeType::kLeaf: break;
  }
}

/// The slot for byte b (possibly holding null), or null when the node has none.
std::atomic<ArtNode*>* slot_of(Inner* n, std::uint8_t b) {
  switch (n->type) {
    case NodeType::kN4: {
      auto* x = static_cast<N4*>(n);
      const unsigned cnt = x->count.load(std::memory_order_acquire);
      for (unsigned i = 0; i < cnt; ++i)
        if (x->keys[i] == b) return &x->child[i];
      return nullptr;
    }
    case NodeType::kN16: {
      auto* x = static_cast<N16*>(n);
      const unsigned cnt = x->count.load(std::memory_order_acquire);
      for (unsigned i = 0; i < cnt; ++i)
        if (x->keys[i] == b) return &x->child[i];
      return nullptr;
    }
    case NodeType::kN48: {
      auto* x = static_cast<N48*>(n);
      const unsigned s = x->index[b].load(std::memory_order_acquire);
      return s ? &x->child[s - 1] : nullptr;
    }
    case NodeType::kN256: return &static_cast<N256*>(n)->child[b];
    case NodeType::kLeaf: break;
  }
  return nullptr;
}

ArtNode* child_of(const Inner* n, std::uint8_t b) {
  auto* s = slot_of(const_cast<Inner*>(n), b);
  return s ? s->load(std::memory_order_acquire) : nullptr;
}

/// The child with the greatest byte < b (below = true) or the least byte > b (false),
/// skipping nulls; null when none.
ArtNode* neighbour_child(const Inner* n, int b, bool below) {
  if (n->type == NodeType::kN256) {
    auto* x = static_cast<const N256*>(n);
    if (below) {
      for (int i = b - 1; i >= 0; --i)
        if (ArtNode* c = x->child[i].load(std::memory_order_acquire)) return c;
    } else {
      for (int i = b + 1; i < 256; ++i)
        if (ArtNode* c = x->child[i].load(std::memory_order_acquire)) return c;
    }
    return nullptr;
  }
  if (n->type == NodeType::kN48) {
    auto* x = static_cast<const N48*>(n);
    if (below) {
      for (int i = b - 1; i >= 0; --i) {
        const unsigned s = x->index[i].load(std::memory_order_acquire);
        if (s)
          if (ArtNode* c = x->child[s - 1].load(std::memory_order_acquire)) return c;
      }
    } else {
      for (int i = b + 1; i < 256; ++i) {
        const unsigned s = x->index[i].load(std::memory_order_acquire);
        if (s)
          if (ArtNode* c = x->child[s - 1].load(std::memory_order_acquire)) return c;
      }
    }
    return nullptr;
  }
  ArtNode* best = nullptr;
  int best_b = below ? -1 : 256;
  for_children(n, [&](std::uint8_t k, ArtNode* c) {
    if (below ? (k < b && k > best_b) : (k > b && k < best_b)) best = c, best_b = k;
  });
  return best;
}

/// The leaf with the greatest (max = true) or least key of the subtree; null when the subtree
/// is empty.
Leaf* extreme(ArtNode* n, bool max) {
  while (n) {
    if (n->type == NodeType::kLeaf) return static_cast<Leaf*>(n);
    auto* in = static_cast<Inner*>(n);
    Leaf* self = in->self.load(std::memory_order_acquire);
    if (!max && self) return self;
    ArtNode* c = neighbour_child(in, max ? 256 : -1, max);
    if (!c) return self;
    n = c;
  }
  return nullptr;
}

bool is_empty(const Inner* n) {
  if (n->self.load(std::memory_order_relaxed)) return false;
  bool any = false;
  for_children(n, [&](std::uint8_t, ArtNode*) { any = true; });
  return !any;
}

/// Appends (b, c) to n in place when there is room; returns false when full.
bool append_in_place(Inner* n, std::uint8_t b, ArtNode* c) {
  switch (n->type) {
    case NodeType::kN4:
    case NodeType::kN16: {
      const unsigned cap = n->type == NodeType::kN4 ? 4 : 16;
      auto& count = n->type == NodeType::kN4 ? static_cast<N4*>(n)->count : static_cast<N16*>(n)->count;
      std::uint8_t* keys = n->type == NodeType::kN4 ? static_cast<N4*>(n)->keys : static_cast<N16*>(n)->keys;
      std::atomic<ArtNode*>* child = n->type == NodeType::kN4 ? static_cast<N4*>(n)->child : static_cast<N16*>(n)->child;
      const unsigned cnt = count.load(std::memory_order_relaxed);
      if (cnt == cap) return false;
      keys[cnt] = b;
      child[cnt].store(c, std::memory_order_relaxed);
      count.store(static_cast<std::uint8_t>(cnt + 1), std::memory_order_release);
      return true;
    }
    case NodeType::kN48: {
      auto* x = static_cast<N48*>(n);
      const unsigned cnt = x->count.load(std::memory_order_relaxed);
      if (cnt == 48) return false;
      x->child[cnt].store(c, std::memory_order_relaxed);
      x->count.store(static_cast<std::uint8_t>(cnt + 1), std::memory_order_relaxed);
      x->index[b].store(static_cast<std::uint8_t>(cnt + 1), std::memory_order_release);
      return true;
    }
    case NodeType::kN256:
      static_cast<N256*>(n)->child[b].store(c, std::memory_order_release);
      return true;
    case NodeType::kLeaf: break;
  }
  return false;
}

/// A copy of n's live entries in a node of type t (large enough) with the given prefix;
/// null when memory ran out.
Inner* copy_node(const Inner* n, NodeType t, const std::uint8_t* prefix, std::uint32_t plen) {
  Inner* m = new_inner(t, prefix, plen);
  if (!m) return nullptr;
  m->self.store(n->self.load(std::memory_order_relaxed), std::memory_order_relaxed);
  for_children(n, [&](std::uint8_t b, ArtNode* c) { append_in_place(m, b, c); });
  return m;
}

unsigned live_children(const Inner* n) {
  unsigned k = 0;
  for_children(n, [&](std::uint8_t, ArtNode*) { ++k; });
  return k;
}

/// The smallest type holding k children.
NodeType type_for(unsigned k) {
  return k <= 4 ? NodeType::kN4 : k <= 16 ? NodeType::kN16 : k <= 48 ? NodeType::kN48 : NodeType::kN256;
}

void free_tree(ArtNode* n) {
  if (!n) return;
  if (n->type != NodeType::kLeaf) {
    auto* in = static_cast<Inner*>(n);
    if (Leaf* s = in->self.load(std::memory_order_relaxed)) art_free(s);
    for_children(in, [](std::uint8_t, ArtNode* c) { free_tree(c); });
  }
  art_free(n);
}

}  // namespace

void art_free(ArtNode* node) {
  if (!node) return;
  if (node->type != NodeType::kLeaf) {
    // Inner nodes hold atomics constructed by placement new; they are trivially destructible.
  }
  ::operator delete(static_cast<void*>(node));
}

void art_free_void(void* node) { art_free(static_cast<ArtNode*>(node)); }

Art::~Art() { free_tree(root_.load(std::memory_order_relaxed)); }

void Art::retire(ArtNode* n) {
  if (retire_) retire_(ctx_, n);
  else art_free(n);
}

bool Art::insert(std::string_view key_sv, void* value) {
  const auto* key = reinterpret_cast<const std::uint8_t*>(key_sv.data());
  const std::size_t len = key_sv.size();
  std::atomic<ArtNode*>* slot = &root_;
  std::size_t depth = 0;
  for (;;) {
    ArtNode* n = slot->load(std::memory_order_relaxed);
    if (!n) {
      Leaf* l = new_leaf(key_sv, value);
      if (!l) return false;
      slot->store(l, std::memory_order_release);
      return true;
    }
    if (n->type == NodeType::kLeaf) {
      auto* old = static_cast<Leaf*>(n);
      if (old->view() == key_sv) {
        if (old->value == value) return true;
        Leaf* l = new_leaf(key_sv, value);
        if (!l) return false;
        slot->store(l, std::memory_order_release);
        retire(old);
        return true;
      }
      std::size_t lcp = 0;
      const std::size_t lim = std::min<std::size_t>(old->len, len);
      while (depth + lcp < lim && old->key[depth + lcp] == key[depth + lcp]) ++lcp;
      Leaf* l = new_leaf(key_sv, value);
      if (!l) return false;
      Inner* m = new_inner(NodeType::kN4, key + depth, static_cast<std::uint32_t>(lcp));
      if (!m) {
        art_free(l);
        return false;
      }
      const std::size_t d2 = depth + lcp;
      for (Leaf* x : {old, l}) {
        if (x->len == d2) m->self.store(x, std::memory_order_relaxed);
        else append_in_place(m, x->key[d2], x);
      }
      slot->store(m, std::memory_order_release);
      return true;
    }
    auto* in = static_cast<Inner*>(n);
    std::uint32_t i = 0;
    while (i < in->prefix_len && depth + i < len && in->prefix[i] == key[depth + i]) ++i;
    if (i < in->prefix_len) {
      // Split the prefix at i: a new node with prefix[0, i) holding the old node (prefix
      // after byte i) and the new key.
      Leaf* l = new_leaf(key_sv, value);
      if (!l) return false;
      Inner* m = new_inner(NodeType::kN4, in->prefix, i);
      Inner* rest = m ? copy_node(in, type_for(live_children(in)), in->prefix + i + 1, in->prefix_len - i - 1) : nullptr;
      if (!m || !rest) {
        art_free(l);
        art_free(m);
        return false;
      }
      append_in_place(m, in->prefix[i], rest);
      if (depth + i == len) m->self.store(l, std::memory_order_relaxed);
      else append_in_place(m, key[depth + i], l);
      slot->store(m, std::memory_order_release);
      retire(in);
      return true;
    }
    depth += in->prefix_len;
    if (depth == len) {
      Leaf* old = in->self.load(std::memory_order_relaxed);
      if (old && old->value == value) return true;
      Leaf* l = new_leaf(key_sv, value);
      if (!l) return false;
      in->self.store(l, std::memory_order_release);
      if (old) retire(old);
      return true;
    }
    const std::uint8_t b = key[depth];
    if (std::atomic<ArtNode*>* s = slot_of(in, b)) {
      if (s->load(std::memory_order_relaxed)) {
        slot = s;
        ++depth;
        continue;
      }
      Leaf* l = new_leaf(key_sv, value);
      if (!l) return false;
      s->store(l, std::memory_order_release);
      return true;
    }
    Leaf* l = new_leaf(key_sv, value);
    if (!l) return false;
    if (append_in_place(in, b, l)) return true;
    // Grow (or compact away cleared entries) into the smallest type that has room.
    Inner* m = copy_node(in, type_for(live_children(in) + 1), in->prefix, in->prefix_len);
    if (!m) {
      art_free(l);
      return false;
    }
    if (!append_in_place(m, b, l)) {  // cannot happen: the new type has room
      art_free(l);
      art_free(m);
      return false;
    }
    slot->store(m, std::memory_order_release);
    retire(in);
    return true;
  }
}

bool Art::erase(std::string_view key_sv, void* value) {
  const auto* key = reinterpret_cast<const std::uint8_t*>(key_sv.data());
  const std::size_t len = key_sv.size();
  // The path of (slot, node) pairs, for removing nodes left empty.
  std::vector<std::atomic<ArtNode*>*> path;
  std::atomic<ArtNode*>* slot = &root_;
  std::size_t depth = 0;
  for (;;) {
    ArtNode* n = slot->load(std::memory_order_relaxed);
    if (!n) return false;
    if (n->type == NodeType::kLeaf) {
      auto* l = static_cast<Leaf*>(n);
      if (l->view() != key_sv || l->value != value) return false;
      slot->store(nullptr, std::memory_order_release);
      retire(l);
      break;
    }
    auto* in = static_cast<Inner*>(n);
    if (depth + in->prefix_len > len || std::memcmp(in->prefix, key + depth, in->prefix_len) != 0) return false;
    depth += in->prefix_len;
    path.push_back(slot);
    if (depth == len) {
      Leaf* l = in->self.load(std::memory_order_relaxed);
      if (!l || l->value != value) return false;
      in->self.store(nullptr, std::memory_order_release);
      retire(l);
      break;
    }
    std::atomic<ArtNode*>* s = slot_of(in, key[depth]);
    if (!s) return false;
    slot = s;
    ++depth;
  }
  // Unlink inner nodes left with nothing, bottom up.
  while (!path.empty()) {
    std::atomic<ArtNode*>* s = path.back();
    path.pop_back();
    auto* in = static_cast<Inner*>(s->load(std::memory_order_relaxed));
    if (!is_empty(in)) break;
    s->store(nullptr, std::memory_order_release);
    retire(in);
  }
  return true;
}

void* Art::floor_or_first(std::string_view key_sv) const {
  const auto* key = reinterpret_cast<const std::uint8_t*>(key_sv.data());
  const std::size_t len = key_sv.size();
  ArtNode* cand = nullptr;  // a subtree whose greatest key is the floor, if the descent fails
  ArtNode* n = root_.load(std::memory_order_acquire);
  ArtNode* const root = n;
  std::size_t depth = 0;
  while (n) {
    if (n->type == NodeType::kLeaf) {
      auto* l = static_cast<Leaf*>(n);
      if (l->view() <= key_sv) return l->value;
      break;
    }
    auto* in = static_cast<Inner*>(n);
    int cmp = 0;
    std::uint32_t i = 0;
    for (; i < in->prefix_len; ++i) {
      if (depth + i == len) {
        cmp = 1;  // the key ends inside the prefix: the whole subtree is greater
        break;
      }
      if (in->prefix[i] != key[depth + i]) {
        cmp = in->prefix[i] < key[depth + i] ? -1 : 1;
        break;
      }
    }
    if (cmp < 0) {
      if (Leaf* l = extreme(in, true)) return l->value;
      break;
    }
    if (cmp > 0) break;
    depth += in->prefix_len;
    Leaf* self = in->self.load(std::memory_order_acquire);
    if (depth == len) {
      if (self) return self->value;
      break;
    }
    const std::uint8_t b = key[depth];
    if (ArtNode* below = neighbour_child(in, b, true)) cand = below;
    else if (self) cand = self;
    n = child_of(in, b);
    ++depth;
  }
  if (cand)
    if (Leaf* l = extreme(cand, true)) return l->value;
  Leaf* first = extreme(root, false);
  return first ? first->value : nullptr;
}

void* Art::find(std::string_view key_sv) const {
  const auto* key = reinterpret_cast<const std::uint8_t*>(key_sv.data());
  const std::size_t len = key_sv.size();
  ArtNode* n = root_.load(std::memory_order_acquire);
  std::size_t depth = 0;
  while (n) {
    if (n->type == NodeType::kLeaf) {
      auto* l = static_cast<Leaf*>(n);
      return l->view() == key_sv ? l->value : nullptr;
    }
    auto* in = static_cast<Inner*>(n);
    if (depth + in->prefix_len > len || std::memcmp(in->prefix, key + depth, in->prefix_len) != 0) return nullptr;
    depth += in->prefix_len;
    if (depth == len) {
      Leaf* s = in->self.load(std::memory_order_acquire);
      return s ? s->value : nullptr;
    }
    n = child_of(in, key[depth]);
    ++depth;
  }
  return nullptr;
}

namespace {
void collect(ArtNode* n, std::vector<std::pair<std::string, void*>>* out) {
  if (!n) return;
  if (n->type == NodeType::kLeaf) {
    auto* l = static_cast<Leaf*>(n);
    out->emplace_back(std::string(l->view()), l->value);
    return;
  }
  auto* in = static_cast<Inner*>(n);
  if (Leaf* s = in->self.load(std::memory_order_acquire)) out->emplace_back(std::string(s->view()), s->value);
  std::vector<std::pair<std::uint8_t, ArtNode*>> kids;
  for_children(in, [&](std::uint8_t b, ArtNode* c) { kids.emplace_back(b, c); });
  std::sort(kids.begin(), kids.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [b, c] : kids) collect(c, out);
}
std::size_t bytes_of(ArtNode* n) {
  if (!n) return 0;
  if (n->type == NodeType::kLeaf) return sizeof(Leaf) + static_cast<Leaf*>(n)->len;
  auto* in = static_cast<Inner*>(n);
  std::size_t b = node_size(n->type) + in->prefix_len;
  if (Leaf* s = in->self.load(std::memory_order_acquire)) b += bytes_of(s);
  for_children(in, [&](std::uint8_t, ArtNode* c) { b += bytes_of(c); });
  return b;
}
}  // namespace

std::vector<std::pair<std::string, void*>> Art::entries() const {
  std::vector<std::pair<std::string, void*>> out;
  collect(root_.load(std::memory_order_acquire), &out);
  return out;
}

std::size_t Art::size() const { return entries().size(); }

std::size_t Art::memory_bytes() const { return bytes_of(root_.load(std::memory_order_acquire)); }

}  // namespace duet::hydralist
