#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "options.hpp"

namespace duet::bench::lslab {
namespace {

/// "r22" for 2^22, else "r<decimal>".
std::string resident_tag(std::uint64_t r) {
  const std::string p = pow2_string(r);
  std::string tag = "r";
  tag += p.rfind("2^", 0) == 0 ? p.substr(2) : p;
  return tag;
}

/// The shortest decimal form of a load factor ("0.5", "0.9").
std::string load_string(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}

}  // namespace

std::string Record::workload() const {
  std::string w = "uniform-" + resident_tag(resident);
  if (load_factor) w += "-load" + load_string(*load_factor);
  return w;
}

std::string Record::name() const {
  if (is_probe()) return "probe/" + op;
  std::string n = system + "/" + workload() + "/" + op + "/b" + std::to_string(batch);
  if (slab_width) n += "/w" + std::to_string(slab_width) + "/" + mode;
  return n;
}

Json Record::to_json() const {
  Json j = Json::object();
  j.set("name", name());
  j.set("system", system);
  if (is_probe()) {
    j.set("op", op);
    j.set("bytes_per_s", std::round(bytes_per_s));
    j.set("bytes_per_run", probe_bytes);
    j.set("reps", reps);
    if (!error.empty()) j.set("error", error);
    return j;
  }
  j.set("workload", workload());
  j.set("op", op);
  j.set("batch", batch);
  j.set("resident", resident);
  j.set("load_factor", load_factor ? Json(*load_factor) : Json());
  j.set("threads", threads);
  j.set("ops_per_s", std::round(ops_per_s.median));
  j.set("ops_per_s_min", std::round(ops_per_s.min));
  j.set("ops_per_s_max", std::round(ops_per_s.max));
  j.set("reps", reps);
  j.set("ops_per_rep", ops_per_rep);
  if (slab_width) {
    j.set("slab_width", slab_width);
    j.set("mode", mode);
    j.set("bytes_per_op_estimate", bytes_per_op_estimate);
    j.set("fraction_of_random_access_limit", fraction_of_random_access_limit);
  }
  j.set("verified", ok());
  if (wrong_status) j.set("wrong_status", wrong_status);
  if (!error.empty()) j.set("error", error);
  return j;
}

void print_table(const std::vector<Record>& records) {
  bool gpu = false;
  for (const Record& r : records) gpu |= r.slab_width != 0;
  for (const Record& r : records) {
    if (!r.is_probe()) continue;
    std::printf("probe %-16s %8.1f GB/s\n", r.op.c_str(), r.bytes_per_s / 1e9);
  }
  if (gpu) {
    std::printf("%-10s %-5s %4s %-6s %9s %5s %-10s %10s %9s %s\n", "system", "R", "load", "op", "batch", "width",
                "mode", "Mops/s", "frac_rand", "");
  } else {
    std::printf("%-10s %-5s %4s %-6s %9s %10s %21s %s\n", "system", "R", "load", "op", "batch", "Mops/s",
                "[min .. max]", "");
  }
  for (const Record& r : records) {
    if (r.is_probe()) continue;
    const std::string load = r.load_factor ? load_string(*r.load_factor) : "-";
    const char* flag = r.ok() ? "" : (r.error.empty() ? "WRONG-STATUS" : "ERROR");
    if (gpu) {
      std::printf("%-10s %-5s %4s %-6s %9llu %5u %-10s %10.2f %9.3f %s\n", r.system.c_str(),
                  pow2_string(r.resident).c_str(), load.c_str(), r.op.c_str(),
                  static_cast<unsigned long long>(r.batch), r.slab_width, r.mode.c_str(), r.ops_per_s.median / 1e6,
                  r.fraction_of_random_access_limit, flag);
    } else {
      std::printf("%-10s %-5s %4s %-6s %9llu %10.2f   [%7.2f .. %7.2f] %s\n", r.system.c_str(),
                  pow2_string(r.resident).c_str(), load.c_str(), r.op.c_str(),
                  static_cast<unsigned long long>(r.batch), r.ops_per_s.median / 1e6, r.ops_per_s.min / 1e6,
                  r.ops_per_s.max / 1e6, flag);
    }
  }
  std::fflush(stdout);
}

std::string progress_line(const Record& r, std::size_t k, std::size_t n) {
  char buf[512];
  if (r.is_probe()) {
    std::snprintf(buf, sizeof buf, "[probe] %s: %.1f GB/s", r.op.c_str(), r.bytes_per_s / 1e9);
  } else {
    std::snprintf(buf, sizeof buf, "[%zu/%zu] %s: %.2f Mops/s (min %.2f, max %.2f)", k, n, r.name().c_str(),
                  r.ops_per_s.median / 1e6, r.ops_per_s.min / 1e6, r.ops_per_s.max / 1e6);
  }
  std::string line = buf;
  if (r.wrong_status) line += " WARNING: " + std::to_string(r.wrong_status) + " requests saw a wrong status";
  if (!r.error.empty()) line += " ERROR: " + r.error;
  return line;
}

}  // namespace duet::bench::lslab
