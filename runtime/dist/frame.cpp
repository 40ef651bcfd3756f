// runtime/dist/frame.cpp — frame headers and payload fields, every size checked before it is used.
#include "runtime/dist/frame.h"

#include <bit>
#include <cstring>
#include <iterator>

namespace dsv41::dist {

static_assert(std::endian::native == std::endian::little, "frames are little-endian; a big-endian host would swap");

namespace {

// Indexed by type - 1; null: a retired type (3, 4), unknown on the wire.
const char* kTypeNames[] = {"Hello",     "Agreement", nullptr,       nullptr,          "RoundPlan",     "Stop",
                            "Heartbeat", "Failed",    "ExchangeSum", "ExchangeGather", "ExchangeResult",
                            "CommId"};
static_assert(std::size(kTypeNames) == kLastFrameType);

bool known_type(uint16_t type) { return type >= 1 && type <= kLastFrameType && kTypeNames[type - 1] != nullptr; }

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::string frame_type_name(uint16_t type) {
  if (known_type(type)) return kTypeNames[type - 1];
  return fmt::format("type {}", type);
}

std::array<uint8_t, kFrameHeaderBytes> encode_header(FrameType type, uint32_t length) {
  std::array<uint8_t, kFrameHeaderBytes> h{};
  const uint16_t t = static_cast<uint16_t>(type);
  std::memcpy(h.data(), &kFrameMagic, 4);
  std::memcpy(h.data() + 4, &kProtocolVersion, 2);
  std::memcpy(h.data() + 6, &t, 2);
  std::memcpy(h.data() + 8, &length, 4);
  return h;
}

Result<FrameHeader> decode_header(const uint8_t* bytes, const std::string& peer) {
  const uint32_t magic = load<uint32_t>(bytes);
  if (magic != kFrameMagic)
    return Status::errorf("{}: frame magic 0x{:08x}, expected 0x{:08x} (not a dsv41 rank, or a corrupted stream)",
                          peer, magic, kFrameMagic);
  const uint16_t version = load<uint16_t>(bytes + 4);
  if (version != kProtocolVersion)
    return Status::errorf("{}: control protocol version {}, this rank speaks {} (ranks of different builds?)", peer,
                          version, kProtocolVersion);
  const uint16_t type = load<uint16_t>(bytes + 6);
  if (!known_type(type))
    return Status::errorf("{}: frame type {} unknown (known: 1, 2, 5..{})", peer, type, kLastFrameType);
  const uint32_t length = load<uint32_t>(bytes + 8);
  if (length > kMaxFramePayload)
    return Status::errorf("{}: {} frame of {} bytes exceeds the limit of {} bytes", peer, frame_type_name(type), length,
                          kMaxFramePayload);
  return FrameHeader{static_cast<FrameType>(type), length};
}

void PayloadWriter::put(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), p, p + n);
}

PayloadWriter& PayloadWriter::u32(uint32_t v) { put(&v, 4); return *this; }
PayloadWriter& PayloadWriter::u64(uint64_t v) { put(&v, 8); return *this; }

PayloadWriter& PayloadWriter::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  put(s.data(), s.size());
  return *this;
}

PayloadWriter& PayloadWriter::i32s(const std::vector<int32_t>& v) {
  u32(static_cast<uint32_t>(v.size()));
  put(v.data(), v.size() * 4);
  return *this;
}

PayloadWriter& PayloadWriter::i64s(const std::vector<int64_t>& v) {
  u32(static_cast<uint32_t>(v.size()));
  put(v.data(), v.size() * 8);
  return *this;
}

PayloadWriter& PayloadWriter::f32s(const float* data, uint64_t n) {
  u64(n);
  put(data, n * 4);
  return *this;
}

PayloadWriter& PayloadWriter::raw(const std::vector<uint8_t>& v) {
  u32(static_cast<uint32_t>(v.size()));
  put(v.data(), v.size());
  return *this;
}

bool PayloadReader::take(const char* field, uint64_t n, void* out) {
  if (!status_.is_ok()) return false;
  const uint64_t left = bytes_.size() - at_;
  if (n > left) {
    status_ = Status::errorf("{}: field {} needs {} bytes but only {} of the {}-byte payload are left", what_, field, n,
                             left, bytes_.size());
    return false;
  }
  if (n) std::memcpy(out, bytes_.data() + at_, n);
  at_ += n;
  return true;
}

uint32_t PayloadReader::u32(const char* field) {
  uint32_t v = 0;
  take(field, 4, &v);
  return v;
}

uint64_t PayloadReader::u64(const char* field) {
  uint64_t v = 0;
  take(field, 8, &v);
  return v;
}

std::string PayloadReader::str(const char* field) {
  const uint32_t n = u32(field);
  if (n > bytes_.size() - at_) return take(field, n, nullptr), std::string();  // fails with the sizes
  std::string s(n, '\0');
  take(field, n, s.data());
  return s;
}

std::vector<int32_t> PayloadReader::i32s(const char* field) {
  const uint64_t n = u32(field);
  if (n * 4 > bytes_.size() - at_) return take(field, n * 4, nullptr), std::vector<int32_t>();
  std::vector<int32_t> v(n);
  take(field, n * 4, v.data());
  return v;
}

std::vector<int64_t> PayloadReader::i64s(const char* field) {
  const uint64_t n = u32(field);
  if (n * 8 > bytes_.size() - at_) return take(field, n * 8, nullptr), std::vector<int64_t>();
  std::vector<int64_t> v(n);
  take(field, n * 8, v.data());
  return v;
}

void PayloadReader::f32s(const char* field, uint64_t expected, float* out) {
  const uint64_t n = u64(field);
  if (!status_.is_ok()) return;
  if (n != expected) {
    status_ = Status::errorf("{}: field {} has {} floats, expected {}", what_, field, n, expected);
    return;
  }
  if (n > (bytes_.size() - at_) / 4) {
    take(field, n * 4, nullptr);
    return;
  }
  take(field, n * 4, out);
}

std::vector<uint8_t> PayloadReader::raw(const char* field) {
  const uint32_t n = u32(field);
  if (n > bytes_.size() - at_) return take(field, n, nullptr), std::vector<uint8_t>();
  std::vector<uint8_t> v(n);
  take(field, n, v.data());
  return v;
}

Status PayloadReader::finish() const {
  if (!status_.is_ok()) return status_;
  if (at_ != bytes_.size())
    return Status::errorf("{}: {} bytes left over after the last field (payload of {} bytes)", what_,
                          bytes_.size() - at_, bytes_.size());
  return Status::ok();
}

}  // namespace dsv41::dist
