// The process allocator's settings (src/mem/allocator_conf.cpp; docs/architecture.md, "Build").
#pragma once

namespace duet::mem {

/// jemalloc's options for Duet's programs, as `malloc_conf` gives them to jemalloc at start.
inline constexpr const char* kJemallocConf = "thp:always,metadata_thp:always";

}  // namespace duet::mem
