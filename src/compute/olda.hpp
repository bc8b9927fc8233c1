// OLDA: SnapKV's online-decision-augmentation fraud microbenchmark (dissertation 905-925, digest
// B3.8; docs/compute.md, "OLDA"). A payment is one snapshot-isolation transaction of a `txn`
// keyspace: BEGIN, SNAPSHOT of the user's profile and last payment (plus optional older ones),
// features, MLP inference through the compute Engine (a per-transaction context or the shared
// Batcher), WRITE of the payment and the profile, COMMIT only when the model finds no fraud.
//
//   Data        users are assigned uniformly to four locations (kLocations, > 300 km apart);
//               their history is uniform in a box of +-history_half_width_deg around it; each
//               new payment is drawn from N(location, sigma_deg) in latitude and longitude
//               (no covariance), the location being the user's own except for a foreign_rate
//               fraction drawn around another of the four (a card used far away).
//   Rule        fraud iff the payment is more than 300 km (haversine, mean Earth radius) from
//               the user's prior payment (the ground truth the model is trained on).
//   Keys        8 bytes, (user, slot) big-endian u32 each: slot 0 is the profile, a payment with
//               sequence number s >= 1 is slot 0xFFFFFFFF - s, so one range from the profile
//               returns the profile, the newest payment, then older ones newest first.
//   Rows        fixed-width (RowCodec): profile {seq int64 (the newest payment's s), home int64};
//               payment {lat float64, lon float64, txn int64 (the payment's id)}.
//   Model       5 features (distance / 1000 km clamped to 2, prior lat / 90, prior lon / 180,
//               lat / 90, lon / 180) -> Dense 128 ReLU -> Dense 2 sigmoid (fraud, legit), FP32;
//               fraud iff output 0 > output 1. train() is the seeded recipe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compute/compute.hpp"
#include "duet/status.hpp"
#include "duet/txn.hpp"

