// Epic's procedure sets and workload generators: Mix (random read-modify-write, insert, delete,
// injected aborts and reruns, rule breaking; the serial-equivalence tests) and YCSB A/B/C/F, plain
// or field-split. Procedures are DUET_HD so the same source runs on CPU threads and GPU warps.
#pragma once

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "batch/epic/epic.hpp"

namespace duet::batch::epic {

// ---------------------------------------------------------------- Mix
/// Procedures over any tables. Args: [0] kind-specific value, [1] abort mode (0 none, 1 abort
/// before writing, 2 rerun on the first attempt, 3 write then abort: kIllegal, 4 rerun on every
/// attempt: declared keys that never become right, 5 read past the declared reads then abort:
/// kIllegal, nothing written).
struct MixProcs {
  enum : std::uint32_t { kRmw = 0, kDelete = 1, kPartial = 2, kCount = 3 };
  static bool known(std::uint32_t p) { return p < kCount; }
  /// Any keys and args fit (a missing arg reads as 0).
  static std::string shape_error(std::uint32_t, const CallShape&) { return ""; }

  template <class Ctx>
  DUET_HD static std::uint32_t checksum(Ctx& c, std::uint32_t* present) {
    std::uint32_t sum = 0;
    *present = 0;
    for (std::uint32_t i = 0; i < c.nreads(); ++i) {
      const std::uint32_t* r = c.read(i);
      if (!r) continue;
      ++*present;
      for (std::uint32_t w = 0; w < c.read_words(i); ++w) sum = sum * 31u + r[w];
    }
    return sum;
  }
  template <class Ctx>
  DUET_HD static bool decide(Ctx& c) {
    const std::uint32_t mode = c.arg(1);
    if (mode == 1) return c.abort(7), false;
    if (mode == 5) return (void)c.read(c.nreads()), c.abort(5), false;  // the bad index decides
    if ((mode == 2 && c.attempt() == 0) || mode == 4) return c.rerun(), false;
    return true;
  }
  template <class Ctx>
  DUET_HD static bool dispatch(std::uint32_t p, Ctx& c) {
    if (p >= kCount) return false;
    std::uint32_t present;
    const std::uint32_t sum = checksum(c, &present);
    c.out(1, sum);
    c.out(2, present);
    if (!decide(c)) return true;
    const std::uint32_t v = c.arg(0) + sum;
    for (std::uint32_t j = 0; j < c.nwrites(); ++j) {
      if (p == kDelete && (j & 1u) == 0) {
        c.remove(j);
      } else if (p == kPartial && (j & 1u)) {
        continue;  // left unwritten: filled with the previous version
      } else {
        c.write(j, [v, j](std::uint32_t w) { return v * 7u + j * 13u + w; });
      }
    }
    if (c.arg(1) == 3) c.abort(9);  // too late: kIllegal
    c.out(3, v);
    return true;
  }
};

// ---------------------------------------------------------------- YCSB
/// One procedure. Args per write j (4 words at 4j): source read index (or 0xFFFFFFFF: none),
/// first word and word count of the updated field, new value. The new record is the source read
/// with the field replaced (plain copy-update), or just the field (split items). Output 0: the
/// checksum of every read record. An optional last arg (at 4 * writes) of 1 aborts the txn after
/// its reads (the injected aborts of the abort benchmark).
struct YcsbProcs {
  static bool known(std::uint32_t p) { return p == 0; }
  /// Four args per write and an optional abort flag; each write's source read (when it has one)
  /// among the first 16 reads, with records at least as wide as the write's (it copies them).
  static std::string shape_error(std::uint32_t, const CallShape& c) {
    const std::size_t n = c.args.size();
    if (n != 4ull * c.writes && n != 4ull * c.writes + 1)
      return "YCSB's procedure takes 4 args per write (source read, first word, word count, value) and an optional "
             "abort flag: " + std::to_string(4ull * c.writes) + " or " + std::to_string(4ull * c.writes + 1) +
             " args for " + std::to_string(c.writes) + " writes, not " + std::to_string(n);
    for (std::uint32_t j = 0; j < c.writes; ++j) {
      const std::uint32_t si = c.arg(4 * j);
      if (si != 0xFFFFFFFFu && (si >= c.reads || si >= 16))
        return "YCSB write " + std::to_string(j) + ": source read " + std::to_string(si) +
               " is not one of the call's first " + std::to_string(c.reads < 16 ? c.reads : 16) + " reads";
    }
    WidthCheck w("YCSB's procedure", c);
    for (std::uint32_t j = 0; j < c.writes; ++j)
      if (c.arg(4 * j) != 0xFFFFFFFFu) w.copies(j, c.arg(4 * j));
    return w.error();
  }
  template <class Ctx>
  DUET_HD static bool dispatch(std::uint32_t p, Ctx& c) {
    if (p != 0) return false;
    std::uint32_t sum = 0;
    const std::uint32_t* src[16] = {};
    for (std::uint32_t i = 0; i < c.nreads(); ++i) {
      const std::uint32_t* r = c.read(i);
      if (i < 16) src[i] = r;
      if (!r) continue;
      sum += r[0] + r[c.read_words(i) - 1];
    }
    c.out(0, sum);
    if (c.arg(4 * c.nwrites()) == 1) return (c.abort(7), true);
    for (std::uint32_t j = 0; j < c.nwrites(); ++j) {
      const std::uint32_t si = c.arg(4 * j), fb = c.arg(4 * j + 1), fn = c.arg(4 * j + 2), val = c.arg(4 * j + 3);
      const std::uint32_t* s = si < 16 ? src[si] : nullptr;
      c.write(j, [s, fb, fn, val](std::uint32_t w) { return (w >= fb && w < fb + fn) ? val + w : (s ? s[w] : 0u); });
    }
    return true;
  }
};

/// Zipfian ranks in [0, n) (Gray et al.), θ in [0, 1); θ = 0 is uniform.
class Zipf {
 public:
  Zipf(std::uint64_t n, double theta, std::uint64_t seed) : n_(n), theta_(theta), rng_(seed) {
    if (theta_ <= 0) return;
    double z = 0;
    const std::uint64_t lim = std::min<std::uint64_t>(n, 10000000);
    for (std::uint64_t i = 1; i <= lim; ++i) z += 1.0 / std::pow(static_cast<double>(i), theta_);
    zetan_ = z;
    zeta2_ = 1.0 + std::pow(0.5, theta_);
    alpha_ = 1.0 / (1.0 - theta_);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta_)) / (1.0 - zeta2_ / zetan_);
  }
  std::uint64_t next() {
    if (theta_ <= 0) return std::uniform_int_distribution<std::uint64_t>(0, n_ - 1)(rng_);
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    const double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < zeta2_) return 1;
    const auto r = static_cast<std::uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r >= n_ ? n_ - 1 : r;
  }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::uint64_t n_;
  double theta_;
  std::mt19937_64 rng_;
  double zetan_ = 0, zeta2_ = 0, alpha_ = 0, eta_ = 0;
};

