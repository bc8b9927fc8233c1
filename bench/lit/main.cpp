// duet_bench_lit: LIT, Duet's ordered map with linearizable range queries, against libcds's
// lock-free skip list map and oneTBB's concurrent_map on the CPU (dissertation section 6.5).
// See --help and bench/README.md.
//
// Exit status: 0 when every point ran and verified, 1 on bad options or setup, 2 when some
// record failed or saw a wrong value (the result file is written either way).
#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

#include "../common/results.hpp"
#include "../common/systems.hpp"
#include "driver.hpp"
#include "options.hpp"
#include "systems.hpp"

#ifndef DUET_SOURCE_DIR
#define DUET_SOURCE_DIR "."
#endif

namespace {

using namespace duet::bench;
using namespace duet::bench::lit;

/// Fills o->systems with the available ones (all when none was named), naming skipped peers.
/// False with *error for an unknown name or when nothing is left.
bool resolve_systems(Options* o, std::string* error) { return choose_systems(all_systems(), &o->systems, error); }

/// One table per workload: a row per key range (and theta), a column per system with its
/// median Mops/s, then lit/peer ratios. Failed points show "ERR", unverified ones a '!'.
void print_tables(const Options& o, const std::vector<Record>& records) {
  const bool has_lit = std::find(o.systems.begin(), o.systems.end(), "lit") != o.systems.end();
  for (WorkloadKind w : o.workloads) {
    // Rows in first-seen order: (key range, theta).
    std::vector<std::pair<std::uint64_t, std::optional<double>>> rows;
    std::map<std::pair<std::string, std::pair<std::uint64_t, double>>, const Record*> cell;
    for (const Record& r : records) {
      if (r.workload != w) continue;
      const auto row = std::make_pair(r.key_range, r.theta);
      if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
      cell[{r.system, {r.key_range, r.theta.value_or(-1)}}] = &r;
    }
    if (rows.empty()) continue;
    std::printf("\n== %s: %s; median Mops/s of %u run(s) of %.2g s, %u threads ==\n", workload_name(w),
                workload_description(w), o.runs, o.seconds, o.threads);
    std::printf("%-6s %-6s", "keys", "theta");
    for (const std::string& s : o.systems) std::printf(" %10s", s.c_str());
    if (has_lit)
      for (const std::string& s : o.systems)
        if (s != "lit") std::printf(" %12s", ("lit/" + s).c_str());
    std::printf("\n");
    for (const auto& [k, theta] : rows) {
      std::printf("%-6s %-6s", key_label(k).c_str(), theta ? std::to_string(*theta).substr(0, 4).c_str() : "-");
      auto find = [&](const std::string& s) -> const Record* {
        auto it = cell.find({s, {k, theta.value_or(-1)}});
        return it == cell.end() ? nullptr : it->second;
      };
      for (const std::string& s : o.systems) {
        const Record* r = find(s);
        if (!r || !r->error.empty()) std::printf(" %10s", "ERR");
        else std::printf(" %9.3f%s", r->summary.median, r->ok() ? " " : "!");
      }
      if (has_lit) {
        const Record* l = find("lit");
        for (const std::string& s : o.systems) {
          if (s == "lit") continue;
          const Record* p = find(s);
          if (l && p && l->error.empty() && p->error.empty() && p->summary.median > 0)
            std::printf(" %12.2f", l->summary.median / p->summary.median);
          else std::printf(" %12s", "-");
        }
      }
      std::printf("\n");
    }
  }
  std::printf("(! = the point saw wrong values or refused calls; see the result file)\n");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!parse_options(argc, argv, &o, &help, &error)) {
    std::fprintf(stderr, "duet_bench_lit: %s\n", error.c_str());
    return 1;
  }
  if (help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  if (o.threads == 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  if (!resolve_systems(&o, &error)) {
    std::fprintf(stderr, "duet_bench_lit: %s\n", error.c_str());
    return 1;
  }

  const std::string date = utc_now();
  const std::string stamp = utc_now(true);
  std::vector<Record> records;
  run_sweep(o, &records);
  print_tables(o, records);

  Json config = o.to_json();
  config.set("systems", Json::array_of(o.systems));
  Json details = Json::object();
  for (const std::string& name : o.systems) {
    const SystemInfo& info = *find_system(name);
    Json d = Json::object();
    d.set("structure", info.description);
    d.set("range_linearizable", info.linearizable_range);
    d.set("range_semantics", info.range_semantics);
    if (name == "lit") {
      SystemSpec spec;
      spec.threads = o.threads;
      spec.lit_buckets = o.lit_buckets;
      d.set("config", lit_config_json(spec));
    }
    details.set(name, d);
  }
  config.set("system_details", details);

  Json list = Json::array();
  bool all_ok = true;
  for (const Record& r : records) {
    list.push(r.to_json());
    all_ok &= r.ok();
  }
  const std::string path = o.out.empty() ? "bench/results/lit-cpu/lit-cpu-" + stamp + ".json" : o.out;
  const Json doc = result_document("lit", "cpu", commit_id(DUET_SOURCE_DIR), date, config, std::move(list));
  if (!write_result_file(path, doc, &error)) {
    std::fprintf(stderr, "duet_bench_lit: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "wrote %s\n", path.c_str());
  if (!all_ok) std::fprintf(stderr, "WARNING: some records failed or saw wrong values (marked in the tables)\n");
  return all_ok ? 0 : 2;
}
