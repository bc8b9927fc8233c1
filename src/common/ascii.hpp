// ASCII case folding for names (commands, settings, enum names given as text). Bytes outside
// A-Z pass through unchanged; no locale is consulted.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace duet {

/// s with A-Z lowered. Costs one copy of s.
inline std::string ascii_lower(std::string_view s) {
  std::string r(s);
  for (char& ch : r) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return r;
}

/// Whether a and b are equal ignoring ASCII case. No allocation.
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace duet
