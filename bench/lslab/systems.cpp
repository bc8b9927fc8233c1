#include "systems.hpp"

#include "index/lslab/map.hpp"

namespace duet::bench::lslab {
namespace {

/// Duet's CPU twin, width 8 (the keys of a slab in one cache line), with its own thread pool.
class DuetCpuSystem final : public CpuSystem {
 public:
  explicit DuetCpuSystem(std::unique_ptr<duet::lslab::Map> map) : map_(std::move(map)) {}
  duet::Status execute(const duet::lslab::Batch& b, duet::lslab::BatchResult& r) override {
    return map_->execute(b, r);
  }

 private:
  std::unique_ptr<duet::lslab::Map> map_;
};

#ifndef DUET_BENCH_HAVE_TBB
const char* const kNoTbb = "oneTBB (package TBB) was not found at configure time";
#endif
#ifndef DUET_BENCH_HAVE_LIBCUCKOO
const char* const kNoCuckoo = "libcuckoo (package libcuckoo) was not found at configure time";
#endif
#ifndef DUET_BENCH_HAVE_LIBCDS
const char* const kNoCds = "libcds (header cds/container/michael_map.h, library cds) was not found at configure time";
#endif

}  // namespace

const std::vector<SystemInfo>& cpu_systems() {
  static const std::vector<SystemInfo> systems = {
      {"duet-cpu", true, true, ""},
#ifdef DUET_BENCH_HAVE_TBB
      {"tbb", false, true, ""},
#else
      {"tbb", false, false, kNoTbb},
#endif
#ifdef DUET_BENCH_HAVE_LIBCUCKOO
      {"libcuckoo", false, true, ""},
#else
      {"libcuckoo", false, false, kNoCuckoo},
#endif
#ifdef DUET_BENCH_HAVE_LIBCDS
      {"libcds", false, true, ""},
#else
      {"libcds", false, false, kNoCds},
#endif
  };
  return systems;
}

const SystemInfo* find_cpu_system(const std::string& name) {
  for (const SystemInfo& s : cpu_systems())
    if (s.name == name) return &s;
  return nullptr;
}

duet::Status make_cpu_system(const std::string& name, const SystemSpec& spec, duet::sched::ThreadPool* pool,
                             std::size_t peer_grain, std::unique_ptr<CpuSystem>* out) {
  if (name == "duet-cpu") {
    duet::lslab::Config c;
    c.expected_keys = spec.resident;
    c.load_factor = spec.load_factor;
    c.threads = spec.threads;
    std::unique_ptr<duet::lslab::Map> map;
    duet::Status s = duet::lslab::make_cpu_map(c, &map, 8);
    if (!s.ok()) return s;
    *out = std::make_unique<DuetCpuSystem>(std::move(map));
    return duet::Status::Ok();
  }
#ifdef DUET_BENCH_HAVE_TBB
  if (name == "tbb") {
    *out = make_tbb_system(spec, pool, peer_grain);
    return duet::Status::Ok();
  }
#endif
#ifdef DUET_BENCH_HAVE_LIBCUCKOO
  if (name == "libcuckoo") {
    *out = make_libcuckoo_system(spec, pool, peer_grain);
    return duet::Status::Ok();
  }
#endif
#ifdef DUET_BENCH_HAVE_LIBCDS
  if (name == "libcds") {
    *out = make_libcds_system(spec, pool, peer_grain);
    return duet::Status::Ok();
  }
#endif
  (void)pool;
  (void)peer_grain;
  return duet::Status::Unavailable("system " + name + " is not built into this binary");
}

}  // namespace duet::bench::lslab
