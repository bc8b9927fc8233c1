// A build without CUDA: procedures have no GPU stream (duet_gpu_stream answers
// DUET_ERR_UNAVAILABLE) and keep to their CPU path.
#include "procedure/internal.hpp"

namespace duet::procedure {

Status gpu_stream_lease(void** stream) {
  *stream = nullptr;
  return Status::Unavailable("procedures: built without the CUDA toolkit");
}

void gpu_stream_return(void*) {}

}  // namespace duet::procedure
