#include "kv_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "../common/results.hpp"
#include "../common/systems.hpp"
#include "experiments.hpp"
#include "options.hpp"
#include "systems.hpp"

#ifndef DUET_SOURCE_DIR
#define DUET_SOURCE_DIR "."
#endif

namespace duet::bench {
namespace {

using namespace duet::bench::kv;

/// Fills the default system list and drops (naming them) peers this binary lacks. Returns
/// false with *error for unknown names or when nothing is left.
bool resolve_systems(Options* o, std::string* error) { return choose_systems(kv_systems(), &o->systems, error); }

}  // namespace

int run_kv_bench(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!parse_options(argc, argv, &o, &help, &error)) {
    std::fprintf(stderr, "duet bench kv: %s\n\n%s", error.c_str(), usage().c_str());
    return 2;
  }
  if (help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  if (!resolve_systems(&o, &error)) {
    std::fprintf(stderr, "duet bench kv: %s\n\n%s", error.c_str(), usage().c_str());
    return 2;
  }

  const std::string date = utc_now();
  const std::string stamp = utc_now(true);
  const std::vector<Point> points = plan_points(o);
  std::fprintf(stderr, "duet bench kv: %s, %s, %zu point(s), systems %s, %u client threads, batch %zu\n",
               experiment_name(o.experiment), points.front().workload.name.c_str(), points.size(),
               [&] {
                 std::string s;
                 for (const std::string& n : o.systems) s += (s.empty() ? "" : ",") + n;
                 return s;
               }()
                   .c_str(),
               o.threads, o.batch);
  RunOutput out;
  if (!run_experiment(o, &out, &error)) {
    std::fprintf(stderr, "duet bench kv: %s\n", error.c_str());
    return 1;
  }
  print_table(out);

  std::string name = experiment_name(o.experiment);
  if (o.experiment == Experiment::kNone) name = o.workload().name;
  const std::string path =
      o.out_file.empty() ? o.out_dir + "/kv-" + name + "-" + out.device_tag + "-" + stamp + ".json" : o.out_file;
  const Json doc =
      result_document("kv", out.device, commit_id(DUET_SOURCE_DIR), date, o.to_json(), std::move(out.records));
  if (!write_result_file(path, doc, &error)) {
    std::fprintf(stderr, "duet bench kv: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  if (!out.ok) {
    std::fprintf(stderr, "duet bench kv: some requests failed or returned wrong values (see above)\n");
    return 1;
  }
  return 0;
}

}  // namespace duet::bench
