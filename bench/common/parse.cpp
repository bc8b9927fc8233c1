#include "parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace duet::bench {

/// Splits "a,b,c" at commas, dropping empty pieces.
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::optional<double> parse_double(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(v)) return std::nullopt;
  return v;
}

/// A count: decimal digits (with optional '_' separators), a^b (e.g. 2^20, 10^9) or a
/// floating form with an integral value (1e9). Below 2^63.
std::optional<std::uint64_t> parse_count(std::string s) {
  std::erase(s, '_');
  if (s.empty()) return std::nullopt;
  if (const auto caret = s.find('^'); caret != std::string::npos) {
    const auto base = parse_count(s.substr(0, caret)), exp = parse_count(s.substr(caret + 1));
    if (!base || !exp) return std::nullopt;
    const double v = std::pow(static_cast<double>(*base), static_cast<double>(*exp));
    if (!(v < 9.2e18)) return std::nullopt;
    std::uint64_t r = 1;
    for (std::uint64_t i = 0; i < *exp; ++i) r *= *base;
    return r;
  }
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    if (s.size() > 18) return std::nullopt;
    return std::strtoull(s.c_str(), nullptr, 10);
  }
  const auto d = parse_double(s);
  if (!d || *d < 0 || *d >= 9.2e18 || std::floor(*d) != *d) return std::nullopt;
  return static_cast<std::uint64_t>(*d);
}

bool scan_flags(int argc, char** argv, bool* help, bool* quick, std::string* error,
                const std::function<bool(const std::string& flag, const std::string& value)>& on_flag) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      *help = true;
      return true;
    }
    if (flag == "--quick") {
      *quick = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + flag + "'";
      return false;
    }
    if (i + 1 >= argc) {
      *error = flag + " needs a value (see --help)";
      return false;
    }
    if (!on_flag(flag, argv[++i])) return false;
  }
  return true;
}

}  // namespace duet::bench