namespace duet::compute::olda {

/// One of the four centres users live around.
struct Location {
  const char* name;
  double lat, lon;
};
/// New York, Chicago, Houston, San Francisco: every pair is more than 1,000 km apart.
extern const std::array<Location, 4> kLocations;

inline constexpr double kEarthRadiusKm = 6371.0088;  ///< mean radius (IUGG)
inline constexpr double kFraudKm = 300.0;            ///< the rule's threshold
inline constexpr std::uint32_t kFeatures = 5;

/// Great-circle distance in km between two points given in degrees (haversine formula).
double haversine_km(double lat1, double lon1, double lat2, double lon2);
/// The ground-truth rule: more than kFraudKm from the prior payment.
bool is_fraud(double prev_lat, double prev_lon, double lat, double lon);
/// The model's input row for a payment at (lat, lon) after one at (prev_lat, prev_lon).
std::array<float, kFeatures> features(double prev_lat, double prev_lon, double lat, double lon);

/// The data generator's parameters (all seeded: the same config gives the same data).
struct GenConfig {
  std::uint32_t users = 10000;           ///< 1 .. 2^31
  std::uint32_t history = 4;             ///< payments per user at load, >= 1
  double history_half_width_deg = 1.0;   ///< history uniform in +-this around the location
  double sigma_deg = 1.0;                ///< new payments ~ N(location, sigma) per axis
  double foreign_rate = 0.05;            ///< fraction of payments around another location
  std::uint64_t seed = 1;
  /// InvalidArgument naming the field.
  Status check() const;
};

struct Point {
  double lat = 0, lon = 0;
};

/// A payment to process: the user, where it is made, its id (the database transaction id).
struct Payment {
  std::uint32_t user = 0;
  double lat = 0, lon = 0;
  std::uint64_t id = 0;
  bool foreign = false;  ///< drawn around another location (for statistics only)
};

/// The index in kLocations of `user`'s home (uniform, from the seed).
std::uint32_t home_of(const GenConfig& g, std::uint32_t user);
/// `user`'s history at load, oldest first (g.history points).
std::vector<Point> history_of(const GenConfig& g, std::uint32_t user);
/// n payments by users uniform in [0, g.users), from stream `stream` of the seed; ids
/// first_id, first_id + 1, ...
std::vector<Payment> make_payments(const GenConfig& g, std::size_t n, std::uint64_t stream, std::uint64_t first_id = 1);

// ---------------------------------------------------------------------------------------------
// Model

/// The training recipe's parameters (defaults are the committed recipe).
struct TrainConfig {
  std::uint64_t seed = 7;
  std::size_t train_samples = 1 << 15;
  std::size_t test_samples = 1 << 13;
  unsigned epochs = 8;
  std::size_t batch = 64;
  float learning_rate = 0.05f;
  float momentum = 0.9f;
  std::uint32_t hidden = 128;
  GenConfig data;  ///< the distribution samples are drawn from (users irrelevant)
};
/// What training reports, on held-out samples drawn like the training set.
struct TrainReport {
  double train_accuracy = 0, test_accuracy = 0;
  double test_fraud_rate = 0;           ///< fraction of test samples that are fraud by the rule
  double test_fraud_recall = 0;         ///< fraud samples the model flags
  double test_legit_pass = 0;           ///< legitimate samples the model passes
  double final_loss = 0;                ///< mean binary cross-entropy of the last epoch
};
/// One labelled sample: prior payment, payment, and the rule's label.
struct Sample {
  Point prev, cur;
  bool fraud = false;
};
/// n samples: a prior payment (half from the history box, half ~N(location, sigma)) and a
/// payment drawn as make_payments draws them, labelled by the rule.
std::vector<Sample> make_samples(const GenConfig& g, std::size_t n, std::uint64_t seed);
/// Trains the 5-128-2 model by minibatch SGD with momentum on binary cross-entropy (He-uniform
/// initialisation, samples shuffled each epoch, all from c.seed): deterministic for a given
/// config and build. InvalidArgument for a zero size.
Status train(const TrainConfig& c, Mlp* out, TrainReport* report);
/// The model's verdict on one output row: fraud iff y[0] > y[1].
inline bool model_flags(const float* y) { return y[0] > y[1]; }
/// The fraction of `samples` on which `m` (evaluated on the CPU in double precision) agrees
/// with the rule.
double accuracy(const Mlp& m, std::span<const Sample> samples);

// ---------------------------------------------------------------------------------------------
// The payment transaction

std::string profile_key(std::uint32_t user);
std::string payment_key(std::uint32_t user, std::uint64_t seq);
/// The row schemas (profile: seq, home; payment: lat, lon, txn).
const RowCodec& profile_codec();
const RowCodec& payment_codec();

/// How payments infer.
struct OldaOptions {
  Device device = Device::kAuto;  ///< where inference runs
  bool batcher = true;            ///< share launches through one Batcher; else a context per payment
  std::size_t batch_rows = 4096;  ///< Batcher max_rows
  unsigned inflight = 2;          ///< Batcher launches at once
  std::uint32_t extra = 0;        ///< older payments snapshotted besides the last (Fig. 3.4)
  unsigned max_attempts = 100000; ///< runs of one payment before giving up (Unavailable)
};

/// One run of a payment's transaction, for histories.
struct Attempt {
  std::uint64_t payment = 0;
  std::uint32_t user = 0;
  unsigned attempt = 0;        ///< 1 for the first run
  std::uint64_t start_ts = 0;
  std::uint64_t seq_read = 0;  ///< the profile's seq in the snapshot
  enum Outcome : std::uint8_t { kCommitted, kConflict, kDeclined } outcome = kCommitted;
  std::uint64_t commit_ts = 0;  ///< kCommitted
  std::uint64_t after_ts = 0;   ///< TxnSpace::now() once the run ended (bounds its commit)
};

/// What one payment came to.
struct PayResult {
  bool committed = false;    ///< stored (the model passed it)
  bool model_fraud = false;  ///< the model's verdict on the last run
  bool rule_fraud = false;   ///< the rule's verdict on the same snapshot
  unsigned attempts = 0;
  std::uint64_t seq = 0;     ///< committed: its sequence number
  double km = 0;             ///< distance from the prior payment
  std::size_t snapshot_slots = 0;
};

/// A user's stored state.
struct Profile {
  std::uint64_t seq = 0;
  std::uint32_t home = 0;
  Point last;  ///< the newest payment
};

/// The OLDA workload over one txn keyspace and one compute engine. Thread-safe: any number of
/// threads may call pay() at once.
class Olda {
 public:
  /// `model` must be loaded in `engine` with 5 inputs and 2 outputs.
  static Status make(std::shared_ptr<TxnSpace> space, std::shared_ptr<Engine> engine, ModelId model,
                     const OldaOptions& o, std::unique_ptr<Olda>* out);
  ~Olda();
  /// Stores users [first, last) of g: each user's profile and history in one transaction, on
  /// `threads` threads.
  Status load(const GenConfig& g, std::uint32_t first, std::uint32_t last, unsigned threads = 1);
  /// Processes one payment (retrying the whole transaction on a write conflict, with backoff).
  /// `on_attempt` (may be empty) sees every run. NotFound for an unknown user; Unavailable after
  /// max_attempts conflicts (nothing applied).
  Status pay(const Payment& p, PayResult* r, const std::function<void(const Attempt&)>& on_attempt = {});
  /// The user's profile and newest payment at now (NotFound for an unknown user).
  Status read_profile(std::uint32_t user, Profile* out);
  /// The user's payments, oldest first.
  Status read_payments(std::uint32_t user, std::vector<std::pair<Point, std::uint64_t>>* out);
  /// Inference launches so far (the Batcher's, or one per inference without it) and inferences.
  std::uint64_t launches() const;
  std::uint64_t inferences() const;
  const OldaOptions& options() const { return o_; }

  /// One run of the transaction up to its verdict (exposed so a test can interleave runs): on
  /// *t (begun here), SNAPSHOT, decode, features, inference; when the model passes it the
  /// payment and profile writes are buffered (commit them with t->commit), else *t is aborted.
  Status prepare(const Payment& p, Context* ctx, Txn* t, PayResult* r, std::uint64_t* seq_read);

 private:
  Olda() = default;
  Status infer(Context* ctx, std::span<const float> x, std::vector<float>* y);
  std::shared_ptr<TxnSpace> space_;
  std::shared_ptr<Engine> engine_;
  ModelId model_ = 0;
  OldaOptions o_;
  std::unique_ptr<Batcher> batcher_;
  struct Counters;
  std::unique_ptr<Counters> n_;
};

}  // namespace duet::compute::olda
