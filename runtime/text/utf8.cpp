// runtime/text/utf8.cpp — UTF-8 validation by the Unicode table of well-formed byte sequences.
#include "runtime/text/utf8.h"

#include "runtime/text/tokenizer.h"

namespace dsv41::text {
namespace {

// The allowed range of the second byte depends on the lead byte (Unicode Table 3-7): this excludes
// overlong forms, surrogates (ED A0..BF) and code points above U+10FFFF.
bool second_byte_ok(uint8_t lead, uint8_t b) {
  if (lead == 0xE0) return b >= 0xA0 && b <= 0xBF;
  if (lead == 0xED) return b >= 0x80 && b <= 0x9F;
  if (lead == 0xF0) return b >= 0x90 && b <= 0xBF;
  if (lead == 0xF4) return b >= 0x80 && b <= 0x8F;
  return b >= 0x80 && b <= 0xBF;
}

size_t expected_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;  // 80..C1 and F5..FF never start a sequence
}

// How many bytes from pos form a valid (possibly incomplete) prefix of a sequence, and its full length.
size_t valid_prefix(std::string_view bytes, size_t pos, size_t* full) {
  const auto lead = static_cast<uint8_t>(bytes[pos]);
  *full = expected_length(lead);
  if (*full == 0) return 0;
  size_t n = 1;
  while (n < *full && pos + n < bytes.size()) {
    const auto b = static_cast<uint8_t>(bytes[pos + n]);
    const bool ok = n == 1 ? second_byte_ok(lead, b) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++n;
  }
  return n;
}

}  // namespace

size_t utf8_sequence_length(std::string_view bytes, size_t pos, size_t* maximal_subpart) {
  size_t full = 0;
  const size_t n = valid_prefix(bytes, pos, &full);
  if (full != 0 && n == full) {
    *maximal_subpart = 0;
    return full;
  }
  *maximal_subpart = n == 0 ? 1 : n;
  return 0;
}

size_t utf8_decodable_prefix(std::string_view bytes) {
  // A sequence is at most 4 bytes long, so only the last 3 bytes can start an incomplete one.
  const size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (size_t pos = from; pos < bytes.size(); ++pos) {
    size_t full = 0;
    const size_t n = valid_prefix(bytes, pos, &full);
    if (full > 1 && n == bytes.size() - pos && n < full) return pos;
  }
  return bytes.size();
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t bad = 0;
    const size_t n = utf8_sequence_length(bytes, pos, &bad);
    if (n > 0) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      pos += bad;
    }
  }
  return out;
}

}  // namespace dsv41::text
