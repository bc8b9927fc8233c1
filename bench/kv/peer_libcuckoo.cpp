// Peer: libcuckoo's libcuckoo::cuckoohash_map<std::string, std::string> (bucketized cuckoo
// hashing with striped locks), byte-string keys and values as Duet's kv keyspace has them.
#include <libcuckoo/cuckoohash_map.hh>

#include "systems.hpp"

namespace duet::bench::kv {
namespace {

using duet::KvRequest;

class LibcuckooKvSystem final : public KvSystem {
 public:
  using Table = libcuckoo::cuckoohash_map<std::string, std::string>;

  /// A table with room reserved for spec.expected_keys entries.
  explicit LibcuckooKvSystem(const SystemSpec& spec) { table_.reserve(spec.expected_keys); }

  /// GET: find_fn copying the value; PUT: uprase_fn, which copies the previous value and
  /// assigns the new one under the bucket lock (or inserts); DELETE: erase_fn copying the value.
  duet::Status execute(std::span<KvRequest> batch, std::span<duet::KvTrace> trace) override {
    return run_peer_batch(batch, trace, [&](KvRequest& r) {
      std::string key(r.key);
      switch (r.op) {
        case KvRequest::Op::kGet:
          r.found = table_.find_fn(key, [&](const std::string& v) { r.result.assign(v); });
          break;
        case KvRequest::Op::kPut:
          r.found = !table_.uprase_fn(
              std::move(key),
              [&](std::string& v) {
                r.result.assign(v);
                v.assign(r.value);
                return false;
              },
              r.value);
          break;
        case KvRequest::Op::kDelete:
          r.found = table_.erase_fn(key, [&](std::string& v) {
            r.result.assign(v);
            return true;
          });
          break;
      }
    });
  }
  bool per_element_latency() const override { return true; }

 private:
  Table table_;
};

}  // namespace

std::unique_ptr<KvSystem> make_libcuckoo_kv_system(const SystemSpec& spec) {
  return std::make_unique<LibcuckooKvSystem>(spec);
}

}  // namespace duet::bench::kv
