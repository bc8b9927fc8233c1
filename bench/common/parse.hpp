// Command-line value parsing shared by the benchmarks' option readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace duet::bench {

/// Splits "a,b,c" at commas, dropping empty pieces.
std::vector<std::string> split_list(const std::string& s);

/// A finite floating-point number (strtod syntax, nothing after it); nullopt otherwise.
std::optional<double> parse_double(const std::string& s);

/// A count: decimal digits (with optional '_' separators), a^b (e.g. 2^20, 10^9) or a
/// floating form with an integral value (1e9). Below 2^63; nullopt otherwise.
std::optional<std::uint64_t> parse_count(std::string s);

}  // namespace duet::bench
