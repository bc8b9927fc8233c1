// LIT: the Lookup Interlocked Table, an ordered map of 8-byte keys to 8-byte values with
// linearizable range queries (dissertation chapter 6), CPU version.
//
// Structure. A data layer holds every entry in one lock-free sorted linked list (Harris), with
// boundary-marker nodes interleaved; an index layer of levels maps a key, through a monotone
// lookup function per level, to the marker of its bucket. Every pointer or value that changes
// is a versioned CAS object (vCAS): updates install a new version labelled from a global
// camera, so a range query reads the whole structure as of one timestamp.
//
// Guarantees. GET, INSERT, REMOVE, UPSERT and RANGE are linearizable. Point operations are
// lock-free; a range query is wait-free (it reads a fixed snapshot and helps at most one label
// per version it meets). Splits and resizes of the index never block an operation: they are
// serialised among themselves by a try-lock that an operation skips when it is taken (the split
// is then left to a later insert).
//
// Memory. Unlinked nodes and versions no snapshot can read are retired through epoch-based
// reclamation and freed once no operation can reach them; boundary markers a resize left
// unreferenced are removed from the data layer once no operation can see the old index. Index
// levels are kept until the map is destroyed (they are few: one per split and resize).
//
// Use: one Session per thread (sessions are not thread-safe); the map must outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "duet/status.hpp"

namespace duet::lit {

/// Map parameters. The defaults follow section 6.5 (10,000 root buckets, T_n = T_l = 10).
struct Config {
  /// Keys outside [universe_min, universe_max] are refused with Result::kOutOfUniverse.
  std::uint64_t universe_min = 0;
  std::uint64_t universe_max = ~std::uint64_t{0};
  /// The root lookup function's range at creation: keys are spread over `buckets` buckets
  /// as if they were uniform in [predicted_min, predicted_max]. Keys outside still work (they
  /// go to the first or last bucket, which then split and, later, resize). The range must lie
  /// inside the universe and may be one key; these fields and max_range_results follow the
  /// rule the batched LIT's configuration follows too (common.hpp).
  std::uint64_t predicted_min = 0;
  std::uint64_t predicted_max = 1u << 20;
  /// Buckets of the root level at creation (and the least a resize makes).
  std::size_t buckets = 10000;
  /// T_n: an insert that walked this many data-layer nodes from its bucket's marker splits
  /// the bucket.
  std::uint32_t split_threshold = 10;
  /// Most buckets one split creates (a split aims at split_threshold keys per new bucket).
  std::uint32_t split_max_fanout = 1024;
  /// T_l: an insert that crossed this many index levels resizes the index instead.
  std::uint32_t resize_levels = 10;
  /// A resize makes max(buckets, entries / resize_keys_per_bucket) root buckets, at most
  /// max_buckets.
  std::uint32_t resize_keys_per_bucket = 2;
  std::size_t max_buckets = std::size_t{1} << 24;
  /// The index also resizes when the map holds more than resize_load entries per root bucket
  /// (0: never; only the depth rule above applies, as in the seed), so lookups stay at one
  /// level with about two entries per bucket as the map grows, like a hash table's load
  /// factor. Checked every 64 updates of a session.
  std::uint32_t resize_load = 4;
  /// Splits and resizes happen automatically (off: only split()/resize() change the index).
  bool auto_structure = true;
  /// A range query returns at most this many entries per call; a longer range pages (see
  /// RangePage).
  std::size_t max_range_results = std::size_t{1} << 20;
  /// Sessions that may exist at once.
  std::size_t max_sessions = 512;
};

/// Outcome of a point operation.
enum class Result : std::uint8_t {
  kOk,             ///< done (GET: found)
  kNotFound,       ///< GET or REMOVE of an absent key
  kExists,         ///< INSERT of a present key (nothing changed)
  kOutOfUniverse,  ///< the key is outside [universe_min, universe_max] (nothing changed)
};
/// "ok", "not_found", "exists" or "out_of_universe" (spelled as the batched LIT's outcomes).
const char* to_string(Result r);

/// What a range query call returned. Every page is linearizable on its own (it equals the
/// map's contents in [start, end] at one instant, `snapshot`); consecutive pages are separate
/// snapshots.
struct RangePage {
  std::size_t count = 0;        ///< entries appended by this call
  bool more = false;            ///< the range has entries after the last one returned
  std::uint64_t resume_key = 0; ///< when more: call again with start = resume_key
  std::uint64_t snapshot = 0;   ///< the camera timestamp the page was read at
};

/// Counters for tests and benchmarks; consistent when the map is quiescent.
struct Stats {
  std::uint64_t splits = 0, resizes = 0;
  std::uint64_t root_buckets = 0;      ///< buckets of the current root level
  std::uint64_t max_depth = 0;         ///< deepest level chain of the current index (root = 1)
  std::uint64_t markers_removed = 0;   ///< boundary markers removed after resizes
  std::uint64_t retired = 0, freed = 0;  ///< nodes and versions handed to / freed by reclamation
  std::uint64_t camera = 0;            ///< the global timestamp
};

class Map;

/// One thread's handle on a map: pins for reclamation, announces range-query snapshots and
/// batches its counters. Not thread-safe; destroy it before the map.
class Session {
 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// GET: kOk and *value when present, else kNotFound.
  Result get(std::uint64_t key, std::uint64_t* value);
  /// INSERT: adds key -> value when absent (kOk), else kExists and nothing changes.
  Result insert(std::uint64_t key, std::uint64_t value);
  /// REMOVE: deletes the key (kOk, *previous = its value when previous is non-null), or
  /// kNotFound.
  Result remove(std::uint64_t key, std::uint64_t* previous = nullptr);
  /// UPSERT: sets key -> value whether or not it was present; *existed says which and, when
  /// it was, *previous holds the value it replaced (either pointer may be null). kOk.
  Result upsert(std::uint64_t key, std::uint64_t value, std::uint64_t* previous = nullptr,
                bool* existed = nullptr);
  /// RANGE_QUERY(start, end), both inclusive: appends the entries with start <= key <= end in
  /// key order to *out, at most `limit` of them (0: the map's max_range_results; larger values
  /// are capped by it). InvalidArgument when start > end or a bound is outside the universe
  /// (nothing is appended). Allocates only for *out's growth.
  Status range(std::uint64_t start, std::uint64_t end, std::vector<std::pair<std::uint64_t, std::uint64_t>>* out,
               RangePage* page, std::size_t limit = 0);
  /// RANGE_QUERY over k ranges (1 .. kMaxRangeCursors) at one snapshot: for each i, as
  /// range(ranges[i].first, ranges[i].second, &outs[i], &pages[i], limit), all read at the same
  /// camera timestamp. The k walks of the data layer advance in turn, one node each, so one
  /// thread keeps k chains of dependent cache misses in flight (a single walk is one chain).
  /// InvalidArgument (nothing appended) for k over the bound or any bad range.
  static constexpr std::size_t kMaxRangeCursors = 64;
  Status range_many(const std::pair<std::uint64_t, std::uint64_t>* ranges, std::size_t k,
                    std::vector<std::pair<std::uint64_t, std::uint64_t>>* outs, RangePage* pages,
                    std::size_t limit = 0);

