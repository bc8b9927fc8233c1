// The fixed-width row codec: schemas, encoding, and decoding real SNAPSHOTs of a txn keyspace
// (points, ranges, absent points, the packed buffer), with malformed rows refused.
#include <gtest/gtest.h>

#include <cstring>

#include "compute/compute.hpp"
#include "duet/txn.hpp"

namespace duet::compute {
namespace {

RowCodec orders_codec() {
  RowCodec c;
  EXPECT_TRUE(RowCodec::make({{"id", Type::kInt64, 0},
                              {"amount", Type::kMoney, 0},
                              {"score", Type::kFloat32, 0},
                              {"lat", Type::kFloat64, 0},
                              {"state", Type::kBytes, 3}},
                             &c)
                  .ok());
  return c;
}

std::string row(const RowCodec& c, std::int64_t id, std::int64_t cents, double score, double lat, std::string_view st) {
  std::string r;
  const Value v[] = {id, cents, score, lat, st};
  EXPECT_TRUE(c.encode(v, &r).ok());
  return r;
}

std::string key8(std::uint64_t k) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(k >> (56 - 8 * i));
  return s;
}

TEST(ComputeCodec, LayoutIsPackedLittleEndian) {
  const RowCodec c = orders_codec();
  EXPECT_EQ(c.row_bytes(), 8u + 8 + 4 + 8 + 3);
  EXPECT_EQ(c.offset(2), 16u);
  EXPECT_EQ(c.offset(4), 28u);
  const std::string r = row(c, 0x0102030405060708LL, -250, 1.5, -33.25, "CA");
  ASSERT_EQ(r.size(), c.row_bytes());
  EXPECT_EQ(static_cast<unsigned char>(r[0]), 0x08);  // little-endian
  std::int64_t cents;
  std::memcpy(&cents, r.data() + 8, 8);
  EXPECT_EQ(cents, -250);
  float f;
  std::memcpy(&f, r.data() + 16, 4);
  EXPECT_EQ(f, 1.5f);
  EXPECT_EQ(r.substr(28), std::string("CA\0", 3));
}

TEST(ComputeCodec, BadSchemasAndValuesAreRefused) {
  RowCodec c;
  EXPECT_EQ(RowCodec::make({}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RowCodec::make({{"a", Type::kInt64, 0}, {"a", Type::kMoney, 0}}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RowCodec::make({{"", Type::kInt64, 0}}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RowCodec::make({{"key", Type::kInt64, 0}}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RowCodec::make({{"b", Type::kBytes, 0}}, &c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RowCodec::make({{"b", Type::kBytes, 5000}}, &c).code(), StatusCode::kInvalidArgument);
  const RowCodec o = orders_codec();
  std::string r;
  const Value few[] = {std::int64_t{1}};
  EXPECT_EQ(o.encode(few, &r).code(), StatusCode::kInvalidArgument);
  const Value wrong[] = {1.0, std::int64_t{1}, 1.0, 1.0, std::string_view("x")};
  EXPECT_EQ(o.encode(wrong, &r).code(), StatusCode::kInvalidArgument);
  const Value longer[] = {std::int64_t{1}, std::int64_t{1}, 1.0, 1.0, std::string_view("TOOLONG")};
  EXPECT_EQ(o.encode(longer, &r).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(r.empty());
}

class ComputeCodecSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    TxnConfig cfg;
    cfg.background_gc = false;
    ASSERT_TRUE(TxnSpace::open("codec", cfg, &space_).ok());
    codec_ = orders_codec();
    Txn t;
    ASSERT_TRUE(space_->begin(&t).ok());
    for (std::uint64_t i = 1; i <= 50; ++i)
      ASSERT_TRUE(t.put(key8(i), row(codec_, static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) * 199 - 3000,
                                      i * 0.5, -90.0 + i, i % 2 ? "NY" : "TX"))
                      .ok());
    CommitResult r;
    ASSERT_TRUE(t.commit(&r).ok());
    ASSERT_EQ(r.outcome, TxnOutcome::kCommitted);
  }
  std::shared_ptr<TxnSpace> space_;
  RowCodec codec_;
};

TEST_F(ComputeCodecSnapshot, DecodesRangesAndPointsInSlotOrder) {
  Txn t;
  ASSERT_TRUE(space_->begin(&t).ok());
  const SnapshotArg args[] = {SnapshotArg::of(TxnRange::closed(key8(10), key8(19))), SnapshotArg::point(key8(999)),
                              SnapshotArg::point(key8(3))};
  TxnSnapshot s;
  ASSERT_TRUE(t.snapshot(args, &s).ok());
  ASSERT_EQ(s.size(), 12u);
  Table tb;
  ASSERT_TRUE(codec_.decode(RowCodec::slots_of(s), &tb, true).ok());
  ASSERT_EQ(tb.rows(), 11u);  // the absent point is skipped
  ASSERT_EQ(tb.width(), 6u);
  EXPECT_EQ(tb.name(0), "key");
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(tb.get("key")->i64()[i], static_cast<std::int64_t>(10 + i));
    EXPECT_EQ(tb.get("id")->i64()[i], static_cast<std::int64_t>(10 + i));
    EXPECT_EQ(tb.get("amount")->i64()[i], static_cast<std::int64_t>(10 + i) * 199 - 3000);
    EXPECT_EQ(tb.get("score")->f32()[i], static_cast<float>((10 + i) * 0.5));
    EXPECT_EQ(tb.get("lat")->f64()[i], -90.0 + (10 + i));
    EXPECT_EQ(tb.get("state")->bytes_at(i), (10 + i) % 2 ? std::string_view("NY\0", 3) : std::string_view("TX\0", 3));
  }
  EXPECT_EQ(tb.get("id")->i64()[10], 3);
  EXPECT_EQ(tb.get("amount")->type(), Type::kMoney);
  // The packed buffer decodes to the same table.
  PackedSnapshot p;
  ASSERT_TRUE(PackedSnapshot::pack(s, &p).ok());
  Table tp;
  ASSERT_TRUE(codec_.decode(RowCodec::slots_of(p), &tp, true).ok());
  ASSERT_EQ(tp.rows(), tb.rows());
  for (std::size_t c = 0; c < tb.width(); ++c)
    EXPECT_EQ(0, std::memcmp(tp.column(c).data(), tb.column(c).data(), tb.rows() * tb.column(c).width()));
  t.abort();
}

// decode_fields gives the named columns of decode(), in the order named; a name that is not a
// field, or one named twice, is refused with nothing decoded.
TEST_F(ComputeCodecSnapshot, DecodesOnlyTheNamedFields) {
  Txn t;
  ASSERT_TRUE(space_->begin(&t).ok());
  const SnapshotArg args[] = {SnapshotArg::of(TxnRange::all()), SnapshotArg::point(key8(999))};
  TxnSnapshot s;
  ASSERT_TRUE(t.snapshot(args, &s).ok());
  Table all, some;
  ASSERT_TRUE(codec_.decode(RowCodec::slots_of(s), &all, true).ok());
  const std::string names[] = {"state", "amount"};
  ASSERT_TRUE(codec_.decode_fields(RowCodec::slots_of(s), names, &some, true).ok());
  ASSERT_EQ(some.width(), 3u);
  EXPECT_EQ(some.name(0), "key");
  EXPECT_EQ(some.name(1), "state");
  EXPECT_EQ(some.name(2), "amount");
  ASSERT_EQ(some.rows(), all.rows());
  for (const char* n : {"key", "state", "amount"})
    EXPECT_EQ(0, std::memcmp(some.get(n)->data(), all.get(n)->data(), all.rows() * all.get(n)->width())) << n;
  const std::string bad[] = {"amount", "nope"}, twice[] = {"id", "id"};
  EXPECT_EQ(codec_.decode_fields(RowCodec::slots_of(s), bad, &some).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(some.width(), 0u);
  EXPECT_EQ(codec_.decode_fields(RowCodec::slots_of(s), twice, &some).code(), StatusCode::kInvalidArgument);
  t.abort();
}

TEST_F(ComputeCodecSnapshot, MalformedRowsAreRefused) {
  Txn w;
  ASSERT_TRUE(space_->begin(&w).ok());
  ASSERT_TRUE(w.put(key8(20), "short").ok());
  TxnSnapshot s;
  const SnapshotArg all[] = {SnapshotArg::of(TxnRange::all())};
  ASSERT_TRUE(w.snapshot(all, &s).ok());
  Table tb;
  const Status st = codec_.decode(RowCodec::slots_of(s), &tb);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("slot 19"), std::string::npos) << st.message();
  EXPECT_EQ(tb.rows(), 0u);
  w.abort();
  // Keys over 8 bytes cannot be a key column.
  Txn l;
  ASSERT_TRUE(space_->begin(&l).ok());
  ASSERT_TRUE(l.put("a-key-of-many-bytes", row(codec_, 1, 1, 1, 1, "A")).ok());
  ASSERT_TRUE(l.snapshot(all, &s).ok());
  EXPECT_EQ(codec_.decode(RowCodec::slots_of(s), &tb, true).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(codec_.decode(RowCodec::slots_of(s), &tb, false).ok());
  EXPECT_EQ(tb.rows(), 51u);
  l.abort();
  // An empty snapshot decodes to empty columns.
  TxnSnapshot e;
  ASSERT_TRUE(codec_.decode(RowCodec::slots_of(e), &tb, true).ok());
  EXPECT_EQ(tb.rows(), 0u);
  EXPECT_EQ(tb.width(), 6u);
}

}  // namespace
}  // namespace duet::compute
