#include "driver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <thread>

#include "progress.hpp"

namespace duet::bench::kv {
namespace {

using duet::KvRequest;

/// Claims up to `want` requests from a shared budget; 0 when it is spent.
std::size_t claim(std::atomic<std::uint64_t>* budget, std::size_t want) {
  std::uint64_t left = budget->load(std::memory_order_relaxed);
  while (left > 0) {
    const std::uint64_t take = std::min<std::uint64_t>(left, want);
    if (budget->compare_exchange_weak(left, left - take, std::memory_order_relaxed)) return take;
  }
  return 0;
}

/// Per-thread state of a phase, padded so that threads do not share its hot fields.
struct alignas(64) ClientOut {
  PhaseResult r;
  std::uint64_t busy_ns = 0;
  std::uint64_t end_ns = 0;
  std::atomic<std::uint64_t> progress{0};
  std::atomic<bool> done{false};
};

unsigned path_index(const duet::KvTrace& t) {
  switch (t.path) {
    case duet::KvPath::kHot: return kHotPath;
    case duet::KvPath::kCold: return kColdPath;
    default: return kPeerPath;
  }
}

/// A pending read-modify-write: the PUT that follows its GET in the client's next batch.
struct PendingWrite {
  std::uint64_t key;
  std::uint64_t version;
};

struct Shared {
  const PhaseSpec* spec;
  KvSystem* system;
  KeyState* state;
  const ZipfianGenerator* zipf_hint;
  std::atomic<std::uint64_t> budget{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> go{false};
  std::atomic<unsigned> ready{0};          ///< clients that have generated their streams
  bool replay = false;                     ///< clients replay pre-generated streams
  std::uint64_t base_insert = 0;           ///< first key number inserts of this phase use
  std::atomic<std::uint64_t> max_own_inserts{0};  ///< most inserts one client's stream holds
  std::atomic<bool> shifted{false};
  std::uint64_t start_ns = 0;
  std::uint64_t window_ns = 0;
};

/// One batch of a client: its requests and their traces, the bytes they point into, and its
/// handle while in flight.
struct ClientBatch {
  std::vector<KvRequest> reqs;
  std::vector<duet::KvTrace> trace;
  std::vector<char> key_bytes, value_bytes;
  std::vector<std::uint64_t> key_num;
  std::vector<OpKind> kind;
  std::size_t n = 0, inserts = 0;
  std::uint64_t t0 = 0;
  std::unique_ptr<duet::KvInFlight> in_flight;
};

void client(Shared* sh, unsigned tid, ClientOut* out) {
  const PhaseSpec& spec = *sh->spec;
  KvSystem& sys = *sh->system;
  const bool per_element = sys.per_element_latency();
  Rng rng(derive_seed(spec.seed, tid));
  KeyChooser chooser(spec.distribution, spec.key_range, spec.theta, sh->state->acked.load(), sh->zipf_hint);
  chooser.set_shift(spec.initial_shift, spec.shift_span);
  chooser.use_trace(spec.trace);
  const std::size_t batch = spec.batch, vb = spec.value_bytes;
  const unsigned depth = std::max(1u, spec.pipeline);
  std::vector<ClientBatch> slots(depth);
  for (ClientBatch& b : slots) {
    b.reqs.resize(batch);
    b.trace.resize(batch);
    b.key_bytes.resize(batch * 8);
    b.value_bytes.resize(batch * vb);
    b.key_num.resize(batch);
    b.kind.resize(batch);
  }
  std::vector<PendingWrite> pending, next_pending;
  std::uint64_t version = (static_cast<std::uint64_t>(tid) << 16) + 1;
  PhaseResult& r = out->r;
  if (spec.timeline) r.windows.resize(static_cast<std::size_t>(std::ceil((spec.pre_shift_s + spec.seconds) * 1e9 /
                                                                         static_cast<double>(sh->window_ns))) + 2);
  const bool ops_bound = spec.ops > 0;
  bool shifted = false;

  // A replayed phase: this client's requests, generated now, before the start. Entry =
  // (kind << 62) | key number. Inserts take key numbers base + tid + threads * i, and reads of
  // the latest distribution see the inserts the client's position implies (its own count times
  // the thread count), so nothing depends on how fast the system runs.
  const unsigned threads = std::max(1u, spec.threads);
  std::vector<std::uint64_t> stream;
  std::uint64_t mine = 0;
  if (sh->replay) {
    mine = spec.ops / threads + (tid < spec.ops % threads ? 1 : 0);
    stream.resize(static_cast<std::size_t>(std::min<std::uint64_t>(mine, std::max<std::size_t>(1, spec.stream_cap))));
    const std::uint64_t base_acked = sh->state->acked.load();
    std::uint64_t own_inserts = 0;
    for (std::uint64_t& e : stream) {
      const OpKind k = spec.workload.pick(rng);
      std::uint64_t key;
      if (k == OpKind::kInsert) key = sh->base_insert + tid + threads * own_inserts++;
      else key = chooser.next(rng, base_acked + own_inserts * threads);
      e = (static_cast<std::uint64_t>(k) << 62) | key;
    }
    std::uint64_t seen = sh->max_own_inserts.load();
    while (own_inserts > seen && !sh->max_own_inserts.compare_exchange_weak(seen, own_inserts)) {
    }
  }
  std::size_t stream_pos = 0;
  std::uint64_t issued = 0;
  sh->ready.fetch_add(1, std::memory_order_acq_rel);

  // Waits for slot b's batch and records its outcomes.
  auto complete = [&](ClientBatch& b) {
    const std::uint64_t tw = now_ns();
    // The batch's status is its first failed request's; every request's own status is counted below.
    (void)sys.finish(std::move(b.in_flight));
    const std::uint64_t t1 = now_ns();
    out->busy_ns += t1 - tw;
    if (b.inserts) sh->state->acked.fetch_add(b.inserts, std::memory_order_relaxed);
    std::uint64_t prev = b.t0;
    for (std::size_t j = 0; j < b.n; ++j) {
      KvRequest& q = b.reqs[j];
      const std::uint64_t done = b.trace[j].done_ns ? b.trace[j].done_ns : t1;
      const std::uint64_t base = per_element ? prev : b.t0;
      const std::uint64_t lat = done > base ? done - base : 0;
      prev = std::max(prev, done);
      const unsigned path = path_index(b.trace[j]);
      const unsigned cls = q.op == KvRequest::Op::kGet ? kReadOps : kWriteOps;
      if (spec.record) r.hist[cls][path].add(lat);
      if (spec.timeline && done >= sh->start_ns) {
        const std::size_t w = (done - sh->start_ns) / sh->window_ns;
        if (w < r.windows.size()) {
          Window& win = r.windows[w];
          win.all.add(lat);
          if (path == kHotPath) win.hot.add(lat);
          else if (path == kColdPath) win.cold.add(lat);
        }
      }
      if (!q.status.ok()) {
        if (r.errors++ == 0) r.first_error = q.status.to_string();
        continue;
      }
      if (q.op == KvRequest::Op::kGet) {
        ++r.gets;
        if (q.found) {
          ++r.gets_found;
          if (!value_matches_key(q.result, b.key_num[j])) ++r.wrong_values;
        }
        if (b.kind[j] == OpKind::kRmw)
          pending.push_back({b.key_num[j], q.found ? value_version(q.result) + 1 : version++});
      } else if (q.found && !value_matches_key(q.result, b.key_num[j])) {
        ++r.wrong_values;
      }
    }
    r.requests += b.n;
    out->progress.store(r.requests, std::memory_order_relaxed);
  };

  while (!sh->go.load(std::memory_order_acquire)) std::this_thread::yield();
  for (std::size_t turn = 0;; ++turn) {
    ClientBatch& b = slots[turn % depth];
    if (b.in_flight) complete(b);
    if (sh->stop.load(std::memory_order_relaxed)) break;
    const std::size_t n = sh->replay ? static_cast<std::size_t>(std::min<std::uint64_t>(batch, mine - issued))
                          : ops_bound ? claim(&sh->budget, batch)
                                      : batch;
    if (n == 0) break;
    issued += n;
    if (spec.timeline && !shifted && sh->shifted.load(std::memory_order_relaxed)) {
      shifted = true;
      chooser.set_shift(spec.shift, spec.shift_span);
    }
    // Writes of read-modify-writes first, then fresh operations.
    std::size_t i = 0, inserts = 0;
    std::size_t taken = 0;
    for (; taken < pending.size() && i < n; ++taken, ++i) {
      b.key_num[i] = pending[taken].key;
      b.kind[i] = OpKind::kRmw;
      encode_value(b.key_num[i], pending[taken].version, &b.value_bytes[i * vb], vb);
      b.reqs[i].op = KvRequest::Op::kPut;
      b.reqs[i].value = std::string_view(&b.value_bytes[i * vb], vb);
    }
    next_pending.assign(pending.begin() + static_cast<std::ptrdiff_t>(taken), pending.end());
    pending.swap(next_pending);
    const std::uint64_t inserted = sh->state->acked.load(std::memory_order_relaxed);
    for (; i < n; ++i) {
      OpKind k;
      std::uint64_t replayed_key = 0;
      if (sh->replay) {
        const std::uint64_t e = stream[stream_pos];
        stream_pos = stream_pos + 1 == stream.size() ? 0 : stream_pos + 1;
        k = static_cast<OpKind>(e >> 62);
        replayed_key = e & ((std::uint64_t{1} << 62) - 1);
      } else {
        k = spec.workload.pick(rng);
      }
      b.kind[i] = k;
      switch (k) {
        case OpKind::kRead:
        case OpKind::kRmw:
          b.key_num[i] = sh->replay ? replayed_key : chooser.next(rng, inserted);
          b.reqs[i].op = KvRequest::Op::kGet;
          b.reqs[i].value = {};
          break;
        case OpKind::kUpdate:
        case OpKind::kInsert:
          if (sh->replay) {
            b.key_num[i] = replayed_key;  // inserts were numbered when the stream was made
          } else if (k == OpKind::kInsert) {
            b.key_num[i] = sh->state->next_insert.fetch_add(1, std::memory_order_relaxed);
            ++inserts;
          } else {
            b.key_num[i] = chooser.next(rng, inserted);
          }
          encode_value(b.key_num[i], version++, &b.value_bytes[i * vb], vb);
          b.reqs[i].op = KvRequest::Op::kPut;
          b.reqs[i].value = std::string_view(&b.value_bytes[i * vb], vb);
          break;
      }
    }
    for (std::size_t j = 0; j < n; ++j) {
      encode_key(b.key_num[j], &b.key_bytes[j * 8]);
      b.reqs[j].key = std::string_view(&b.key_bytes[j * 8], 8);
      b.trace[j] = duet::KvTrace{};
    }
    b.n = n;
    b.inserts = inserts;
    b.t0 = now_ns();
    b.in_flight = sys.submit(std::span<KvRequest>(b.reqs.data(), n), std::span<duet::KvTrace>(b.trace.data(), n));
    out->busy_ns += now_ns() - b.t0;
  }
  for (ClientBatch& b : slots)
    if (b.in_flight) complete(b);
  out->end_ns = now_ns();
  out->done.store(true, std::memory_order_release);
}

StatSample sample_stats(KvSystem& system, double t_s) {
  StatSample s;
  s.t_s = t_s;
  if (duet::KvSpace* space = system.space()) {
    const duet::KvStats st = space->stats();
    s.model_switches = st.model_switches;
    s.hot_bins = st.hot_bins;
    s.hot_entries = st.hot_entries;
    s.last_switch_us = st.last_switch_us;
    s.hot_requests = st.hot_requests;
    s.cold_requests = st.cold_requests;
  }
  return s;
}

}  // namespace

LatencyHistogram PhaseResult::merged(unsigned path_mask, unsigned class_mask) const {
  LatencyHistogram h;
  for (unsigned c = 0; c < kOpClasses; ++c)
    for (unsigned p = 0; p < kPaths; ++p)
      if ((class_mask >> c & 1) && (path_mask >> p & 1)) h.merge(hist[c][p]);
  return h;
}

duet::Status prefill(KvSystem& system, KeyState* state, std::uint64_t count, std::size_t value_bytes,
                     unsigned threads, std::size_t batch, const std::string& label) {
  std::atomic<std::uint64_t> next{0}, done{0};
  std::mutex error_mutex;
  duet::Status first_error;
  std::vector<std::thread> pool;
  const std::uint64_t batches = (count + batch - 1) / batch;
  const auto nthreads = static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, batches)));
  std::atomic<unsigned> finished{0};
  for (unsigned t = 0; t < nthreads; ++t) {
    pool.emplace_back([&] {
      std::vector<KvRequest> reqs(batch);
      std::vector<char> keys(batch * 8), values(batch * value_bytes);
      for (;;) {
        const std::uint64_t begin = next.fetch_add(batch, std::memory_order_relaxed);
        if (begin >= count) break;
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(batch, count - begin));
        for (std::size_t i = 0; i < n; ++i) {
          encode_key(begin + i, &keys[i * 8]);
          encode_value(begin + i, 0, &values[i * value_bytes], value_bytes);
          reqs[i].op = KvRequest::Op::kPut;
          reqs[i].key = std::string_view(&keys[i * 8], 8);
          reqs[i].value = std::string_view(&values[i * value_bytes], value_bytes);
        }
        const duet::Status s = system.execute(std::span<KvRequest>(reqs.data(), n));
        if (!s.ok()) {
          std::lock_guard<std::mutex> g(error_mutex);
          if (first_error.ok()) first_error = s;
        }
        done.fetch_add(n, std::memory_order_relaxed);
      }
      finished.fetch_add(1, std::memory_order_release);
    });
  }
  Progress progress(label, count, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  while (finished.load(std::memory_order_acquire) < nthreads) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    progress.update(done.load(std::memory_order_relaxed), elapsed());
  }
  for (std::thread& t : pool) t.join();
  progress.finish(done.load(), elapsed());
  state->next_insert.store(count);
  state->acked.store(count);
  return first_error;
}

