#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace duet::bench::kv {
namespace {

constexpr double kTtyPeriodS = 0.1;   // redraw period on a terminal
constexpr double kLogPeriodS = 5.0;   // line period otherwise
constexpr int kBarWidth = 30;

}  // namespace

std::string human_count(double x) {
  char buf[32];
  if (x >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", x / 1e9);
  else if (x >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", x / 1e6);
  else if (x >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", x / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", x);
  return buf;
}

Progress::Progress(std::string label, std::uint64_t total_ops, double total_s)
    : label_(std::move(label)), total_ops_(total_ops), total_s_(total_s), tty_(isatty(STDERR_FILENO) == 1) {}

void Progress::update(std::uint64_t done, double elapsed_s) {
  const double period = tty_ ? kTtyPeriodS : kLogPeriodS;
  if (last_draw_s_ < 0 ? elapsed_s < period : elapsed_s - last_draw_s_ < period) return;
  last_draw_s_ = elapsed_s;
  draw(done, elapsed_s, false);
}

void Progress::finish(std::uint64_t done, double elapsed_s) {
  if (tty_ && printed_) draw(done, elapsed_s, true);
}

void Progress::draw(std::uint64_t done, double elapsed_s, bool final) {
  double frac = total_ops_ ? static_cast<double>(done) / static_cast<double>(total_ops_)
                           : (total_s_ > 0 ? elapsed_s / total_s_ : 1.0);
  frac = final ? 1.0 : std::clamp(frac, 0.0, 1.0);
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  char line[256];
  if (tty_) {
    char bar[kBarWidth + 1];
    const int filled = static_cast<int>(frac * kBarWidth + 0.5);
    for (int i = 0; i < kBarWidth; ++i) bar[i] = i < filled ? '#' : '.';
    bar[kBarWidth] = '\0';
    std::snprintf(line, sizeof line, "\r  %-34.34s [%s] %3.0f%%  %8s req  %8s req/s  %5.1f s\033[K",
                  label_.c_str(), bar, frac * 100, human_count(static_cast<double>(done)).c_str(),
                  human_count(rate).c_str(), elapsed_s);
    std::fputs(line, stderr);
    if (final) std::fputc('\n', stderr);
  } else {
    std::snprintf(line, sizeof line, "  %s: %3.0f%%  %s req  %s req/s  %.1f s\n", label_.c_str(), frac * 100,
                  human_count(static_cast<double>(done)).c_str(), human_count(rate).c_str(), elapsed_s);
    std::fputs(line, stderr);
  }
  std::fflush(stderr);
  printed_ = true;
}

}  // namespace duet::bench::kv
