// Large host allocations for indexes: page-aligned, zero-filled, backed by transparent huge
// pages where the kernel allows (fewer TLB misses on random access).
#pragma once

#include <cstddef>

namespace duet::mem {

/// Maps `bytes` of zeroed, page-aligned memory. Returns null when the system refuses.
/// Cost: one mmap; pages are committed on first touch.
void* map_zeroed(std::size_t bytes);

/// Releases memory from map_zeroed. `bytes` must be the size passed there; null is ignored.
void unmap(void* p, std::size_t bytes);

/// Half of this machine's physical memory in bytes (4 GiB when the system does not say): the
/// default memory budget, and the most an index may allocate whole at startup.
std::size_t half_of_physical_memory();

}  // namespace duet::mem
