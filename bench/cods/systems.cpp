#include "systems.hpp"

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

std::vector<std::string> unavailable_peers() {
  std::vector<std::string> out;
#if !DUET_BENCH_HAVE_LIBCDS
  out.push_back("libcds (cds-lazy-list, cds-michael-list, cds-michael-hash, cds-split-list, cds-skip-list): not found at configure time");
#endif
#if !DUET_BENCH_HAVE_TBB
  out.push_back("oneTBB (tbb-hash-map, tbb-set): not found at configure time");
#endif
  return out;
}

}  // namespace duet::bench::cods
