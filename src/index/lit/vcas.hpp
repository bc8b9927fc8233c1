// Versioned CAS objects (vCAS, Wei et al.), as LIT uses them (dissertation 6.2).
//
// A VObj is a word that changes only through vcas(); every change installs a new VNode holding
// the new word, a timestamp label and a link to the version it replaced. Labels come from a
// Camera: an update labels its version with a fresh camera value (fetch_add), and a snapshot
// is just a read of the camera, so a reader at snapshot T sees, for every object, the newest
// version labelled <= T. A version is labelled lazily, right after it is installed, by its
// installer or by any reader that meets it first; an object's head is labelled before anything
// is installed over it, so labels grow along every chain.
//
// Memory: versions are allocated with new. Chains are cut below the newest version a snapshot
// in use can need (see truncate()); what is cut is retired through epoch reclamation. The
// first version of an object is "inline" (embedded in its owner): it is never retired or
// freed on its own.
#pragma once

#include <atomic>
#include <cstdint>

#include "mem/epoch.hpp"

namespace duet::lit::detail {

/// Label bits of VNode::ts: the low 62 bits are the label (kUnlabelled until set); bit 62
/// marks an inline version (embedded in its owner, without a link to older versions).
inline constexpr std::uint64_t kLabelMask = (std::uint64_t{1} << 62) - 1;
inline constexpr std::uint64_t kUnlabelled = kLabelMask;
inline constexpr std::uint64_t kInlineBit = std::uint64_t{1} << 62;

/// A version. Inline versions are exactly this (the first version of an object, embedded in
/// its owner); versions installed later are VNodeX, which also link to the version they
/// replaced. Code reads `older` only through older_of(), which knows the difference.
struct VNode {
  std::uint64_t val = 0;                       ///< the object's word in this version
  std::atomic<std::uint64_t> ts{kUnlabelled};  ///< label | kInlineBit

  bool is_inline() const { return (ts.load(std::memory_order_relaxed) & kInlineBit) != 0; }
  /// Makes this an inline first version holding `v`, visible at every snapshot (label 0): it is
  /// only reachable through the labelled version that links its owner.
  void init_inline(std::uint64_t v) {
    val = v;
    ts.store(kInlineBit, std::memory_order_relaxed);
  }
};

/// A version installed by vcas: heap-allocated, linked to its predecessor.
struct VNodeX : VNode {
  std::atomic<VNode*> older{nullptr};
  explicit VNodeX(std::uint64_t v) { val = v; }
};

/// The link to the version v replaced, or null for an inline (first) version.
inline std::atomic<VNode*>* older_of(VNode* v) {
  return v->is_inline() ? nullptr : &static_cast<VNodeX*>(v)->older;
}

/// A versioned object: its current version is head.
struct VObj {
  std::atomic<VNode*> head{nullptr};
};

/// The global timestamp.
struct alignas(64) Camera {
  std::atomic<std::uint64_t> now{1};
};

/// Labels v if it is not yet labelled and returns its label.
inline std::uint64_t label(Camera& cam, VNode* v) {
  std::uint64_t t = v->ts.load(std::memory_order_acquire);
  if ((t & kLabelMask) != kUnlabelled) return t & kLabelMask;
  const std::uint64_t l = cam.now.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (v->ts.compare_exchange_strong(t, (t & ~kLabelMask) | l, std::memory_order_acq_rel)) return l;
  return t & kLabelMask;
}

/// The label of an already-labelled version (those below a head always are).
inline std::uint64_t label_of(const VNode* v) { return v->ts.load(std::memory_order_acquire) & kLabelMask; }

/// The current version, labelled.
inline VNode* read_latest(Camera& cam, const VObj& o) {
  VNode* h = o.head.load(std::memory_order_acquire);
  label(cam, h);
  return h;
}

/// The newest version labelled <= t, or null when the object had no version then (or the
/// versions it had were cut because no snapshot could still ask for them).
inline VNode* read_at(Camera& cam, const VObj& o, std::uint64_t t) {
  VNode* v = o.head.load(std::memory_order_acquire);
  if (label(cam, v) <= t) return v;
  for (;;) {
    std::atomic<VNode*>* link = older_of(v);
    if (!link) return nullptr;
    v = link->load(std::memory_order_acquire);
    if (!v) return nullptr;
    if (label_of(v) <= t) return v;
  }
}

/// Frees a chain of versions that nothing can reach any more (map teardown, node deleters).
inline void free_chain(VNode* v) {
  while (v && !v->is_inline()) {
    VNodeX* x = static_cast<VNodeX*>(v);
    v = x->older.load(std::memory_order_relaxed);
    delete x;
  }
}

/// Retires a cut-off chain: each version is retired by the thread that took the pointer to it
/// (exchange), so concurrent cuts of overlapping chains never retire a version twice.
inline void retire_chain(mem::EpochManager::Participant* p, VNode* v, std::uint64_t* retired) {
  while (v && !v->is_inline()) {
    VNodeX* x = static_cast<VNodeX*>(v);
    v = x->older.exchange(nullptr, std::memory_order_acq_rel);
    p->retire(x);
    ++*retired;
  }
}

/// Cuts an object's chain below the newest version labelled <= smin (no snapshot older than
/// smin is in use or can start), walking from `from`, a labelled version of it.
inline void truncate(mem::EpochManager::Participant* p, VNode* from, std::uint64_t smin, std::uint64_t* retired) {
  VNode* v = from;
  while (v && label_of(v) > smin) {
    std::atomic<VNode*>* link = older_of(v);
    v = link ? link->load(std::memory_order_acquire) : nullptr;
  }
  if (!v) return;
  std::atomic<VNode*>* link = older_of(v);
  if (!link || link->load(std::memory_order_relaxed) == nullptr) return;
  retire_chain(p, link->exchange(nullptr, std::memory_order_acq_rel), retired);
}

/// Installs n over `expected` (which the caller read as o's head and which is labelled) if o's
/// head is still `expected`; labels n on success. n->older is set here.
inline bool install(Camera& cam, VObj& o, VNode* expected, VNodeX* n) {
  n->older.store(expected, std::memory_order_relaxed);
  VNode* e = expected;
  if (!o.head.compare_exchange_strong(e, n, std::memory_order_acq_rel, std::memory_order_acquire)) return false;
  label(cam, n);
  return true;
}

}  // namespace duet::lit::detail
