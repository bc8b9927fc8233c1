#include "results.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <thread>

namespace duet::bench {
namespace {

/// The value of the first "<key> : value" line in a /proc file, or "" if absent.
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

/// Runs a shell command and returns its first output line without the newline ("" on failure).
std::string first_line_of(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return "";
  std::array<char, 256> buf{};
  std::string out;
  if (std::fgets(buf.data(), static_cast<int>(buf.size()), p)) out = buf.data();
  const int rc = pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return rc == 0 ? out : "";
}

}  // namespace

Json machine_info() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const std::uint64_t memory = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
  std::string model = proc_field("/proc/cpuinfo", "model name");
  if (model.empty()) model = "unknown";
  // The selected transparent-huge-page mode: "always", "madvise" or "never".
  std::string thp;
  {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    std::getline(in, line);
    const auto a = line.find('['), b = line.find(']');
    thp = a != std::string::npos && b > a ? line.substr(a + 1, b - a - 1) : "unknown";
  }
  Json m = Json::object();
  m.set("hostname", std::string(host));
  m.set("cores", std::thread::hardware_concurrency());
  m.set("memory_bytes", memory);
  m.set("cpu_model", model);
  m.set("transparent_hugepages", thp);
  return m;
}

std::string commit_id(const std::string& source_dir) {
  if (const char* env = std::getenv("DUET_COMMIT"); env && *env) return env;
  const std::string sha = first_line_of("git -C '" + source_dir + "' rev-parse HEAD 2>/dev/null");
  return sha.size() == 40 ? sha : "unknown";
}

std::string utc_now(bool compact) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, compact ? "%Y%m%dT%H%M%SZ" : "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Summary summarize(std::vector<double> xs) {
  Summary s;
  if (xs.empty()) return s;
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  s.median = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  s.min = xs.front();
  s.max = xs.back();
  return s;
}

Json summary_json(const Summary& s) {
  Json j = Json::object();
  j.set("median", s.median);
  j.set("min", s.min);
  j.set("max", s.max);
  return j;
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

Json result_document(const std::string& benchmark, const std::string& device, const std::string& commit,
                     const std::string& date, Json config, Json records) {
  Json doc = Json::object();
  doc.set("machine", machine_info());
  doc.set("device", device);
  doc.set("commit", commit);
  doc.set("date", date);
  doc.set("benchmark", benchmark);
  doc.set("config", std::move(config));
  doc.set("records", std::move(records));
#ifdef DUET_BENCH_COMPILE_CHECK
  // The test command's build (bench/CMakeLists.txt): the numbers are not comparable to any other.
  static std::atomic<bool> warned{false};  // once per process: some benchmarks save after every figure
  if (!warned.exchange(true))
    std::fprintf(stderr, "duet bench %s: built with DUET_BENCH_COMPILE_CHECK (benchmark code at -O0): "
                 "not for measurement; run scripts/build first\n", benchmark.c_str());
  doc.set("build", "DUET_BENCH_COMPILE_CHECK: benchmark code at -O0, not for measurement");
#endif
  return doc;
}

bool write_result_file(const std::string& path, const Json& doc, std::string* error) {
  std::error_code ec;
  const std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) {
    *error = "cannot create " + p.parent_path().string() + ": " + ec.message();
    return false;
  }
  std::ofstream out(path);
  if (!out) {
    *error = "cannot open " + path + " for writing";
    return false;
  }
  doc.dump(out, 2);
  out << '\n';
  out.close();
  if (!out) {
    *error = "error writing " + path;
    return false;
  }
  return true;
}

}  // namespace duet::bench
