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
// in use can need (see truncate()); what is cut is retired through epoch reclamation. A
// version can be "inline" (embedded in its owner, the first version of an object): it is never
// retired or freed on its own.
#pragma once

#include <atomic>
#include <cstdint>

#include "mem/epoch.hpp"

namespace duet::lit::detail {

/// Label bits of VNode::ts: the low 62 bits are the label (kUnlabelled until set); bit 62
/// marks an inline version, bit 63 a version that says "deleted" (a removed value).
inline constexpr std::uint64_t kLabelMask = (std::uint64_t{1} << 62) - 1;
inline constexpr std::uint64_t kUnlabelled = kLabelMask;
inline constexpr std::uint64_t kInlineBit = std::uint64_t{1} << 62;
inline constexpr std::uint64_t kDeadBit = std::uint64_t{1} << 63;

struct VNode {
  std::uint64_t val = 0;                          ///< the object's word in this version
  std::atomic<std::uint64_t> ts{kUnlabelled};     ///< label | flag bits
  std::atomic<VNode*> older{nullptr};             ///< the version this one replaced

  VNode() = default;
  VNode(std::uint64_t v, std::uint64_t flags) : val(v), ts(kUnlabelled | flags) {}
  bool dead() const { return (ts.load(std::memory_order_relaxed) & kDeadBit) != 0; }
  bool is_inline() const { return (ts.load(std::memory_order_relaxed) & kInlineBit) != 0; }
};

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

/// The labelled label of an already-labelled version (those below a head always are).
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
  for (v = v->older.load(std::memory_order_acquire); v; v = v->older.load(std::memory_order_acquire))
    if (label_of(v) <= t) return v;
  return nullptr;
}

/// Frees a chain of versions that nothing can reach any more (map teardown, node deleters).
inline void free_chain(VNode* v) {
  while (v && !v->is_inline()) {
    VNode* o = v->older.load(std::memory_order_relaxed);
    delete v;
    v = o;
  }
}

/// Retires a cut-off chain: each version is retired by the thread that took the pointer to it
/// (exchange), so concurrent cuts of overlapping chains never retire a version twice.
inline void retire_chain(mem::EpochManager::Participant* p, VNode* v, std::uint64_t* retired) {
  while (v && !v->is_inline()) {
    VNode* o = v->older.exchange(nullptr, std::memory_order_acq_rel);
    p->retire(v);
    ++*retired;
    v = o;
  }
}

/// Cuts o's chain below the newest version labelled <= smin (no snapshot older than smin is
/// in use or can start) starting the walk at `from`, a labelled version of o.
inline void truncate(mem::EpochManager::Participant* p, VNode* from, std::uint64_t smin, std::uint64_t* retired) {
  VNode* v = from;
  while (v && label_of(v) > smin) v = v->older.load(std::memory_order_acquire);
  if (!v) return;
  if (v->older.load(std::memory_order_relaxed) == nullptr) return;
  retire_chain(p, v->older.exchange(nullptr, std::memory_order_acq_rel), retired);
}

/// Installs n over `expected` (which the caller read as o's head and which is labelled) if o's
/// head is still `expected`; labels n on success. n->older is set here.
inline bool install(Camera& cam, VObj& o, VNode* expected, VNode* n) {
  n->older.store(expected, std::memory_order_relaxed);
  if (!o.head.compare_exchange_strong(expected, n, std::memory_order_acq_rel, std::memory_order_acquire))
    return false;
  label(cam, n);
  return true;
}

}  // namespace duet::lit::detail