PhaseResult run_phase(KvSystem& system, KeyState* state, const PhaseSpec& spec) {
  Shared sh;
  sh.spec = &spec;
  sh.system = &system;
  sh.state = state;
  sh.budget.store(spec.ops);
  sh.replay = spec.ops > 0 && !spec.timeline;
  sh.base_insert = state->next_insert.load();
  sh.window_ns = static_cast<std::uint64_t>(spec.window_ms * 1e6);
  if (sh.window_ns == 0) sh.window_ns = 1;
  // One generator for the whole range, copied by every thread, so zeta is computed once.
  std::unique_ptr<ZipfianGenerator> hint;
  if (spec.distribution == Distribution::kZipfian || spec.distribution == Distribution::kScrambled)
    hint = std::make_unique<ZipfianGenerator>(spec.key_range, spec.theta);
  else if (spec.distribution == Distribution::kLatest)
    hint = std::make_unique<ZipfianGenerator>(std::max<std::uint64_t>(1, state->acked.load()), spec.theta);
  sh.zipf_hint = hint.get();

  const unsigned threads = std::max(1u, spec.threads);
  std::vector<std::unique_ptr<ClientOut>> outs;
  std::vector<std::thread> clients;
  for (unsigned t = 0; t < threads; ++t) outs.push_back(std::make_unique<ClientOut>());
  for (unsigned t = 0; t < threads; ++t) clients.emplace_back(client, &sh, t, outs[t].get());

  const double duration = spec.timeline ? spec.pre_shift_s + spec.seconds : spec.seconds;
  Progress progress(spec.label, spec.ops, duration);
  PhaseResult res;
  // The clock starts once every client has generated its stream.
  while (sh.ready.load(std::memory_order_acquire) < threads) std::this_thread::sleep_for(std::chrono::microseconds(200));
  sh.start_ns = now_ns();
  sh.go.store(true, std::memory_order_release);
  const auto tick = std::chrono::milliseconds(spec.timeline ? 5 : 20);
  double next_sample = 0;
  for (;;) {
    std::this_thread::sleep_for(tick);
    const double elapsed = static_cast<double>(now_ns() - sh.start_ns) * 1e-9;
    bool all_done = true;
    std::uint64_t total = 0;
    for (const auto& o : outs) {
      total += o->progress.load(std::memory_order_relaxed);
      all_done &= o->done.load(std::memory_order_acquire);
    }
    if (all_done) break;
    if (spec.show_progress) progress.update(total, elapsed);
    if (spec.timeline) {
      if (!sh.shifted.load() && elapsed >= spec.pre_shift_s) sh.shifted.store(true);
      if (elapsed >= next_sample) {
        res.samples.push_back(sample_stats(system, elapsed - spec.pre_shift_s));
        next_sample += spec.window_ms * 1e-3 / 5;  // five samples per window
      }
    }
    if (spec.ops == 0 && elapsed >= duration) sh.stop.store(true);
  }
  for (std::thread& t : clients) t.join();
  if (sh.replay) {  // every insert of the streams has been answered
    const std::uint64_t next = sh.base_insert + sh.max_own_inserts.load() * threads;
    state->next_insert.store(std::max(state->next_insert.load(), next));
    state->acked.store(std::max(state->acked.load(), next));
  }
  res.replayed = sh.replay;
  std::uint64_t end_ns = sh.start_ns;
  for (const auto& o : outs) end_ns = std::max(end_ns, o->end_ns);
  res.wall_s = static_cast<double>(end_ns - sh.start_ns) * 1e-9;
  if (spec.timeline) res.samples.push_back(sample_stats(system, res.wall_s - spec.pre_shift_s));

  for (const auto& o : outs) {
    const PhaseResult& r = o->r;
    res.requests += r.requests;
    res.gets += r.gets;
    res.gets_found += r.gets_found;
    if (r.errors && res.errors == 0) res.first_error = r.first_error;
    res.errors += r.errors;
    res.wrong_values += r.wrong_values;
    if (o->busy_ns) res.ops_per_s += static_cast<double>(r.requests) / (static_cast<double>(o->busy_ns) * 1e-9);
    for (unsigned c = 0; c < kOpClasses; ++c)
      for (unsigned p = 0; p < kPaths; ++p) res.hist[c][p].merge(r.hist[c][p]);
    if (spec.timeline) {
      if (res.windows.size() < r.windows.size()) res.windows.resize(r.windows.size());
      for (std::size_t w = 0; w < r.windows.size(); ++w) {
        res.windows[w].all.merge(r.windows[w].all);
        res.windows[w].hot.merge(r.windows[w].hot);
        res.windows[w].cold.merge(r.windows[w].cold);
      }
    }
  }
  res.ops_per_s_wall = res.wall_s > 0 ? static_cast<double>(res.requests) / res.wall_s : 0;
  if (spec.timeline) {
    res.window_s = static_cast<double>(sh.window_ns) * 1e-9;
    res.first_window_t_s = -spec.pre_shift_s;
    // Keep whole windows only: the last one may have been cut short by the end of the phase.
    const auto whole = static_cast<std::size_t>(res.wall_s / res.window_s + 1e-9);
    if (res.windows.size() > whole) res.windows.resize(whole);
  }
  if (spec.show_progress) progress.finish(res.requests, res.wall_s);
  return res;
}

}  // namespace duet::bench::kv
