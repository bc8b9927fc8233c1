// Choosing which systems a benchmark runs, shared by the benchmarks.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace duet::bench {

/// Replaces *requested (names from --systems; empty: every system) by the systems to run, in
/// the order of `known`, skipping with a line on stderr those not built into this binary.
/// Info has `name`, `available` and `missing_reason`. False with *error naming the known systems
/// for an unknown name, or when nothing is left to run.
template <class Info>
bool choose_systems(const std::vector<Info>& known, std::vector<std::string>* requested, std::string* error) {
  for (const std::string& s : *requested) {
    if (std::none_of(known.begin(), known.end(), [&](const Info& i) { return i.name == s; })) {
      std::string names;
      for (const Info& i : known) names += (names.empty() ? "" : ", ") + i.name;
      *error = "--systems: unknown system '" + s + "' (" + names + ")";
      return false;
    }
  }
  const bool all = requested->empty();
  std::vector<std::string> chosen;
  for (const Info& info : known) {
    if (!all && std::find(requested->begin(), requested->end(), info.name) == requested->end()) continue;
    if (info.available) chosen.push_back(info.name);
    else std::fprintf(stderr, "skipping %s: %s\n", info.name.c_str(), info.missing_reason.c_str());
  }
  if (chosen.empty()) {
    *error = "none of the chosen systems is built into this binary";
    return false;
  }
  *requested = chosen;
  return true;
}

}  // namespace duet::bench
