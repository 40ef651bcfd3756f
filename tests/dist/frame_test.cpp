// tests/dist/frame_test.cpp — frame headers (magic, version, type, length bound) and payload fields, each refusal naming the peer and the value.
#include "runtime/dist/frame.h"

#include <cstring>

#include <gtest/gtest.h>

namespace dsv41::dist {
namespace {

TEST(Frame, HeaderRoundTrips) {
  for (uint16_t t = 1; t <= kLastFrameType; ++t) {
    if (t == 3 || t == 4) continue;  // retired (protocol 2's RunPhase, ResetSlot): refused below
    const auto bytes = encode_header(static_cast<FrameType>(t), 1234u * t);
    auto h = decode_header(bytes.data(), "rank 1 (x)");
    ASSERT_TRUE(h.is_ok()) << h.status().message();
    EXPECT_EQ(static_cast<uint16_t>(h->type), t);
    EXPECT_EQ(h->length, 1234u * t);
  }
  EXPECT_EQ(frame_type_name(5), "RoundPlan");
  EXPECT_EQ(frame_type_name(12), "CommId");
  EXPECT_EQ(frame_type_name(3), "type 3");
  EXPECT_EQ(frame_type_name(99), "type 99");
}

std::string refusal(std::array<uint8_t, kFrameHeaderBytes> bytes) {
  auto h = decode_header(bytes.data(), "rank 2 (127.0.0.1:5)");
  return h.is_ok() ? "(accepted)" : h.status().message();
}

TEST(Frame, HeaderRefusesGarbageNamingThePeerAndValue) {
  std::array<uint8_t, kFrameHeaderBytes> garbage{};
  std::memcpy(garbage.data(), "GET / HTTP/1", 12);
  EXPECT_EQ(refusal(garbage), "rank 2 (127.0.0.1:5): frame magic 0x20544547, expected 0x43313444 (not a dsv41 rank, "
                              "or a corrupted stream)");

  auto old_version = encode_header(FrameType::Stop, 0);
  old_version[4] = 7;
  EXPECT_EQ(refusal(old_version), "rank 2 (127.0.0.1:5): control protocol version 7, this rank speaks 3 (ranks of "
                                  "different builds?)");

  for (uint16_t bad : {uint16_t{0}, uint16_t{3}, uint16_t{4}, uint16_t{kLastFrameType + 1}, uint16_t{0xffff}}) {
    auto unknown = encode_header(FrameType::Stop, 0);
    std::memcpy(unknown.data() + 6, &bad, 2);
    EXPECT_EQ(refusal(unknown), fmt::format("rank 2 (127.0.0.1:5): frame type {} unknown (known: 1, 2, 5..12)", bad));
  }

  EXPECT_EQ(refusal(encode_header(FrameType::ExchangeSum, kMaxFramePayload)).find("exceeds"), std::string::npos)
      << "the limit itself is allowed";
  EXPECT_EQ(refusal(encode_header(FrameType::ExchangeSum, kMaxFramePayload + 1)),
            fmt::format("rank 2 (127.0.0.1:5): ExchangeSum frame of {} bytes exceeds the limit of {} bytes",
                        kMaxFramePayload + 1, kMaxFramePayload));
}

TEST(Frame, PayloadFieldsRoundTrip) {
  const float floats[3] = {1.5f, -2.25f, 3e-8f};
  PayloadWriter w;
  w.u32(7).u64(0x0102030405060708ull).str("decode.r1").i32s({1, -2, 3}).i64s({-5, 6}).f32s(floats, 3).raw({9, 8});
  const std::vector<uint8_t> bytes = w.take();
  PayloadReader r(bytes, "test");
  EXPECT_EQ(r.u32("a"), 7u);
  EXPECT_EQ(r.u64("b"), 0x0102030405060708ull);
  EXPECT_EQ(r.str("c"), "decode.r1");
  EXPECT_EQ(r.i32s("d"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(r.i64s("e"), (std::vector<int64_t>{-5, 6}));
  float out[3];
  r.f32s("f", 3, out);
  EXPECT_EQ(std::memcmp(out, floats, sizeof out), 0);
  EXPECT_EQ(r.raw("g"), (std::vector<uint8_t>{9, 8}));
  EXPECT_TRUE(r.finish().is_ok()) << r.finish().message();
}

TEST(Frame, PayloadReaderRefusesShortLyingAndLongPayloads) {
  const std::vector<uint8_t> short_bytes = {1, 2};
  PayloadReader a(short_bytes, "rank 1: Hello");
  a.u32("rank");
  EXPECT_EQ(a.finish().message(), "rank 1: Hello: field rank needs 4 bytes but only 2 of the 2-byte payload are left");

  // A count that claims more than the payload holds is refused before anything is allocated.
  const std::vector<uint8_t> lying = PayloadWriter().u32(0xffffffffu).take();
  PayloadReader b(lying, "rank 1: RoundPlan");
  EXPECT_TRUE(b.i32s("statics").empty());
  EXPECT_EQ(b.finish().message(),
            "rank 1: RoundPlan: field statics needs 17179869180 bytes but only 0 of the 4-byte payload are left");

  const std::vector<uint8_t> long_bytes = PayloadWriter().u32(1).u32(2).take();
  PayloadReader c(long_bytes, "rank 0: Agreement");
  c.u32("accepted");
  EXPECT_EQ(c.finish().message(), "rank 0: Agreement: 4 bytes left over after the last field (payload of 8 bytes)");

  const float one = 1.0f;
  const std::vector<uint8_t> floats = PayloadWriter().f32s(&one, 1).take();
  PayloadReader d(floats, "rank 2: ExchangeSum");
  float out[2];
  d.f32s("values", 2, out);
  EXPECT_EQ(d.finish().message(), "rank 2: ExchangeSum: field values has 1 floats, expected 2");
}

}  // namespace
}  // namespace dsv41::dist
