// Peer: oneTBB's tbb::concurrent_hash_map<std::string, std::string> (per-element reader-writer
// locks), byte-string keys and values as Duet's kv keyspace has them.
#include <oneapi/tbb/concurrent_hash_map.h>

#include "systems.hpp"

namespace duet::bench::kv {
namespace {

using duet::KvRequest;

class TbbKvSystem final : public KvSystem {
 public:
  using Table = tbb::concurrent_hash_map<std::string, std::string>;

  /// A table with buckets preallocated for spec.expected_keys entries.
  explicit TbbKvSystem(const SystemSpec& spec) : table_(spec.expected_keys) {}

  /// GET: find with a const_accessor (shared lock), copy the value; PUT: insert with an
  /// accessor (exclusive lock), copy the previous value, assign; DELETE: find, copy, erase.
  duet::Status execute(std::span<KvRequest> batch, std::span<duet::KvTrace> trace) override {
    return run_peer_batch(batch, trace, [&](KvRequest& r) {
      std::string key(r.key);
      switch (r.op) {
        case KvRequest::Op::kGet: {
          Table::const_accessor a;
          if (table_.find(a, key)) r.found = true, r.result.assign(a->second);
          break;
        }
        case KvRequest::Op::kPut: {
          Table::accessor a;
          r.found = !table_.insert(a, key);
          if (r.found) r.result.assign(a->second);
          a->second.assign(r.value);
          break;
        }
        case KvRequest::Op::kDelete: {
          Table::accessor a;
          if (table_.find(a, key)) {
            r.found = true;
            r.result.assign(a->second);
            table_.erase(a);
          }
          break;
        }
      }
    });
  }
  bool per_element_latency() const override { return true; }

 private:
  Table table_;
};

}  // namespace

std::unique_ptr<KvSystem> make_tbb_kv_system(const SystemSpec& spec) { return std::make_unique<TbbKvSystem>(spec); }

}  // namespace duet::bench::kv
