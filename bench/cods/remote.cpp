// The simulated remote-memory figures of duet_bench_cods (remote.hpp).
//
// Every point of a structure replays the same pre-generated work (workload.hpp): the same
// prefill order and per-thread streams for every K and regime. Prefill runs without delay;
// then round trips are counted on one thread over the first count_ops operations of stream 0
// (no delay), and the throughput is measured with `threads` workers at the configured delay,
// each on a freshly prefilled structure.
#include "remote.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/results.hpp"
#include "index/cods/remote_front.hpp"
#include "workload.hpp"

namespace duet::bench::cods {
namespace {

using namespace duet::cods;
using namespace duet::cods::ds;
using Clk = std::chrono::steady_clock;

/// Builds an empty structure on `mem_nodes` memory nodes, and runs one stream operation.
template <class S>
struct Adapter;

template <unsigned K, Regime R>
struct Adapter<RemoteLazyList<K, R>> {
  static constexpr const char* kName = "list";
  static Status make(const RemoteConfig& c, std::uint64_t, std::unique_ptr<RemoteLazyList<K, R>>* out) {
    return RemoteLazyList<K, R>::make(c, out);
  }
  static bool op(RemoteLazyList<K, R>& s, RemoteEnv& e, Op op, std::uint64_t k) {
    const OpStatus st = s.execute(e, op, k);
    return op == Op::kInsert ? st == OpStatus::kNotFound : st == OpStatus::kFound;
  }
};
template <unsigned K, Regime R>
struct Adapter<RemoteHashSet<K, R>> {
  static constexpr const char* kName = "hash";
  static Status make(const RemoteConfig& c, std::uint64_t buckets, std::unique_ptr<RemoteHashSet<K, R>>* out) {
    return RemoteHashSet<K, R>::make(c, buckets, out);
  }
  static bool op(RemoteHashSet<K, R>& s, RemoteEnv& e, Op op, std::uint64_t k) {
    const OpStatus st = s.execute(e, op, k);
    return op == Op::kInsert ? st == OpStatus::kNotFound : st == OpStatus::kFound;
  }
};
template <unsigned K, Regime R>
struct Adapter<RemoteBLinkTree<K, R>> {
  static constexpr const char* kName = "tree";
  static Status make(const RemoteConfig& c, std::uint64_t, std::unique_ptr<RemoteBLinkTree<K, R>>* out) {
    return RemoteBLinkTree<K, R>::make(c, out);
  }
  static bool op(RemoteBLinkTree<K, R>& s, RemoteEnv& e, Op op, std::uint64_t k) {
    const TreeResult r = s.execute(e, op, k, k + 1);
    return op == Op::kInsert ? r.status == OpStatus::kNotFound : r.status == OpStatus::kFound;
  }
};

Op op_of(std::uint64_t e) {
  switch (kind_of(e)) {
    case Kind::kInsert: return Op::kInsert;
    case Kind::kRemove: return Op::kRemove;
    default: return Op::kGet;
  }
}

/// The work of one shape, generated once and shared by all its points.
struct Work {
  std::uint64_t range, keys, buckets;
  std::vector<std::uint64_t> prefill;
  std::vector<std::vector<std::uint64_t>> streams;  // one per thread of the largest count
};

template <class S>
std::unique_ptr<S> build(const Work& w, const RemoteRun& run, std::string* err) {
  using A = Adapter<S>;
  RemoteConfig c;
  c.memory_nodes = run.memory_nodes;
  c.region_bytes = 512ull << 20;
  c.delay_ns = 0;
  std::unique_ptr<S> s;
  const Status st = A::make(c, w.buckets, &s);
  if (!st.ok()) {
    *err = st.to_string();
    return nullptr;
  }
  auto env = s->session();
  for (std::uint64_t k : w.prefill)
    if (!A::op(*s, *env, Op::kInsert, k)) {
      *err = "prefill insert of a fresh key failed";
      return nullptr;
    }
  return s;
}

template <class S>
void point(const char* regime, unsigned k, const Work& w, const RemoteRun& run, Json* records, bool* ok) {
  using A = Adapter<S>;
  const std::string system = std::string("cods-remote-") + A::kName + "-" + regime + "-k" + std::to_string(k);
  Json rec = Json::object();
  rec.set("name", "remote");
  rec.set("system", system);
  rec.set("processor", "cpu");
  rec.set("backend", "simulated-remote-memory");
  rec.set("structure", A::kName);
  rec.set("k", k);
  rec.set("group", "cpu-thread");
  rec.set("regime", std::string(regime) == "fa" ? "fully-atomic" : "elementwise");
  rec.set("mode", "remote");
  rec.set("range", w.range);
  rec.set("keys", w.keys);
  rec.set("buckets", w.buckets);
  rec.set("contains_percent", run.mix);
  rec.set("memory_nodes", run.memory_nodes);
  rec.set("delay_ns", run.delay_ns);
  std::string err;
  // Round trips: one thread, no delay, the first count_ops operations of stream 0.
  {
    std::unique_ptr<S> s = build<S>(w, run, &err);
    if (!s) {
      rec.set("ok", false);
      rec.set("error", err);
      records->push(std::move(rec));
      *ok = false;
      std::printf("remote   %-26s ERROR %s\n", system.c_str(), err.c_str());
      return;
    }
    auto env = s->session();
    const RemoteCounters before = env->counters();
    const std::vector<std::uint64_t>& ops = w.streams[0];
    const std::uint64_t n = std::min<std::uint64_t>(run.count_ops, ops.size());
    std::uint64_t gets = 0;
    const auto t0 = Clk::now();
    for (std::uint64_t i = 0; i < n; ++i) {
      A::op(*s, *env, op_of(ops[i]), key_of(ops[i]));
      gets += kind_of(ops[i]) == Kind::kContains;
    }
    const double local_s = std::chrono::duration<double>(Clk::now() - t0).count();
    const RemoteCounters& a = env->counters();
    const double dn = static_cast<double>(n);
    Json trips = Json::object();
    trips.set("reads", static_cast<double>(a.reads - before.reads) / dn);
    trips.set("writes", static_cast<double>(a.writes - before.writes) / dn);
    trips.set("cases", static_cast<double>(a.cases - before.cases) / dn);
    trips.set("total", static_cast<double>(a.round_trips() - before.round_trips()) / dn);
    trips.set("node_reads", static_cast<double>(a.node_reads - before.node_reads) / dn);
    trips.set("ops", n);
    trips.set("gets", gets);
    rec.set("round_trips_per_op", std::move(trips));
    rec.set("no_delay_ops_per_s", dn / local_s);
    std::printf("remote   %-26s trips/op %6.2f (r %6.2f w %5.2f cas %5.2f) node gets/op %6.2f\n", system.c_str(),
                static_cast<double>(a.round_trips() - before.round_trips()) / dn,
                static_cast<double>(a.reads - before.reads) / dn, static_cast<double>(a.writes - before.writes) / dn,
                static_cast<double>(a.cases - before.cases) / dn,
                static_cast<double>(a.node_reads - before.node_reads) / dn);
  }
  // Throughput at the delay.
  Json by_threads = Json::array();
  for (unsigned t : run.threads) {
    std::vector<double> xs;
    Json runs = Json::array();
    for (unsigned r = 0; r < run.repeats && err.empty(); ++r) {
      std::unique_ptr<S> s = build<S>(w, run, &err);
      if (!s) break;
      s->memory().set_delay_ns(run.delay_ns);
      std::vector<std::unique_ptr<RemoteEnv>> envs;
      for (unsigned i = 0; i < t; ++i) envs.push_back(s->session());
      std::atomic<bool> go{false}, stop{false};
      std::atomic<unsigned> ready{0};
      std::vector<std::uint64_t> done(t);
      std::vector<Clk::time_point> end(t);
      std::vector<std::thread> ts;
      for (unsigned i = 0; i < t; ++i)
        ts.emplace_back([&, i] {
          const std::vector<std::uint64_t>& ops = w.streams[i];
          ready.fetch_add(1);
          while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
          std::size_t at = 0;
          std::uint64_t count = 0;
          while (!stop.load(std::memory_order_relaxed)) {
            for (int j = 0; j < 16; ++j) {
              A::op(*s, *envs[i], op_of(ops[at]), key_of(ops[at]));
              if (++at == ops.size()) at = 0;
            }
            count += 16;
          }
          end[i] = Clk::now();
          done[i] = count;
        });
      while (ready.load() < t) std::this_thread::yield();
      const auto t0 = Clk::now();
      go.store(true, std::memory_order_release);
      std::this_thread::sleep_for(std::chrono::duration<double>(run.seconds));
      stop.store(true);
      for (auto& th : ts) th.join();
      std::uint64_t total = 0;
      double secs = 0;
      for (unsigned i = 0; i < t; ++i) {
        total += done[i];
        secs = std::max(secs, std::chrono::duration<double>(end[i] - t0).count());
      }
      xs.push_back(static_cast<double>(total) / secs);
      Json one = Json::object();
      one.set("ops", total);
      one.set("seconds", secs);
      runs.push(std::move(one));
    }
    const Summary sum = summarize(xs);
    Json tj = Json::object();
    tj.set("threads", t);
    tj.set("ops_per_s", summary_json(sum));
    tj.set("runs", std::move(runs));
    by_threads.push(std::move(tj));
    std::printf("remote   %-26s %2u thr %10.3f Mops/s [%.3f-%.3f] at %llu ns per round trip\n", system.c_str(), t,
                sum.median / 1e6, sum.min / 1e6, sum.max / 1e6, static_cast<unsigned long long>(run.delay_ns));
  }
  rec.set("throughput", std::move(by_threads));
  rec.set("ok", err.empty());
  if (!err.empty()) {
    rec.set("error", err);
    *ok = false;
  }
  std::fflush(stdout);
  records->push(std::move(rec));
}

template <template <unsigned, Regime> class S, unsigned... Ks>
void sweep(const Work& w, const RemoteRun& run, Json* records, bool* ok) {
  (point<S<Ks, Regime::kFullyAtomic>>("fa", Ks, w, run, records, ok), ...);
  (point<S<Ks, Regime::kElementwise>>("ew", Ks, w, run, records, ok), ...);
}

Work make_work(std::uint64_t range, std::uint64_t keys, std::uint64_t buckets, const RemoteRun& run) {
  const unsigned top = *std::max_element(run.threads.begin(), run.threads.end());
  return {range, keys, buckets, prefill_keys(range, keys, run.seed),
          make_streams(range, run.mix, top, std::max(run.stream, run.count_ops), run.seed + 3)};
}

}  // namespace

void remote_figures(const RemoteRun& run, Json* records, bool* ok) {
  // The seed's RDMA shapes (dissertation 5.5.3): list range 2,000 with 1,000 keys; hash set
  // range 10^5 in 10^5 buckets (half prefilled, as every figure here); tree range 10^4 with 5,000.
  sweep<RemoteLazyList, 1, 2, 4, 6, 8, 12, 16>(make_work(2000, 1000, 1, run), run, records, ok);
  sweep<RemoteHashSet, 1, 2, 4, 8, 12>(make_work(100000, 50000, 100000, run), run, records, ok);
  sweep<RemoteBLinkTree, 1, 2, 4, 8, 12, 16>(make_work(10000, 5000, 1, run), run, records, ok);
}

}  // namespace duet::bench::cods
