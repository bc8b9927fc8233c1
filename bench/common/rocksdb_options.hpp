// The RocksDB options the transactional peers share (bench/txn, bench/compute's CH): an
// in-memory-sized memtable that is never flushed during a run, no compactions, concurrent
// memtable writes. The WAL is turned off per write by each peer (WriteOptions::disableWAL).
#pragma once

#include <rocksdb/options.h>

namespace duet::bench {

/// Options for a memtable-only RocksDB: 8 GiB write buffer (nothing reaches disk in a run),
/// auto compactions off, concurrent memtable writes with adaptive yielding.
inline rocksdb::Options memtable_only_rocksdb_options() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.write_buffer_size = 8ull << 30;  // memtable only: never flushed during a run
  o.max_write_buffer_number = 2;
  o.disable_auto_compactions = true;
  o.allow_concurrent_memtable_write = true;
  o.enable_write_thread_adaptive_yield = true;
  return o;
}

}  // namespace duet::bench
