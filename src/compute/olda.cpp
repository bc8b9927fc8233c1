// OLDA fraud workload: data generator, rule, training recipe and the payment transaction
// (olda.hpp; docs/compute.md, "OLDA").
#include "compute/olda.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>

namespace duet::compute::olda {

const std::array<Location, 4> kLocations{{
    {"New York", 40.7128, -74.0060},
    {"Chicago", 41.8781, -87.6298},
    {"Houston", 29.7604, -95.3698},
    {"San Francisco", 37.7749, -122.4194},
}};

namespace {

constexpr double kPi = 3.14159265358979323846;
double rad(double deg) { return deg * (kPi / 180.0); }

// Portable draws (the standard distributions' algorithms are the library's choice).
double uniform01(std::mt19937_64& r) { return static_cast<double>(r() >> 11) * 0x1.0p-53; }
double uniform(std::mt19937_64& r, double lo, double hi) { return lo + (hi - lo) * uniform01(r); }
double normal(std::mt19937_64& r) {  // Box-Muller, one value per call
  const double u1 = (static_cast<double>(r() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
  const double u2 = uniform01(r);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
}
std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void put_u32be(char* p, std::uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

template <class T>
T load_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // the codec's layout is little-endian, as is every target here
  return v;
}

std::string profile_row(std::uint64_t seq, std::uint32_t home) {
  std::string row;
  const Value v[] = {static_cast<std::int64_t>(seq), static_cast<std::int64_t>(home)};
  (void)profile_codec().encode(v, &row);
  return row;
}
std::string payment_row(double lat, double lon, std::uint64_t id) {
  std::string row;
  const Value v[] = {lat, lon, static_cast<std::int64_t>(id)};
  (void)payment_codec().encode(v, &row);
  return row;
}

Point draw_payment_point(const GenConfig& g, std::uint32_t home, std::mt19937_64& r, bool* foreign) {
  std::uint32_t loc = home;
  *foreign = uniform01(r) < g.foreign_rate;
  if (*foreign) loc = (home + 1 + static_cast<std::uint32_t>(r() % 3)) % 4;
  return {kLocations[loc].lat + g.sigma_deg * normal(r), kLocations[loc].lon + g.sigma_deg * normal(r)};
}

Point draw_history_point(const GenConfig& g, std::uint32_t home, std::mt19937_64& r) {
  const double w = g.history_half_width_deg;
  return {kLocations[home].lat + uniform(r, -w, w), kLocations[home].lon + uniform(r, -w, w)};
}

void backoff(unsigned conflicts, std::mt19937_64& r) {
  if (conflicts <= 3) {
    std::this_thread::yield();
    return;
  }
  const unsigned shift = std::min(conflicts - 3, 9u);
  const double us = std::min(2.0 * (1u << shift), 1000.0) * (0.5 + 0.5 * uniform01(r));
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(us * 1000)));
}

}  // namespace

double haversine_km(double lat1, double lon1, double lat2, double lon2) {
  const double dlat = rad(lat2 - lat1), dlon = rad(lon2 - lon1);
  const double s = std::sin(dlat / 2), t = std::sin(dlon / 2);
  double a = s * s + std::cos(rad(lat1)) * std::cos(rad(lat2)) * t * t;
  a = std::min(1.0, std::max(0.0, a));
  return 2.0 * kEarthRadiusKm * std::asin(std::sqrt(a));
}

bool is_fraud(double prev_lat, double prev_lon, double lat, double lon) {
  return haversine_km(prev_lat, prev_lon, lat, lon) > kFraudKm;
}

std::array<float, kFeatures> features(double prev_lat, double prev_lon, double lat, double lon) {
  const double km = haversine_km(prev_lat, prev_lon, lat, lon);
  return {static_cast<float>(std::min(km / 1000.0, 2.0)), static_cast<float>(prev_lat / 90.0),
          static_cast<float>(prev_lon / 180.0), static_cast<float>(lat / 90.0), static_cast<float>(lon / 180.0)};
}

Status GenConfig::check() const {
  if (users == 0 || users > (1u << 31)) return Status::InvalidArgument("olda: users must be 1 .. 2^31");
  if (history == 0 || history > 1'000'000) return Status::InvalidArgument("olda: history must be 1 .. 10^6");
  if (!(history_half_width_deg >= 0 && history_half_width_deg <= 10))
    return Status::InvalidArgument("olda: history_half_width_deg must be 0 .. 10");
  if (!(sigma_deg >= 0 && sigma_deg <= 10)) return Status::InvalidArgument("olda: sigma_deg must be 0 .. 10");
  if (!(foreign_rate >= 0 && foreign_rate <= 1)) return Status::InvalidArgument("olda: foreign_rate must be 0 .. 1");
  return Status::Ok();
}

std::uint32_t home_of(const GenConfig& g, std::uint32_t user) {
  return static_cast<std::uint32_t>(mix(g.seed * 0x100000001b3ull ^ user) % 4);
}

std::vector<Point> history_of(const GenConfig& g, std::uint32_t user) {
  std::mt19937_64 r(mix(g.seed ^ (0x5151ull << 40) ^ user));
  const std::uint32_t home = home_of(g, user);
  std::vector<Point> h(g.history);
  for (Point& p : h) p = draw_history_point(g, home, r);
  return h;
}

std::vector<Payment> make_payments(const GenConfig& g, std::size_t n, std::uint64_t stream, std::uint64_t first_id) {
  std::mt19937_64 r(mix(g.seed ^ mix(stream + 0x77)));
  std::vector<Payment> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    Payment& p = out[i];
    p.user = static_cast<std::uint32_t>(r() % g.users);
    const Point pt = draw_payment_point(g, home_of(g, p.user), r, &p.foreign);
    p.lat = pt.lat;
    p.lon = pt.lon;
    p.id = first_id + i;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Model

std::vector<Sample> make_samples(const GenConfig& g, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 r(mix(seed ^ 0xabcdef));
  std::vector<Sample> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t home = static_cast<std::uint32_t>(r() % 4);
    bool foreign = false;
    out[i].prev = (i & 1) ? draw_history_point(g, home, r) : draw_payment_point(g, home, r, &foreign);
    if (foreign) out[i].prev = draw_history_point(g, home, r);  // a prior payment was accepted
    out[i].cur = draw_payment_point(g, home, r, &foreign);
    out[i].fraud = is_fraud(out[i].prev.lat, out[i].prev.lon, out[i].cur.lat, out[i].cur.lon);
  }
  return out;
}

namespace {

// Double-precision forward pass of a 2-layer MLP for one row (evaluation).
void forward_double(const Mlp& m, const float* x, double* y) {
  std::vector<double> a(x, x + m.inputs()), b;
  for (const Dense& d : m.layers) {
    b.assign(d.out, 0.0);
    for (std::uint32_t o = 0; o < d.out; ++o) {
      double s = d.b[o];
      for (std::uint32_t i = 0; i < d.in; ++i) s += static_cast<double>(d.w[std::size_t{o} * d.in + i]) * a[i];
      if (d.act == Dense::kRelu) s = std::max(0.0, s);
      if (d.act == Dense::kSigmoid) s = 1.0 / (1.0 + std::exp(-s));
      b[o] = s;
    }
    a.swap(b);
  }
  for (std::uint32_t o = 0; o < m.outputs(); ++o) y[o] = a[o];
}

}  // namespace

double accuracy(const Mlp& m, std::span<const Sample> samples) {
  if (samples.empty()) return 0;
  std::size_t right = 0;
  for (const Sample& s : samples) {
    const auto f = features(s.prev.lat, s.prev.lon, s.cur.lat, s.cur.lon);
    double y[2];
    forward_double(m, f.data(), y);
    right += (y[0] > y[1]) == s.fraud;
  }
  return static_cast<double>(right) / samples.size();
}

Status train(const TrainConfig& c, Mlp* out, TrainReport* report) {
  if (c.train_samples == 0 || c.test_samples == 0 || c.epochs == 0 || c.batch == 0 || c.hidden == 0)
    return Status::InvalidArgument("olda train: sizes must be positive");
  if (Status s = c.data.check(); !s.ok()) return s;
  const std::uint32_t H = c.hidden, F = kFeatures;
  const std::vector<Sample> tr = make_samples(c.data, c.train_samples, c.seed);
  const std::vector<Sample> te = make_samples(c.data, c.test_samples, c.seed + 1);
  std::vector<std::array<float, kFeatures>> x(tr.size());
  for (std::size_t i = 0; i < tr.size(); ++i) x[i] = features(tr[i].prev.lat, tr[i].prev.lon, tr[i].cur.lat, tr[i].cur.lon);

  std::mt19937_64 r(mix(c.seed ^ 0x7a11));
  std::vector<float> w1(std::size_t{H} * F), b1(H, 0.0f), w2(2 * std::size_t{H}), b2(2, 0.0f);
  const double l1 = std::sqrt(6.0 / F), l2 = std::sqrt(6.0 / H);
  for (float& v : w1) v = static_cast<float>(uniform(r, -l1, l1));
  for (float& v : w2) v = static_cast<float>(uniform(r, -l2, l2) * 0.5);
  std::vector<float> vw1(w1.size(), 0), vb1(H, 0), vw2(w2.size(), 0), vb2(2, 0);
  std::vector<float> gw1(w1.size()), gb1(H), gw2(w2.size()), gb2(2), h(H), dh(H);
  std::vector<std::size_t> order(tr.size());
  std::iota(order.begin(), order.end(), 0);
  double loss = 0;
  for (unsigned e = 0; e < c.epochs; ++e) {
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[r() % i]);  // Fisher-Yates
    loss = 0;
    for (std::size_t b0 = 0; b0 < order.size(); b0 += c.batch) {
      const std::size_t b1e = std::min(order.size(), b0 + c.batch);
      std::fill(gw1.begin(), gw1.end(), 0.0f);
      std::fill(gb1.begin(), gb1.end(), 0.0f);
      std::fill(gw2.begin(), gw2.end(), 0.0f);
      std::fill(gb2.begin(), gb2.end(), 0.0f);
      for (std::size_t k = b0; k < b1e; ++k) {
        const std::size_t s = order[k];
        const float* xi = x[s].data();
        for (std::uint32_t j = 0; j < H; ++j) {
          float a = b1[j];
          for (std::uint32_t f = 0; f < F; ++f) a += w1[j * F + f] * xi[f];
          h[j] = a > 0 ? a : 0;
        }
        const float t[2] = {tr[s].fraud ? 1.0f : 0.0f, tr[s].fraud ? 0.0f : 1.0f};
        std::fill(dh.begin(), dh.end(), 0.0f);
        for (int o = 0; o < 2; ++o) {
          float z = b2[o];
          for (std::uint32_t j = 0; j < H; ++j) z += w2[o * H + j] * h[j];
          const float y = 1.0f / (1.0f + std::exp(-z));
          const float yc = std::min(std::max(y, 1e-7f), 1.0f - 1e-7f);
          loss -= t[o] * std::log(yc) + (1 - t[o]) * std::log(1 - yc);
          const float dz = y - t[o];  // d(BCE)/dz through the sigmoid
          gb2[o] += dz;
          for (std::uint32_t j = 0; j < H; ++j) {
            gw2[o * H + j] += dz * h[j];
            dh[j] += dz * w2[o * H + j];
          }
        }
        for (std::uint32_t j = 0; j < H; ++j) {
          if (h[j] <= 0) continue;
          gb1[j] += dh[j];
          for (std::uint32_t f = 0; f < F; ++f) gw1[j * F + f] += dh[j] * xi[f];
        }
      }
      const float scale = c.learning_rate / static_cast<float>(b1e - b0);
      auto step = [&](std::vector<float>& w, std::vector<float>& v, const std::vector<float>& g) {
        for (std::size_t i = 0; i < w.size(); ++i) {
          v[i] = c.momentum * v[i] - scale * g[i];
          w[i] += v[i];
        }
      };
      step(w1, vw1, gw1);
      step(b1, vb1, gb1);
      step(w2, vw2, gw2);
      step(b2, vb2, gb2);
    }
    loss /= static_cast<double>(2 * tr.size());
  }
  Mlp m;
  Dense d1, d2;
  d1.act = Dense::kRelu;
  d1.in = F;
  d1.out = H;
  d1.w = std::move(w1);
  d1.b = std::move(b1);
  d2.act = Dense::kSigmoid;
  d2.in = H;
  d2.out = 2;
  d2.w = std::move(w2);
  d2.b = std::move(b2);
  m.layers.push_back(std::move(d1));
  m.layers.push_back(std::move(d2));
  if (report) {
    report->final_loss = loss;
    report->train_accuracy = accuracy(m, tr);
    report->test_accuracy = accuracy(m, te);
    std::size_t fraud = 0, caught = 0, legit = 0, passed = 0;
    for (const Sample& s : te) {
      const auto f = features(s.prev.lat, s.prev.lon, s.cur.lat, s.cur.lon);
      double y[2];
      forward_double(m, f.data(), y);
      const bool flag = y[0] > y[1];
      if (s.fraud) {
        ++fraud;
        caught += flag;
      } else {
        ++legit;
        passed += !flag;
      }
    }
    report->test_fraud_rate = static_cast<double>(fraud) / te.size();
    report->test_fraud_recall = fraud ? static_cast<double>(caught) / fraud : 1.0;
    report->test_legit_pass = legit ? static_cast<double>(passed) / legit : 1.0;
  }
  *out = std::move(m);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// The payment transaction

std::string profile_key(std::uint32_t user) {
  std::string k(8, '\0');
  put_u32be(k.data(), user);
  return k;
}

std::string payment_key(std::uint32_t user, std::uint64_t seq) {
  std::string k(8, '\0');
  put_u32be(k.data(), user);
  put_u32be(k.data() + 4, static_cast<std::uint32_t>(0xFFFFFFFFull - seq));
  return k;
}

const RowCodec& profile_codec() {
  static const RowCodec c = [] {
    RowCodec r;
    (void)RowCodec::make({{"seq", Type::kInt64, 0}, {"home", Type::kInt64, 0}}, &r);
    return r;
  }();
  return c;
}

const RowCodec& payment_codec() {
  static const RowCodec c = [] {
    RowCodec r;
    (void)RowCodec::make({{"lat", Type::kFloat64, 0}, {"lon", Type::kFloat64, 0}, {"txn", Type::kInt64, 0}}, &r);
    return r;
  }();
  return c;
}

struct Olda::Counters {
  std::atomic<std::uint64_t> launches{0}, inferences{0};
};

Olda::~Olda() = default;

Status Olda::make(std::shared_ptr<TxnSpace> space, std::shared_ptr<Engine> engine, ModelId model, const OldaOptions& o,
                  std::unique_ptr<Olda>* out) {
  if (!space || !engine) return Status::InvalidArgument("olda: a keyspace and an engine are required");
  const Mlp* m = engine->model(model);
  if (!m) return Status::InvalidArgument("olda: the model is not loaded in the engine");
  if (m->inputs() != kFeatures || m->outputs() != 2)
    return Status::InvalidArgument("olda: the model must take 5 inputs and give 2 outputs");
  if (o.extra > 0xFFFFFF00u) return Status::InvalidArgument("olda: extra is too large");
  if (o.max_attempts == 0) return Status::InvalidArgument("olda: max_attempts must be positive");
  std::unique_ptr<Olda> p(new Olda());
  p->space_ = std::move(space);
  p->engine_ = std::move(engine);
  p->model_ = model;
  p->o_ = o;
  p->n_ = std::make_unique<Counters>();
  if (o.batcher) {
    if (Status s = Batcher::make(p->engine_, model, o.device, o.batch_rows, &p->batcher_, o.inflight); !s.ok()) return s;
  } else {
    std::unique_ptr<Context> probe;  // refuses kGpu without a GPU now rather than at the first payment
    if (Status s = p->engine_->context(o.device, &probe); !s.ok()) return s;
  }
  *out = std::move(p);
  return Status::Ok();
}

Status Olda::load(const GenConfig& g, std::uint32_t first, std::uint32_t last, unsigned threads) {
  if (Status s = g.check(); !s.ok()) return s;
  if (first > last || last > g.users) return Status::InvalidArgument("olda load: users out of range");
  threads = std::max(1u, threads);
  std::atomic<std::uint32_t> next{first};
  std::vector<Status> st(threads, Status::Ok());
  auto work = [&](unsigned w) {
    Txn t;
    for (;;) {
      const std::uint32_t u = next.fetch_add(1);
      if (u >= last) return;
      const std::vector<Point> h = history_of(g, u);
      Status s = space_->begin(&t);
      for (std::size_t i = 0; s.ok() && i < h.size(); ++i) s = t.put(payment_key(u, i + 1), payment_row(h[i].lat, h[i].lon, 0));
      if (s.ok()) s = t.put(profile_key(u), profile_row(h.size(), home_of(g, u)));
      CommitResult cr;
      if (s.ok()) s = t.commit(&cr);
      if (s.ok() && cr.outcome != TxnOutcome::kCommitted)
        s = Status::Internal(std::string("olda load: user commit ended ") + txn_outcome_name(cr.outcome));
      if (!s.ok()) {
        t.abort();
        st[w] = s;
        next = last;
        return;
      }
    }
  };
  std::vector<std::thread> ts;
  for (unsigned w = 1; w < threads; ++w) ts.emplace_back(work, w);
  work(0);
  for (auto& th : ts) th.join();
  for (const Status& s : st)
    if (!s.ok()) return s;
  return Status::Ok();
}

Status Olda::infer(Context* ctx, std::span<const float> x, std::vector<float>* y) {
  n_->inferences.fetch_add(1, std::memory_order_relaxed);
  if (batcher_) return batcher_->infer(x, 1, y);
  n_->launches.fetch_add(1, std::memory_order_relaxed);
  return ctx->infer(model_, x, 1, y);
}

std::uint64_t Olda::launches() const { return batcher_ ? batcher_->launches() : n_->launches.load(); }
std::uint64_t Olda::inferences() const { return n_->inferences.load(); }

Status Olda::prepare(const Payment& p, Context* ctx, Txn* t, PayResult* r, std::uint64_t* seq_read) {
  if (Status s = space_->begin(t); !s.ok()) return s;
  thread_local TxnSnapshot snap;
  thread_local Table hist;
  thread_local std::vector<float> y;
  const SnapshotArg arg =
      SnapshotArg::of(TxnRange::closed(profile_key(p.user), payment_key(p.user, 0)), 2 + std::size_t{o_.extra});
  if (Status s = t->snapshot(std::span<const SnapshotArg>(&arg, 1), &snap); !s.ok()) {
    t->abort();
    return s;
  }
  r->snapshot_slots = snap.size();
  const std::string pk = profile_key(p.user);
  if (snap.size() == 0 || snap.key(0) != pk) {
    t->abort();
    return Status::NotFound("olda: no profile for user " + std::to_string(p.user));
  }
  const std::string_view prof = snap.value(0);
  if (prof.size() != profile_codec().row_bytes()) {
    t->abort();
    return Status::Internal("olda: malformed profile of user " + std::to_string(p.user));
  }
  const std::uint64_t seq = static_cast<std::uint64_t>(load_le<std::int64_t>(prof.data()));
  const std::uint32_t home = static_cast<std::uint32_t>(load_le<std::int64_t>(prof.data() + 8));
  *seq_read = seq;
  // The payments (newest first) into typed columns, as a GPU block would receive them.
  RowCodec::Slots sl = RowCodec::slots_of(snap);
  sl.n -= 1;
  sl.value_offsets += 1;
  sl.present += 1;
  sl.key_offsets = nullptr;
  if (Status s = payment_codec().decode(sl, &hist); !s.ok()) {
    t->abort();
    return s;
  }
  double plat = p.lat, plon = p.lon;  // no prior payment: distance 0
  if (seq > 0) {
    if (hist.rows() == 0 || snap.key(1) != payment_key(p.user, seq)) {
      t->abort();
      return Status::Internal("olda: the newest payment of user " + std::to_string(p.user) + " is missing");
    }
    plat = hist.get("lat")->f64()[0];
    plon = hist.get("lon")->f64()[0];
  }
  r->km = haversine_km(plat, plon, p.lat, p.lon);
  r->rule_fraud = r->km > kFraudKm;
  const auto f = features(plat, plon, p.lat, p.lon);
  if (Status s = infer(ctx, f, &y); !s.ok()) {
    t->abort();
    return s;
  }
  r->model_fraud = model_flags(y.data());
  if (r->model_fraud) {
    t->abort();
    return Status::Ok();
  }
  Status s = t->put(payment_key(p.user, seq + 1), payment_row(p.lat, p.lon, p.id));
  if (s.ok()) s = t->put(pk, profile_row(seq + 1, home));
  if (!s.ok()) t->abort();
  return s;
}

Status Olda::pay(const Payment& p, PayResult* r, const std::function<void(const Attempt&)>& on_attempt) {
  *r = PayResult{};
  std::unique_ptr<Context> ctx;  // one per transaction (its stream, on the GPU), across its runs
  if (!batcher_)
    if (Status s = engine_->context(o_.device, &ctx); !s.ok()) return s;
  thread_local std::mt19937_64 rng(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  Txn t;
  for (unsigned a = 1; a <= o_.max_attempts; ++a) {
    r->attempts = a;
    Attempt at;
    at.payment = p.id;
    at.user = p.user;
    at.attempt = a;
    if (Status s = prepare(p, ctx.get(), &t, r, &at.seq_read); !s.ok()) return s;
    at.start_ts = t.start_ts();
    if (r->model_fraud) {
      at.outcome = Attempt::kDeclined;
      at.after_ts = space_->now();
      if (on_attempt) on_attempt(at);
      return Status::Ok();
    }
    CommitResult cr;
    if (Status s = t.commit(&cr); !s.ok()) return s;
    at.after_ts = space_->now();
    if (cr.outcome == TxnOutcome::kCommitted) {
      at.outcome = Attempt::kCommitted;
      at.commit_ts = cr.commit_ts;
      if (on_attempt) on_attempt(at);
      r->committed = true;
      r->seq = at.seq_read + 1;
      return Status::Ok();
    }
    at.outcome = Attempt::kConflict;  // a conflict, or "snapshot too old": run again
    if (on_attempt) on_attempt(at);
    backoff(a, rng);
  }
  return Status::Unavailable("olda: payment " + std::to_string(p.id) + " lost a write conflict in each of its " +
                         std::to_string(o_.max_attempts) + " runs; nothing was applied");
}

Status Olda::read_profile(std::uint32_t user, Profile* out) {
  Txn t;
  if (Status s = space_->begin(&t); !s.ok()) return s;
  TxnSnapshot snap;
  const SnapshotArg arg = SnapshotArg::of(TxnRange::closed(profile_key(user), payment_key(user, 0)), 2);
  Status s = t.snapshot(std::span<const SnapshotArg>(&arg, 1), &snap);
  t.abort();
  if (!s.ok()) return s;
  if (snap.size() == 0 || snap.key(0) != profile_key(user)) return Status::NotFound("olda: no profile for user " + std::to_string(user));
  out->seq = static_cast<std::uint64_t>(load_le<std::int64_t>(snap.value(0).data()));
  out->home = static_cast<std::uint32_t>(load_le<std::int64_t>(snap.value(0).data() + 8));
  out->last = {};
  if (snap.size() > 1) {
    out->last.lat = load_le<double>(snap.value(1).data());
    out->last.lon = load_le<double>(snap.value(1).data() + 8);
  }
  return Status::Ok();
}

Status Olda::read_payments(std::uint32_t user, std::vector<std::pair<Point, std::uint64_t>>* out) {
  out->clear();
  Txn t;
  if (Status s = space_->begin(&t); !s.ok()) return s;
  std::vector<std::pair<std::string, std::string>> kv;
  Status s = t.scan(TxnRange{payment_key(user, 0xFFFFFFFEull), payment_key(user, 1), true, true}, 0, &kv);
  t.abort();
  if (!s.ok()) return s;
  for (auto it = kv.rbegin(); it != kv.rend(); ++it) {
    const std::string& v = it->second;
    if (v.size() != payment_codec().row_bytes()) return Status::Internal("olda: malformed payment row");
    out->push_back({{load_le<double>(v.data()), load_le<double>(v.data() + 8)},
                    static_cast<std::uint64_t>(load_le<std::int64_t>(v.data() + 16))});
  }
  return Status::Ok();
}

}  // namespace duet::compute::olda
