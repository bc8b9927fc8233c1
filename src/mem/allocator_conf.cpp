// jemalloc's settings for every program linking duet_core with jemalloc (CMakeLists.txt keeps
// this object in each executable: jemalloc reads the `malloc_conf` the program defines).
//
// thp:always asks for transparent huge pages on jemalloc's arenas (madvise; the kernel's
// "madvise" mode honours it), and metadata_thp:always on its metadata. The txn keyspace's
// entries and versions are small objects scattered over hundreds of MB, so a random read
// missed the TLB as well as the cache: with huge pages, YCSB-T (4 ops, 95% reads, 10^6 keys,
// 16 threads) on the H200 machine ran 4.60-4.95 M txn/s against 4.08-4.49 M, alternated
// (bench/results/txn-h200-thp/). The cost: resident memory grows in 2 MiB steps per arena.
// A MALLOC_CONF environment variable still overrides these (jemalloc reads it after this).
#include "mem/allocator_conf.hpp"

extern "C" {
// NOLINTNEXTLINE: jemalloc's documented hook, named by jemalloc.
const char* malloc_conf = duet::mem::kJemallocConf;
}
