// Minimal leveled logging to stderr, shared by every component.
// Each line: "duet <level>: <message>". Thread-safe; a line is written with one call.
#pragma once

#include <string>

namespace duet {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

/// Lines below this level are dropped (default kInfo; DUET_LOG=debug|info|warn|error sets it).
void set_log_level(LogLevel level);
void log(LogLevel level, const std::string& message);

}  // namespace duet
