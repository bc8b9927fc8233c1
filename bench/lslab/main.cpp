// duet_bench_lslab: L-Slab throughput on the CPU (against oneTBB, libcuckoo and libcds) or on
// the GPU (against the GPU's own random-access bandwidth). See --help and bench/README.md.
//
// Exit status: 0 when every measurement ran and verified, 1 on bad options or setup, 2 when
// some record failed or saw a wrong status (the result file is written either way).
#include <algorithm>
#include <cstdio>
#include <thread>

#include "../common/results.hpp"
#include "../common/systems.hpp"
#include "cpu_driver.hpp"
#include "options.hpp"
#include "report.hpp"
#include "systems.hpp"
#if DUET_HAVE_CUDA
#include "gpu_driver.hpp"
#endif

#ifndef DUET_SOURCE_DIR
#define DUET_SOURCE_DIR "."
#endif

namespace {

using namespace duet::bench;
using namespace duet::bench::lslab;

/// Resolves o->systems against what this binary has for the device: fills the default,
/// drops (and reports) unavailable peers. Returns false with *error for unknown names.
bool resolve_systems(Options* o, std::string* error) {
  if (o->device == "gpu") {
    if (o->systems.empty()) o->systems = {"duet-gpu"};
    for (const std::string& s : o->systems) {
      if (s != "duet-gpu") {
        *error = "system " + s + " does not run with --device gpu";
        return false;
      }
    }
    return true;
  }
  return choose_systems(cpu_systems(), &o->systems, error);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!parse_options(argc, argv, &o, &help, &error)) {
    std::fprintf(stderr, "duet_bench_lslab: %s\n", error.c_str());
    return 1;
  }
  if (help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  if (!resolve_systems(&o, &error)) {
    std::fprintf(stderr, "duet_bench_lslab: %s\n", error.c_str());
    return 1;
  }

  const std::string date = utc_now();
  const std::string stamp = utc_now(true);
  std::vector<Record> records;
  std::string device = "cpu";
  if (o.device == "cpu") {
    run_cpu_benchmark(o, &records);
  } else {
#if DUET_HAVE_CUDA
    duet::Status s = run_gpu_benchmark(o, &records, &device);
    if (!s.ok()) {
      std::fprintf(stderr, "duet_bench_lslab: %s\n", s.to_string().c_str());
      return 1;
    }
#else
    std::fprintf(stderr, "duet_bench_lslab: this binary was built without CUDA; --device gpu is unavailable\n");
    return 1;
#endif
  }

  print_table(records);
  Json list = Json::array();
  bool all_ok = true;
  for (const Record& r : records) {
    list.push(r.to_json());
    all_ok &= r.ok();
  }
  const std::string path = o.out.empty() ? "bench/results/lslab-" + o.device + "-" + stamp + ".json" : o.out;
  const Json doc = result_document("lslab", device, commit_id(DUET_SOURCE_DIR), date, o.to_json(), std::move(list));
  if (!write_result_file(path, doc, &error)) {
    std::fprintf(stderr, "duet_bench_lslab: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  if (!all_ok) std::fprintf(stderr, "WARNING: some records failed or saw wrong statuses (marked in the table)\n");
  return all_ok ? 0 : 2;
}
