// common/hashing.h — stable 64-bit content hashes (xxHash XXH3) for digests, fingerprints and variant ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dsv41 {

uint64_t hash_bytes(const void* data, size_t size);
inline uint64_t hash_text(std::string_view text) { return hash_bytes(text.data(), text.size()); }
// 16 lowercase hex digits.
std::string hex64(uint64_t value);

// Feeds values in order; the digest depends on every value and its position.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& add_bytes(const void* data, size_t size);
  Hasher& add(std::string_view text);  // length-prefixed, so "ab"+"c" differs from "a"+"bc"
  Hasher& add(uint64_t value);
  Hasher& add_i64(int64_t value) { return add(static_cast<uint64_t>(value)); }
  Hasher& add_f64(double value);
  uint64_t digest() const;

 private:
  void* state_;
};

}  // namespace dsv41
