// duet_bench_cods without CUDA: every GPU measurement is Unavailable.
#include "gpu.hpp"

namespace duet::bench::cods {

bool gpu_present(std::string* why) {
  *why = "built without CUDA";
  return false;
}
std::string gpu_name() { return "cpu"; }
Status gpu_run_cods(const GpuPoint&, const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&, unsigned,
                    GpuTimes*) {
  return Status::Unavailable("built without CUDA");
}
Status gpu_run_lslab(std::uint64_t, const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&, unsigned,
                     GpuTimes*) {
  return Status::Unavailable("built without CUDA");
}
Status gpu_run_lit(std::uint64_t, const std::vector<std::uint64_t>&, const std::vector<std::uint64_t>&, unsigned,
                   GpuTimes*) {
  return Status::Unavailable("built without CUDA");
}
Status gpu_random_loads(std::uint64_t, std::uint64_t, unsigned, std::vector<double>*) {
  return Status::Unavailable("built without CUDA");
}

}  // namespace duet::bench::cods
