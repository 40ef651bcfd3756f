// runtime/dist/frame.h — the control connection's frames: a fixed header (magic, version, type, length), a bounded payload, and its little-endian fields.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41::dist {

// The bytes "D41C" on the wire: a peer that is not a dsv41 rank is refused at its first frame.
constexpr uint32_t kFrameMagic = 0x43313444;
// Bump on any change to the header or to a message's payload; ranks of different versions refuse each other.
constexpr uint16_t kProtocolVersion = 3;
constexpr size_t kFrameHeaderBytes = 12;  // magic u32, version u16, type u16, payload length u32
// Larger than any exchange of the planned phases needs on the CPU backend; a length above it is garbage.
constexpr uint32_t kMaxFramePayload = 256u << 20;

enum class FrameType : uint16_t {
  Hello = 1,           // follower → rank 0: its RankFacts
  Agreement = 2,       // rank 0 → follower: accepted, or the one refusal message
  // 3 and 4 were protocol 2's RunPhase and ResetSlot (generate step by step), which RoundPlan replaced:
  // never sent since protocol 3, so a frame of either type is refused as unknown.
  RoundPlan = 5,       // rank 0 → follower: one round (generate, serve), the bytes of runtime/round_plan.h
  Stop = 6,            // rank 0 → follower: finish cleanly
  Heartbeat = 7,       // both ways, every heartbeat period: silence longer than the watchdog is a failure
  Failed = 8,          // both ways: the sender's rank failed; the payload is the reason
  ExchangeSum = 9,     // follower → rank 0: a partial to sum
  ExchangeGather = 10, // follower → rank 0: columns to gather
  ExchangeResult = 11, // rank 0 → follower: the rank-ordered result
  CommId = 12,         // rank 0 → follower: the communicator's unique id (NCCL), opaque bytes
};
constexpr uint16_t kLastFrameType = 12;

// "RoundPlan", or "type 99" for a value outside the enum (3 and 4 included).
std::string frame_type_name(uint16_t type);

struct FrameHeader {
  FrameType type = FrameType::Heartbeat;
  uint32_t length = 0;
};

std::array<uint8_t, kFrameHeaderBytes> encode_header(FrameType type, uint32_t length);
// Checks magic, version, type and the length bound; `peer` ("rank 1 (127.0.0.1:4000)") names the sender.
Result<FrameHeader> decode_header(const uint8_t* bytes, const std::string& peer);

struct Frame {
  FrameType type = FrameType::Heartbeat;
  std::vector<uint8_t> payload;
};

// Appends little-endian fields.
class PayloadWriter {
 public:
  PayloadWriter& u32(uint32_t v);
  PayloadWriter& u64(uint64_t v);
  PayloadWriter& str(const std::string& s);  // u32 length, bytes
  PayloadWriter& i32s(const std::vector<int32_t>& v);  // u32 count, values
  PayloadWriter& i64s(const std::vector<int64_t>& v);  // u32 count, values
  PayloadWriter& f32s(const float* data, uint64_t n);  // u64 count, values
  PayloadWriter& raw(const std::vector<uint8_t>& v);   // u32 length, bytes
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  void put(const void* data, size_t n);
  std::vector<uint8_t> bytes_;
};

// Reads what PayloadWriter wrote. A read past the end or a count beyond the bytes left makes the
// reader fail (later reads return zeros); status() then names `what`, the field and the sizes.
class PayloadReader {
 public:
  PayloadReader(const std::vector<uint8_t>& bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}
  uint32_t u32(const char* field);
  uint64_t u64(const char* field);
  std::string str(const char* field);
  std::vector<int32_t> i32s(const char* field);
  std::vector<int64_t> i64s(const char* field);
  // Reads `n` floats into `out` (n taken from the payload must equal `expected`).
  void f32s(const char* field, uint64_t expected, float* out);
  std::vector<uint8_t> raw(const char* field);
  // The first failure, or an error when bytes are left over (a payload longer than its message).
  Status finish() const;

 private:
  bool take(const char* field, uint64_t n, void* out);
  const std::vector<uint8_t>& bytes_;
  std::string what_;
  size_t at_ = 0;
  Status status_;
};

}  // namespace dsv41::dist
