#include "cpu_driver.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "../common/process_stats.hpp"
#include "systems.hpp"

namespace duet::bench::lslab {
namespace {

using duet::lslab::Batch;
using duet::lslab::BatchResult;
using duet::lslab::Op;
using duet::lslab::OpStatus;
using Clock = std::chrono::steady_clock;

/// Buffers shared by every run of one system: requests, outcomes, and the re-insert batch.
struct Buffers {
  Requests req;
  std::vector<OpStatus> status;
  std::vector<std::uint64_t> out;
  std::vector<Op> put_ops;             ///< all kPut, for DELETE's untimed re-insert
  std::vector<OpStatus> reinsert_status;
  std::vector<std::uint64_t> reinsert_out;

  Buffers(std::size_t max_requests, std::size_t max_batch) {
    req.reserve(max_requests);
    status.resize(max_requests);
    out.resize(max_requests);
    put_ops.assign(max_batch, Op::kPut);
    reinsert_status.resize(max_batch);
    reinsert_out.resize(max_batch);
  }
};

/// Requests per prefill batch.
constexpr std::size_t kPrefillChunk = std::size_t(1) << 20;

/// Inserts the resident keys of `ks` in chunks of kPrefillChunk. Returns an error message,
/// or "" on success (every key is new, so every PUT must report kNotFound).
std::string prefill(CpuSystem* sys, const Keyspace& ks, Buffers* buf) {
  const std::uint64_t chunk = std::min<std::uint64_t>(ks.size(), kPrefillChunk);
  for (std::uint64_t begin = 0; begin < ks.size(); begin += chunk) {
    const std::uint64_t end = std::min(ks.size(), begin + chunk);
    generate_prefill(ks, begin, end, &buf->req);
    const std::size_t n = static_cast<std::size_t>(end - begin);
    Batch b{buf->req.ops.data(), buf->req.keys.data(), buf->req.values.data(), n};
    BatchResult r{buf->status.data(), buf->out.data()};
    duet::Status s = sys->execute(b, r);
    if (!s.ok()) return "prefill: " + s.to_string();
    if (std::count(buf->status.begin(), buf->status.begin() + n, OpStatus::kNotFound) != std::ptrdiff_t(n))
      return "prefill: some new keys were reported present";
  }
  return "";
}

/// Times o.reps repetitions of one configuration into rec (ops_per_s, wrong_status, error).
void measure(CpuSystem* sys, const Keyspace& ks, BenchOp op, std::size_t batch, const Options& o, Buffers* buf,
             Record* rec) {
  const std::size_t n = requests_per_rep(batch, o.min_ops_per_rep);
  rec->ops_per_rep = n;
  std::vector<double> samples;
  for (unsigned rep = 0; rep < o.reps && rec->error.empty(); ++rep) {
    generate_requests(ks, op, n, batch, rep_seed(o.seed, ks.size(), op, batch, rep), &buf->req);
    Clock::duration timed{};
    for (std::size_t off = 0; off < n; off += batch) {
      Batch b{buf->req.ops.data() + off, buf->req.keys.data() + off, buf->req.values.data() + off, batch};
      BatchResult r{buf->status.data() + off, buf->out.data() + off};
      const auto t0 = Clock::now();
      duet::Status s = sys->execute(b, r);
      timed += Clock::now() - t0;
      if (!s.ok()) {
        rec->error = s.to_string();
        break;
      }
      if (op == BenchOp::kDelete) {  // put the keys back, untimed, so the map stays at R
        Batch rb{buf->put_ops.data(), b.keys, b.values, batch};
        BatchResult rr{buf->reinsert_status.data(), buf->reinsert_out.data()};
        s = sys->execute(rb, rr);
        if (!s.ok()) {
          rec->error = "re-insert: " + s.to_string();
          break;
        }
        rec->wrong_status += static_cast<std::uint64_t>(batch) -
                             std::count(rr.status, rr.status + batch, OpStatus::kNotFound);
      }
    }
    if (!rec->error.empty()) break;
    // Every request targets a resident key: GET, PUT and DELETE must all find it.
    rec->wrong_status += static_cast<std::uint64_t>(n) -
                         std::count(buf->status.begin(), buf->status.begin() + n, OpStatus::kFound);
    samples.push_back(static_cast<double>(n) / std::chrono::duration<double>(timed).count());
  }
  rec->ops_per_s = summarize(samples);
}

}  // namespace

void run_cpu_benchmark(const Options& o, std::vector<Record>* records) {
  // o.systems holds available CPU systems only (main resolves them).
  std::size_t max_batch = 0, max_requests = 0;
  for (std::uint64_t b : o.batches) {
    max_batch = std::max<std::size_t>(max_batch, b);
    max_requests = std::max(max_requests, requests_per_rep(b, o.min_ops_per_rep));
  }
  // Count the configurations for the progress lines.
  auto runs = [&](std::uint64_t r, BenchOp op, std::uint64_t b) { return !(op == BenchOp::kDelete && b > r); };
  std::size_t total = 0;
  for (const std::string& name : o.systems) {
    const bool loads = find_cpu_system(name)->uses_load_factor;
    for (std::uint64_t r : o.resident)
      for (BenchOp op : o.ops)
        for (std::uint64_t b : o.batches) total += runs(r, op, b) ? (loads ? o.loads.size() : 1) : 0;
  }

  duet::sched::ThreadPool pool(o.threads);  // the peers' workers, kept for the whole run
  Buffers buf(std::max<std::size_t>(max_requests, kPrefillChunk), max_batch);
  std::size_t done = 0;
  for (const std::string& name : o.systems) {
    const SystemInfo& info = *find_cpu_system(name);
    for (std::uint64_t r : o.resident) {
      const Keyspace ks(r, o.seed);
      std::vector<std::optional<double>> loads;
      if (info.uses_load_factor) loads.assign(o.loads.begin(), o.loads.end());
      else loads.push_back(std::nullopt);
      for (const std::optional<double>& load : loads) {
        Record proto;
        proto.system = name;
        proto.resident = r;
        proto.load_factor = load;
        proto.threads = o.threads;
        proto.reps = o.reps;

        SystemSpec spec;
        spec.resident = r;
        spec.load_factor = load.value_or(0.7);
        spec.threads = o.threads;
        std::unique_ptr<CpuSystem> sys;
        const auto t0 = Clock::now();
        duet::Status s = make_cpu_system(name, spec, &pool, o.peer_grain, &sys);
        std::string setup_error = s.ok() ? prefill(sys.get(), ks, &buf) : "create: " + s.to_string();
        std::fprintf(stderr, "%s %s: built and prefilled in %.1f s%s%s\n", name.c_str(), proto.workload().c_str(),
                     std::chrono::duration<double>(Clock::now() - t0).count(),
                     setup_error.empty() ? "" : ", FAILED: ", setup_error.c_str());

        for (BenchOp op : o.ops) {
          for (std::uint64_t b : o.batches) {
            if (!runs(r, op, b)) {
              std::fprintf(stderr, "  skip %s %s batch %llu: a DELETE batch needs that many distinct resident keys\n",
                           name.c_str(), bench_op_name(op), static_cast<unsigned long long>(b));
              continue;
            }
            Record rec = proto;
            rec.op = bench_op_name(op);
            rec.batch = b;
            if (!setup_error.empty()) rec.error = setup_error;
            else measure(sys.get(), ks, op, static_cast<std::size_t>(b), o, &buf, &rec);
            std::fprintf(stderr, "%s\n", progress_line(rec, ++done, total).c_str());
            records->push_back(std::move(rec));
          }
        }
        sys.reset();  // free this map before the next is built
        std::fprintf(stderr, "  peak RSS so far %.2f GiB\n", peak_rss_gib());
      }
    }
  }
}

}  // namespace duet::bench::lslab