/// YCSB configuration: `records` records of `fields` fields of `field_words` words; `ops` per
/// txn; read share and RMW share (the rest are blind updates); split makes each field an item.
struct YcsbConfig {
  std::uint64_t records = 1000000;
  std::uint32_t fields = 10;
  std::uint32_t field_words = 25;  // 100 B
  std::uint32_t ops = 10;
  double read = 0.5, rmw = 0.0;    // A: 0.5/0; B: 0.95/0; C: 1/0; F: 0.5/0.5 (rmw of the rest)
  double theta = 0.0;
  double abort_rate = 0.0;         // share of txns that abort after their reads (injected)
  bool split = false;
  /// Piece splitting: each op is a piece of its txn (Batch::add_piece), reads first, then the
  /// ops that write. Ignored with abort_rate > 0 (a piece may not abort).
  bool pieces = false;
  std::uint64_t seed = 1;
  static YcsbConfig workload(char w, double theta, bool split);
};

inline YcsbConfig YcsbConfig::workload(char w, double theta, bool split) {
  YcsbConfig c;
  c.theta = theta;
  c.split = split;
  if (w == 'A') c.read = 0.5;
  if (w == 'B') c.read = 0.95;
  if (w == 'C') c.read = 1.0;
  if (w == 'F') c.read = 0.5, c.rmw = 1.0;
  if (w == 'U') c.read = 0.0, c.rmw = 1.0;  // the abort benchmark: every op a read-update
  return c;
}

