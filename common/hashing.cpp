// common/hashing.cpp — xxHash-backed hashing, used inline so no shared object is needed at run time.
#include "common/hashing.h"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <fmt/format.h>

namespace dsv41 {

uint64_t hash_bytes(const void* data, size_t size) { return XXH3_64bits(data, size); }

std::string hex64(uint64_t value) { return fmt::format("{:016x}", value); }

Hasher::Hasher() : state_(XXH3_createState()) { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

Hasher& Hasher::add_bytes(const void* data, size_t size) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data, size);
  return *this;
}
Hasher& Hasher::add(std::string_view text) {
  add(static_cast<uint64_t>(text.size()));
  return add_bytes(text.data(), text.size());
}
Hasher& Hasher::add(uint64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));  // fixed byte order
  return add_bytes(bytes, 8);
}
Hasher& Hasher::add_f64(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return add(bits);
}
uint64_t Hasher::digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

}  // namespace dsv41
