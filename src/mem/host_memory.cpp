#include "mem/host_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace duet::mem {

void* map_zeroed(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
  if (bytes >= (2u << 20)) ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void unmap(void* p, std::size_t bytes) {
  if (p) ::munmap(p, bytes);
}

std::size_t half_of_physical_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? std::size_t(pages) * std::size_t(page) / 2 : (std::size_t(1) << 32);
}

}  // namespace duet::mem
