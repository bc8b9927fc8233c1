// Builds without CUDA: the GPU is reported absent.
#include "batch/epic/gpu.hpp"

namespace duet::batch::epic {

bool gpu_available(std::string* why) {
  if (why) *why = "built without CUDA";
  return false;
}
std::string gpu_name() { return "cpu"; }
std::unique_ptr<GpuRunner> make_gpu_runner(ProcSet, std::string* err) {
  if (err) *err = "built without CUDA";
  return nullptr;
}

}  // namespace duet::batch::epic
