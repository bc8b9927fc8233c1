// See process_stats.hpp.
#include "process_stats.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace duet::bench {

double peak_rss_gib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / (1024.0 * 1024.0);
}

double self_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

std::optional<double> process_cpu_seconds(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!f || !std::getline(f, line)) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields restart after the last ')'.
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // After ')': state (3), then fields 4..13; utime is field 14, stime field 15.
  for (int i = 3; i <= 13; ++i)
    if (!(rest >> field)) return std::nullopt;
  if (!(rest >> utime >> stime)) return std::nullopt;
  const long ticks = sysconf(_SC_CLK_TCK);
  if (ticks <= 0) return std::nullopt;
  return static_cast<double>(utime + stime) / static_cast<double>(ticks);
}

}  // namespace duet::bench
