// Progress of a long phase on stderr: a redrawn bar when stderr is a terminal, otherwise one
// line every few seconds (so logs of CI and batch runs stay short).
#pragma once

#include <cstdint>
#include <string>

namespace duet::bench::kv {

class Progress {
 public:
  /// A phase called `label` that ends after `total_ops` requests, or after `total_s` seconds
  /// when total_ops is 0.
  Progress(std::string label, std::uint64_t total_ops, double total_s);
  /// Reports `done` requests after `elapsed_s` seconds; draws at most ten times a second.
  void update(std::uint64_t done, double elapsed_s);
  /// Ends the phase: the terminal bar is completed and its line ended.
  void finish(std::uint64_t done, double elapsed_s);

 private:
  void draw(std::uint64_t done, double elapsed_s, bool final);

  std::string label_;
  std::uint64_t total_ops_;
  double total_s_;
  bool tty_;
  bool printed_ = false;
  double last_draw_s_ = -1;
};

/// "12.3k", "4.56M", "1.20G" for counts and rates.
std::string human_count(double x);

}  // namespace duet::bench::kv
