#include "index/hydralist/numa.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace duet::hydralist {
namespace {

/// Parses a CPU list such as "0-3,8,10-11".
std::vector<int> parse_cpulist(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty() || part == "\n") continue;
    const auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        out.push_back(std::stoi(part));
      } else {
        const int a = std::stoi(part.substr(0, dash)), b = std::stoi(part.substr(dash + 1));
        for (int c = a; c <= b && c - a < 1 << 16; ++c) out.push_back(c);
      }
    } catch (...) {
      // A malformed entry is skipped.
    }
  }
  return out;
}

NumaTopology read_topology() {
  NumaTopology t;
  std::vector<std::pair<int, std::vector<int>>> nodes;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 ||
        !std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    std::ifstream f(e.path() / "cpulist");
    std::string line;
    std::getline(f, line);
    auto cpus = parse_cpulist(line);
    if (!cpus.empty()) nodes.emplace_back(std::stoi(name.substr(4)), std::move(cpus));
  }
  std::sort(nodes.begin(), nodes.end());
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool have_mask = sched_getaffinity(0, sizeof(allowed), &allowed) == 0;
  for (auto& [id, cpus] : nodes) {
    if (have_mask) {
      std::vector<int> mine;
      for (int c : cpus)
        if (c < CPU_SETSIZE && CPU_ISSET(c, &allowed)) mine.push_back(c);
      if (mine.empty()) continue;  // a node this process may not run on
      cpus = std::move(mine);
    }
    t.cpus.push_back(cpus);
  }
  if (t.cpus.empty()) {
    std::vector<int> all;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (have_mask && CPU_ISSET(c, &allowed)) all.push_back(c);
    if (all.empty()) all.push_back(0);
    t.cpus.push_back(all);
  }
  int max_cpu = 0;
  for (auto& v : t.cpus)
    for (int c : v) max_cpu = std::max(max_cpu, c);
  t.node_of_cpu.assign(static_cast<std::size_t>(max_cpu) + 1, -1);
  for (std::size_t n = 0; n < t.cpus.size(); ++n)
    for (int c : t.cpus[n]) t.node_of_cpu[static_cast<std::size_t>(c)] = static_cast<int>(n);
  return t;
}

}  // namespace

const NumaTopology& numa_topology() {
  static const NumaTopology t = read_topology();
  return t;
}

unsigned current_numa_node() {
  const NumaTopology& t = numa_topology();
  if (t.nodes() <= 1) return 0;
  unsigned cpu = 0, node = 0;
  if (getcpu(&cpu, &node) != 0) return 0;
  if (cpu < t.node_of_cpu.size() && t.node_of_cpu[cpu] >= 0) return static_cast<unsigned>(t.node_of_cpu[cpu]);
  return 0;
}

bool pin_to_numa_node(unsigned n) {
  const NumaTopology& t = numa_topology();
  if (n >= t.nodes()) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : t.cpus[n])
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace duet::hydralist