 private:
  friend class Map;
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Map {
 public:
  /// Checks the configuration (the error names the first bad field) and creates an empty map.
  static Status create(const Config& config, std::unique_ptr<Map>* out);
  ~Map();
  Map(const Map&) = delete;
  Map& operator=(const Map&) = delete;

  /// A new session; ResourceExhausted when max_sessions are open.
  Status open_session(std::unique_ptr<Session>* out);

  /// SPLIT the bucket holding `key` (at its deepest level) into `fanout` buckets (0: the
  /// automatic choice). Returns false when the bucket cannot split (one key wide) or another
  /// split or resize is running. Thread-safe; normally called by inserts.
  bool split(std::uint64_t key, std::uint32_t fanout = 0);
  /// RESIZE: replaces the index with one level of `buckets` buckets over [min_key, max_key].
  /// False when another split or resize is running. Thread-safe; normally called by inserts.
  bool resize(std::size_t buckets, std::uint64_t min_key, std::uint64_t max_key);

  Stats stats() const;
  const Config& config() const;

  /// For tests, on a quiescent map: checks the data layer is sorted, has no marked node left
  /// reachable from live versions, and every index slot points at a marker whose key is the
  /// least key of its bucket. Also returns the number of entries in *entries (may be null).
  Status check(std::uint64_t* entries) const;

  struct Impl;  ///< internal (lit.cpp)

 private:
  friend class Session;
  explicit Map(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Byte-string keys: an order-preserving encoding of strings of up to 7 bytes into keys
/// (bytes big-endian in the high 7 bytes, the length in the low byte), so that comparing keys
/// compares the strings bytewise with a shorter prefix first. False (and *key unchanged) for a
/// longer string. Longer keys need a key handle kept by the caller (see docs/lit.md).
bool encode_bytes(std::string_view bytes, std::uint64_t* key);
/// The string a key from encode_bytes stands for; false when `key` is not such an encoding.
bool decode_bytes(std::uint64_t key, std::string* bytes);
/// Longest string encode_bytes takes.
inline constexpr std::size_t kMaxEncodedBytes = 7;

}  // namespace duet::lit
