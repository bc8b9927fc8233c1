#include "systems.hpp"

#include "index/lit/lit.hpp"

namespace duet::bench::lit {
namespace {

/// LIT configured as in section 6.5: `buckets` root buckets spread over the key range
/// (predicted range = [1, key_range]); every other field keeps its default.
duet::lit::Config lit_config(const SystemSpec& spec) {
  duet::lit::Config c;
  c.buckets = spec.lit_buckets;
  c.predicted_min = 1;
  c.predicted_max = spec.key_range;
  if (spec.threads + 8 > c.max_sessions) c.max_sessions = spec.threads + 8;
  return c;
}

/// A thread's LIT session behind run_stream's operations.
class LitWorker final : public StreamWorker<LitWorker> {
 public:
  explicit LitWorker(std::unique_ptr<duet::lit::Session> s) : s_(std::move(s)) {}

  bool get(std::uint64_t k, std::uint64_t* v) { return s_->get(k, v) == duet::lit::Result::kOk; }
  bool insert(std::uint64_t k, std::uint64_t v) { return s_->insert(k, v) == duet::lit::Result::kOk; }
  bool remove(std::uint64_t k) { return s_->remove(k) == duet::lit::Result::kOk; }
  /// One call: a range of range_length keys is far below max_range_results, so one page.
  bool range(std::uint64_t start, std::uint64_t end, Pairs* out) {
    duet::lit::RangePage page;
    return s_->range(start, end, out, &page).ok();
  }


 private:
  std::unique_ptr<duet::lit::Session> s_;
};

class LitSystem final : public System {
 public:
  explicit LitSystem(std::unique_ptr<duet::lit::Map> map) : map_(std::move(map)) {}
  duet::Status attach(std::unique_ptr<Worker>* out) override {
    std::unique_ptr<duet::lit::Session> s;
    duet::Status st = map_->open_session(&s);
    if (!st.ok()) return st;
    *out = std::make_unique<LitWorker>(std::move(s));
    return duet::Status::Ok();
  }
  Json stats() const override {
    const duet::lit::Stats s = map_->stats();
    Json j = Json::object();
    j.set("splits", s.splits);
    j.set("resizes", s.resizes);
    j.set("root_buckets", s.root_buckets);
    j.set("max_depth", s.max_depth);
    j.set("markers_removed", s.markers_removed);
    j.set("retired", s.retired);
    j.set("freed", s.freed);
    j.set("camera", s.camera);
    return j;
  }

 private:
  std::unique_ptr<duet::lit::Map> map_;
};

#ifndef DUET_BENCH_HAVE_LIBCDS
const char* const kNoCds = "libcds (header cds/container/skip_list_map_hp.h, library cds) was not found at configure time";
#endif
#ifndef DUET_BENCH_HAVE_TBB
const char* const kNoTbb = "oneTBB (package TBB) was not found at configure time";
#endif

const char* const kCdsDescription =
    "libcds 2.3 cds::container::SkipListMap<cds::gc::HP, uint64_t, uint64_t> (lock-free skip list, "
    "hazard-pointer reclamation)";
const char* const kCdsRange =
    "not linearizable: finds the first node >= start through the skip list's own search, then walks "
    "level 0 collecting nodes not marked deleted; if the node it stands on is deleted meanwhile it "
    "searches again from that node's key. Each pair returned was present at some instant during the "
    "scan, but the result is not one snapshot";
const char* const kTbbDescription =
    "oneTBB tbb::concurrent_map<uint64_t, std::atomic<uint64_t>> (skip list with fine-grained "
    "locking on insert). It has no thread-safe erase (only unsafe_erase), so REMOVE is a logical "
    "deletion: the value becomes a tombstone and INSERT of a tombstoned key revives it; nodes are "
    "never unlinked, so after updates the skip list also holds tombstoned keys (at most the key range)";
const char* const kTbbRange =
    "not linearizable: lower_bound(start) then iterates while key <= end, skipping tombstones, with no "
    "snapshot";

}  // namespace

void Tally::add(const Tally& o) {
  ops += o.ops;
  gets += o.gets;
  get_hits += o.get_hits;
  inserts += o.inserts;
  inserts_done += o.inserts_done;
  removes += o.removes;
  removes_done += o.removes_done;
  ranges += o.ranges;
  range_pairs += o.range_pairs;
  ranges_checked += o.ranges_checked;
  wrong += o.wrong;
  errors += o.errors;
}

const std::vector<SystemInfo>& all_systems() {
  static const std::vector<SystemInfo> systems = {
      {"lit", true, "",
       "Duet's LIT (src/index/lit): Harris list data layer, index of lookup-function levels, vCAS versions, "
       "epoch-based reclamation",
       true, "linearizable: one snapshot of [start, end] at a camera timestamp (vCAS)"},
#ifdef DUET_BENCH_HAVE_LIBCDS
      {"libcds", true, "", kCdsDescription, false, kCdsRange},
#else
      {"libcds", false, kNoCds, kCdsDescription, false, kCdsRange},
#endif
#ifdef DUET_BENCH_HAVE_TBB
      {"tbb", true, "", kTbbDescription, false, kTbbRange},
#else
      {"tbb", false, kNoTbb, kTbbDescription, false, kTbbRange},
#endif
  };
  return systems;
}

const SystemInfo* find_system(const std::string& name) {
  for (const SystemInfo& s : all_systems())
    if (s.name == name) return &s;
  return nullptr;
}

Json lit_config_json(const SystemSpec& spec) {
  const duet::lit::Config c = lit_config(spec);
  Json j = Json::object();
  j.set("buckets", static_cast<std::uint64_t>(c.buckets));
  j.set("predicted_min", c.predicted_min);
  j.set("predicted_max", "key range");
  j.set("split_threshold", c.split_threshold);
  j.set("split_max_fanout", c.split_max_fanout);
  j.set("resize_levels", c.resize_levels);
  j.set("resize_keys_per_bucket", c.resize_keys_per_bucket);
  j.set("max_buckets", static_cast<std::uint64_t>(c.max_buckets));
  j.set("resize_load", c.resize_load);
  j.set("auto_structure", c.auto_structure);
  j.set("max_range_results", static_cast<std::uint64_t>(c.max_range_results));
  j.set("max_sessions", static_cast<std::uint64_t>(c.max_sessions));
  return j;
}

duet::Status make_system(const std::string& name, const SystemSpec& spec, std::unique_ptr<System>* out) {
  if (name == "lit") {
    std::unique_ptr<duet::lit::Map> map;
    duet::Status s = duet::lit::Map::create(lit_config(spec), &map);
    if (!s.ok()) return s;
    *out = std::make_unique<LitSystem>(std::move(map));
    return duet::Status::Ok();
  }
#ifdef DUET_BENCH_HAVE_LIBCDS
  if (name == "libcds") {
    *out = make_libcds_system(spec);
    return duet::Status::Ok();
  }
#endif
#ifdef DUET_BENCH_HAVE_TBB
  if (name == "tbb") {
    *out = make_tbb_system(spec);
    return duet::Status::Ok();
  }
#endif
  return duet::Status::Unavailable("system " + name + " is not built into this binary");
}

}  // namespace duet::bench::lit
