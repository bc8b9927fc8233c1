#include "systems.hpp"

#include <algorithm>

namespace duet::bench::cods {

const char* structure_name(Structure s) {
  return s == Structure::kList ? "list" : s == Structure::kHash ? "hash" : "tree";
}

std::string cods_name(Structure s, bool fully_atomic, unsigned k) {
  return std::string("cods-") + structure_name(s) + (fully_atomic ? "-fa-k" : "-ew-k") + std::to_string(k);
}

std::vector<SystemInfo> all_systems() {
  std::vector<SystemInfo> out;
  add_cods_list_systems(&out);
  add_cods_hash_systems(&out);
  add_cods_tree_systems(&out);
  add_lit_system(&out);
#if DUET_BENCH_HAVE_LIBCDS
  add_libcds_systems(&out);
#endif
#if DUET_BENCH_HAVE_TBB
  add_tbb_systems(&out);
#endif
  return out;
}

namespace {
#if DUET_BENCH_HAVE_LIBCDS
constexpr bool kHaveLibcds = true;
#else
constexpr bool kHaveLibcds = false;
#endif
#if DUET_BENCH_HAVE_TBB
constexpr bool kHaveTbb = true;
#else
constexpr bool kHaveTbb = false;
#endif

/// A peer library and the systems it gives; `built`: found at configure time.
struct PeerLibrary {
  const char* name;
  std::vector<std::string> systems;
  bool built;
};
const std::vector<PeerLibrary>& peer_libraries() {
  static const std::vector<PeerLibrary> libs = {
      {"libcds", {"cds-lazy-list", "cds-michael-list", "cds-michael-hash", "cds-split-list", "cds-skip-list"},
       kHaveLibcds},
      {"oneTBB", {"tbb-hash-map", "tbb-set"}, kHaveTbb},
  };
  return libs;
}
}  // namespace

std::vector<std::string> unavailable_peers() {
  std::vector<std::string> out;
  for (const PeerLibrary& l : peer_libraries()) {
    if (l.built) continue;
    std::string names;
    for (const std::string& n : l.systems) names += (names.empty() ? "" : ", ") + n;
    out.push_back(std::string(l.name) + " (" + names + "): not found at configure time");
  }
  return out;
}

bool is_unavailable_peer(const std::string& system) {
  for (const PeerLibrary& l : peer_libraries())
    if (!l.built && std::find(l.systems.begin(), l.systems.end(), system) != l.systems.end()) return true;
  return false;
}

}  // namespace duet::bench::cods
