#include "workload.hpp"

namespace duet::bench::lslab {

using duet::lslab::kReservedKey;
using duet::lslab::Op;

const char* bench_op_name(BenchOp op) {
  switch (op) {
    case BenchOp::kGet: return "get";
    case BenchOp::kPut: return "put";
    case BenchOp::kDelete: return "delete";
    case BenchOp::kMix: return "mix";
  }
  return "unknown";
}

std::optional<BenchOp> parse_bench_op(const std::string& name) {
  for (BenchOp op : {BenchOp::kGet, BenchOp::kPut, BenchOp::kDelete, BenchOp::kMix})
    if (name == bench_op_name(op)) return op;
  return std::nullopt;
}

Keyspace::Keyspace(std::uint64_t resident, std::uint64_t seed) : resident_(resident), seed_(seed) {
  for (;;) {
    bool clash = false;
    for (std::uint64_t i = 0; i < resident_ && !clash; ++i) clash = key(i) == kReservedKey;
    if (!clash) return;
    ++seed_;
  }
}

void Requests::reserve(std::size_t n) {
  if (ops.size() >= n) return;
  ops.resize(n);
  keys.resize(n);
  values.resize(n);
}

void generate_requests(const Keyspace& ks, BenchOp op, std::size_t n, std::size_t batch, std::uint64_t seed,
                       Requests* out) {
  out->reserve(n);
  SplitMix64 rng(seed);
  Op* ops = out->ops.data();
  std::uint64_t* keys = out->keys.data();
  std::uint64_t* values = out->values.data();
  const std::uint64_t r = ks.size();
  switch (op) {
    case BenchOp::kGet:
      for (std::size_t i = 0; i < n; ++i) {
        ops[i] = Op::kGet;
        keys[i] = ks.key(rng.below(r));
        values[i] = 0;
      }
      break;
    case BenchOp::kPut:
      for (std::size_t i = 0; i < n; ++i) {
        ops[i] = Op::kPut;
        keys[i] = ks.key(rng.below(r));
        values[i] = rng.next();
      }
      break;
    case BenchOp::kMix:
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t bits = rng.next();
        ops[i] = (bits & 1) ? Op::kPut : Op::kGet;
        keys[i] = ks.key(rng.below(r));
        values[i] = bits >> 1;
      }
      break;
    case BenchOp::kDelete:
      for (std::size_t b = 0; b < n; b += batch) {
        std::uint64_t idx = rng.below(r);
        for (std::size_t i = b; i < b + batch && i < n; ++i) {
          ops[i] = Op::kDelete;
          keys[i] = ks.key(idx);
          values[i] = 0;
          if (++idx == r) idx = 0;
        }
      }
      break;
  }
}

void generate_prefill(const Keyspace& ks, std::uint64_t begin, std::uint64_t end, Requests* out) {
  const std::size_t n = static_cast<std::size_t>(end - begin);
  out->reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    out->ops[i] = Op::kPut;
    out->keys[i] = ks.key(begin + i);
    out->values[i] = ks.initial_value(begin + i);
  }
}

std::uint64_t rep_seed(std::uint64_t seed, std::uint64_t resident, BenchOp op, std::uint64_t batch, unsigned rep) {
  std::uint64_t h = splitmix_mix(seed ^ resident);
  h = splitmix_mix(h ^ (static_cast<std::uint64_t>(op) + 1));
  h = splitmix_mix(h ^ batch);
  return splitmix_mix(h ^ (std::uint64_t(rep) << 32));
}

std::size_t requests_per_rep(std::size_t batch, std::size_t min_ops) {
  const std::size_t want = batch > min_ops ? batch : min_ops;
  return (want + batch - 1) / batch * batch;
}

}  // namespace duet::bench::lslab