/// The YCSB table (one direct table).
inline TableSpec ycsb_table(const YcsbConfig& c) {
  TableSpec t;
  t.name = "usertable";
  t.record_words = c.split ? c.field_words : c.fields * c.field_words;
  t.capacity = static_cast<std::uint32_t>(c.split ? c.records * c.fields : c.records);
  return t;
}

/// The initial value of record r (field-split: item r*fields+f), word w.
inline std::uint32_t ycsb_initial(std::uint64_t item, std::uint32_t w) {
  return static_cast<std::uint32_t>(item * 2654435761u) + w;
}

/// Generates YCSB txns into `b`. A read reads the record (split: its fields); an update writes one
/// field (plain: a read of the record plus a write, the copy-update); an RMW reads the record and
/// updates one field. A txn's written records are distinct. With `pieces` each op is a piece of
/// its own (its read sum is the piece's output 0, which fold_pieces adds up to the txn's), the
/// ops that only read first: a read of a record the txn also writes must see the record as it
/// was before the txn. The random draws are the same either way, so a config with and without
/// pieces generates the same txns.
class YcsbGenerator {
 public:
  explicit YcsbGenerator(const YcsbConfig& c) : c_(c), z_(c.records, c.theta, c.seed) {}
  void generate(std::size_t n, Batch* b, std::uint64_t first_tag = 0) {
    std::vector<std::uint64_t> wrec;
    auto& rng = z_.rng();
    std::uniform_real_distribution<double> u(0, 1);
    for (std::size_t t = 0; t < n; ++t) {
      ops_.clear(), wrec.clear();
      for (std::uint32_t k = 0; k < c_.ops; ++k) {
        const bool is_read = u(rng) < c_.read;
        std::uint64_t r = z_.next();
        if (!is_read) {
          while (std::find(wrec.begin(), wrec.end(), r) != wrec.end()) r = z_.next();
          wrec.push_back(r);
        }
        const bool rmw = !is_read && u(rng) < c_.rmw;
        const std::uint32_t f = static_cast<std::uint32_t>(rng() % c_.fields);
        const std::uint32_t val = static_cast<std::uint32_t>(rng());
        ops_.push_back({r, f, val, !is_read, is_read || rmw});
      }
      std::int32_t abort = -1;
      if (c_.abort_rate > 0) abort = u(rng) < c_.abort_rate ? 1 : 0;
      if (c_.pieces && abort < 0) {
        bool first = true;
        for (int pass = 0; pass < 2; ++pass)  // pieces that only read, then pieces that write
          for (const Op& o : ops_) {
            if (o.write != (pass == 1)) continue;
            clear_txn();
            append(o);
            if (first) b->add(0, reads_, writes_, args_, first_tag + t);
            else b->add_piece(0, reads_, writes_, args_);
            first = false;
          }
        continue;
      }
      clear_txn();
      for (const Op& o : ops_) append(o);
      if (abort >= 0) args_.push_back(static_cast<std::uint32_t>(abort));
      b->add(0, reads_, writes_, args_, first_tag + t);
    }
  }

 private:
  struct Op {
    std::uint64_t record;
    std::uint32_t field, value;
    bool write;         ///< an update or RMW (else a read)
    bool reads_record;  ///< a read or RMW (split: reads every field; plain reads the record always)
  };
  void clear_txn() { reads_.clear(), writes_.clear(), args_.clear(); }
  // Adds op o's keys and args to the txn being built.
  void append(const Op& o) {
    if (c_.split) {
      if (o.reads_record)
        for (std::uint32_t ff = 0; ff < c_.fields; ++ff) reads_.push_back({0, o.record * c_.fields + ff});
      if (o.write) {
        writes_.push_back({0, o.record * c_.fields + o.field});
        args_.insert(args_.end(), {0xFFFFFFFFu, 0, c_.field_words, o.value});
      }
      return;
    }
    reads_.push_back({0, o.record});
    if (!o.write) return;
    writes_.push_back({0, o.record});
    const auto src = static_cast<std::uint32_t>(reads_.size() - 1);
    args_.insert(args_.end(), {src < 16 ? src : 0xFFFFFFFFu, o.field * c_.field_words, c_.field_words, o.value});
  }

  YcsbConfig c_;
  Zipf z_;
  std::vector<Op> ops_;
  std::vector<Key> reads_, writes_;
  std::vector<std::uint32_t> args_;
};

}  // namespace duet::batch::epic
