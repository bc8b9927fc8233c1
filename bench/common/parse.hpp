// Command-line value parsing shared by the benchmarks' option readers.
#pragma once

#include <cstdint>
#include <functional>
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

/// Walks a benchmark's command line (argv[1..]): `--help` or `-h` sets *help and stops there,
/// `--quick` sets *quick, and every other `--flag` takes the next argument as its value and is
/// handed to on_flag(flag, value), which returns false (having set *error) to reject it.
/// Returns false with *error set for an argument that is not a flag, a flag without a value,
/// or a rejection.
bool scan_flags(int argc, char** argv, bool* help, bool* quick, std::string* error,
                const std::function<bool(const std::string& flag, const std::string& value)>& on_flag);

}  // namespace duet::bench
