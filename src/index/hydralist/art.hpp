// Hydralist's search layer: an adaptive radix tree (Leis et al., ICDE'13) over byte-string
// keys with one writer and lock-free readers, written for this project.
//
// Shape. Inner nodes of 4, 16, 48 and 256 children with path compression (each inner node
// stores its whole compressed prefix); leaves hold the full key and a value pointer. A key
// that is a prefix of others is stored in the inner node where it ends (its `self` leaf), so
// every byte string, the empty one included, has a place.
//
// Concurrency (ROWEX with one writer). Exactly one thread modifies a tree (Hydralist's updater
// of that replica); any number of threads read it without locks. Every field a reader follows
// is an atomic word or was written before the node was published. The writer never changes
// a published node's keys or prefix: it appends a child in place (child first, then the count
// or index byte that makes it visible, with release order), clears a child or `self` in place
// by storing null, and otherwise builds a replacement node (growth, prefix split, a leaf with
// a new value) and swaps it into the parent's slot with one atomic store. Replaced nodes and
// removed leaves go to the retire callback; Hydralist hands them to its epoch manager, so a
// reader pinned before the swap can finish with them.
//
// Readers see some state the writer produced, or a mixture on different paths; the search
// layer only hints where to start walking the data layer, so floor() may answer with a
// neighbour of the true floor during changes, never with freed memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace duet::hydralist {

struct ArtNode;

/// Called with every node the writer unlinks; `node` must be passed to art_free() once no
/// reader can hold it.
using ArtRetireFn = void (*)(void* ctx, ArtNode* node);
/// Frees one node retired by an Art (not its children).
void art_free(ArtNode* node);
/// The deleter signature of art_free, for reclamation schemes that take void*.
void art_free_void(void* node);

class Art {
 public:
  /// `retire` receives unlinked nodes; null frees them at once (only safe without readers).
  explicit Art(ArtRetireFn retire = nullptr, void* ctx = nullptr) : retire_(retire), ctx_(ctx) {}
  /// Frees every node (no reader may be running).
  ~Art();
  Art(const Art&) = delete;
  Art& operator=(const Art&) = delete;

  // ---- writer (one thread at a time) ----
  /// Maps key -> value (value non-null), replacing an existing mapping. Returns false when
  /// memory ran out (the tree is unchanged; the search layer then lacks this entry, which
  /// costs walks, not correctness).
  bool insert(std::string_view key, void* value);
  /// Removes key when it maps to `value`; returns whether it did.
  bool erase(std::string_view key, void* value);

  // ---- readers (any thread, concurrently with the writer) ----
  /// The value of the greatest key <= `key`; when there is none (or the tree is changing
  /// under the search) the value of the least key; null when the tree is empty.
  void* floor_or_first(std::string_view key) const;
  /// Exact lookup: the value of `key`, or null.
  void* find(std::string_view key) const;

  // ---- quiescent helpers (tests, statistics) ----
  /// Every (key, value), in key order.
  std::vector<std::pair<std::string, void*>> entries() const;
  /// Number of keys.
  std::size_t size() const;
  /// Bytes held by the tree's nodes.
  std::size_t memory_bytes() const;

 private:
  void retire(ArtNode* n);

  std::atomic<ArtNode*> root_{nullptr};
  ArtRetireFn retire_;
  void* ctx_;
};

}  // namespace duet::hydralist
