// `duet`: the command-line entry point. Until the server exists, `duet demo` (the default)
// opens an L-Slab map on the best available processor, runs a few batches and prints what it
// did, and `duet info` prints what the build and the machine offer.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "gpu/device.hpp"
#include "index/lslab/map.hpp"

namespace {

using duet::lslab::Op;
using duet::lslab::OpStatus;

int usage(FILE* f) {
  std::fprintf(f,
               "usage: duet [demo [--device auto|cpu|gpu] [--keys N]] | info | help\n"
               "  demo   open an L-Slab map, run PUT/GET/DELETE batches, print what happened (default)\n"
               "  info   print the build's and the machine's capabilities\n");
  return f == stderr ? 2 : 0;
}

int info() {
  const auto& d = duet::gpu::device();
  std::printf("duet 0.1.0\nbuild with CUDA: %s\nprocessor: %s\nhardware threads: %u\n", d.cuda_build ? "yes" : "no",
              duet::gpu::describe().c_str(), std::thread::hardware_concurrency());
  return 0;
}

int demo(const std::string& device, std::uint64_t keys) {
  duet::lslab::Config cfg;
  cfg.expected_keys = keys;
  std::unique_ptr<duet::lslab::Map> map;
  duet::Status s;
  if (device != "cpu") {
    s = duet::lslab::make_gpu_map(cfg, &map);
    if (!s.ok() && device == "gpu") {
      std::fprintf(stderr, "duet: cannot open a GPU map: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  if (!map) {
    s = duet::lslab::make_cpu_map(cfg, &map);
    if (!s.ok()) {
      std::fprintf(stderr, "duet: cannot open a CPU map: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  const bool on_gpu = std::string(map->backend()) == "gpu";
  const std::string why = on_gpu ? duet::gpu::device().name
                          : duet::gpu::device().present ? std::string("chosen with --device cpu")
                                                        : duet::gpu::device().reason;
  std::printf("duet demo: L-Slab map on the %s (%s), slab width %u, sized for %llu keys\n", map->backend(),
              why.c_str(), map->slab_width(), static_cast<unsigned long long>(keys));

  std::mt19937_64 rng(42);
  std::vector<std::uint64_t> k(keys), v(keys), out(keys);
  std::vector<Op> ops(keys);
  std::vector<OpStatus> st(keys);
  for (std::uint64_t i = 0; i < keys; ++i) k[i] = rng() >> 1, v[i] = i;
  auto run = [&](Op op, const char* what) {
    std::fill(ops.begin(), ops.end(), op);
    duet::lslab::Batch b{ops.data(), k.data(), v.data(), keys};
    duet::lslab::BatchResult r{st.data(), out.data()};
    const auto t0 = std::chrono::steady_clock::now();
    duet::Status e = map->execute(b, r);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::uint64_t found = 0, wrong = 0;
    for (std::uint64_t i = 0; i < keys; ++i) {
      found += st[i] == OpStatus::kFound;
      if (op == Op::kGet && st[i] == OpStatus::kFound && out[i] != v[i]) ++wrong;
    }
    std::printf("  %-28s %10llu requests  %10llu found  %8.2f M ops/s  %s\n", what,
                static_cast<unsigned long long>(keys), static_cast<unsigned long long>(found), keys / sec / 1e6,
                e.ok() ? (wrong ? "WRONG VALUES" : "ok") : e.to_string().c_str());
    return e.ok() && wrong == 0;
  };
  bool ok = run(Op::kPut, "PUT (insert new keys)");
  ok &= run(Op::kGet, "GET (every key present)");
  ok &= run(Op::kDelete, "DELETE (every key)");
  ok &= run(Op::kGet, "GET (every key gone)");
  const auto ps = map->stats();
  std::printf("  pool: %llu buckets, %llu overflow slabs committed, %llu handed out, %llu free for reuse\n",
              static_cast<unsigned long long>(ps.buckets), static_cast<unsigned long long>(ps.pool_capacity),
              static_cast<unsigned long long>(ps.pool_handed_out), static_cast<unsigned long long>(ps.pool_free));
  std::printf("duet demo: %s\n", ok ? "done" : "FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "demo";
  if (cmd == "help" || cmd == "--help" || cmd == "-h") return usage(stdout);
  if (cmd == "info") return info();
  if (cmd != "demo") return usage(stderr);
  std::string device = "auto";
  std::uint64_t keys = 1u << 20;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device = argv[++i];
      if (device != "auto" && device != "cpu" && device != "gpu") return usage(stderr);
    } else if (a == "--keys" && i + 1 < argc) {
      char* end = nullptr;
      keys = std::strtoull(argv[++i], &end, 10);
      if (!end || *end || keys == 0 || keys > (1ull << 30)) {
        std::fprintf(stderr, "duet: --keys takes an integer from 1 to 2^30\n");
        return 2;
      }
    } else {
      return usage(stderr);
    }
  }
  return demo(device, keys);
}
