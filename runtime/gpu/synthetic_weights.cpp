// runtime/gpu/synthetic_weights.cpp — counter-based values per tensor (splitmix64 of name hash and index), chunked into the sink.
#include "runtime/gpu/synthetic_weights.h"

#include <algorithm>
#include <cstring>

#include "common/hashing.h"

namespace dsv41::gpu {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from the top 24 bits.
float unit(uint64_t bits) { return static_cast<float>(bits >> 40) / 8388608.0f - 1.0f; }

// The random word behind byte `i` of a tensor: one splitmix64 per 8 bytes (per 4 bf16 values),
// remembered between consecutive bytes, so a release share (~90 GB) fills in seconds.
struct WordCache {
  uint64_t index = ~0ull, word = 0;
  uint64_t get(uint64_t key, uint64_t index_wanted) {
    if (index_wanted != index) index = index_wanted, word = splitmix64(key ^ index_wanted);
    return word;
  }
};

// Byte `i` of a tensor of `dtype` whose values draw from `key`; multi-byte values come from their
// element's own bits, so a chunk starting mid-element agrees with its neighbour.
uint8_t synthetic_byte(fb::DType dtype, uint64_t key, uint64_t i, WordCache& cache) {
  switch (dtype) {
    case fb::DType::BF16: {
      // Sign and mantissa random, exponent 117..121: |v| < 2^-5 < kSyntheticAmplitude.
      const uint64_t e = i / 2;
      const uint16_t bits = static_cast<uint16_t>(cache.get(key, e / 4) >> (16 * (e % 4)));
      const uint16_t v = static_cast<uint16_t>((bits & 0x807F) | ((117 + (bits >> 7 & 0xFF) % 5) << 7));
      return static_cast<uint8_t>(i % 2 == 0 ? v & 0xFF : v >> 8);
    }
    case fb::DType::F32: {
      const float f = kSyntheticAmplitude * unit(splitmix64(key ^ (i / 4)));
      uint8_t bytes[4];
      std::memcpy(bytes, &f, 4);
      return bytes[i % 4];
    }
    case fb::DType::F8_E4M3: {
      // S EEEE MMM with the top exponent bit cleared: |v| <= 1.875, never NaN (exponent 1111).
      return static_cast<uint8_t>(cache.get(key, i / 8) >> (8 * (i % 8))) & 0xBF;
    }
    case fb::DType::F8_E8M0: return static_cast<uint8_t>(120 + (cache.get(key, i / 8) >> (8 * (i % 8)) & 7));
    case fb::DType::I8:
    case fb::DType::U8: return static_cast<uint8_t>(cache.get(key, i / 8) >> (8 * (i % 8)));
    default: return 0;
  }
}

}  // namespace

uint64_t synthetic_key(uint64_t seed, const std::string& name) { return splitmix64(seed ^ hash_text(name)); }

void synthetic_bytes(fb::DType dtype, uint64_t key, uint64_t first, uint64_t count, uint8_t* out) {
  WordCache cache;
  for (uint64_t b = 0; b < count; ++b) out[b] = synthetic_byte(dtype, key, first + b, cache);
}

Result<LoadStats> fill_synthetic_weights(const fb::Program& p, const StoredLayout& layout, uint64_t seed,
                                         ByteSink& sink, const LoadOptions& options) {
  const uint64_t chunk_bytes = std::max<uint64_t>(options.chunk_bytes, 4096);
  struct Piece {
    uint32_t tensor;
    uint64_t first;  // byte of the tensor
  };
  std::vector<SinkChunk> chunks;
  std::vector<Piece> pieces;
  for (uint32_t t = 0; t < layout.offset.size(); ++t) {
    if (layout.offset[t] < 0) continue;
    for (uint64_t at = 0; at < layout.bytes[t]; at += chunk_bytes) {
      chunks.push_back({static_cast<uint64_t>(layout.offset[t]) + at, std::min(chunk_bytes, layout.bytes[t] - at)});
      pieces.push_back({t, at});
    }
  }
  std::vector<uint64_t> keys(layout.offset.size(), 0);
  for (uint32_t t = 0; t < layout.offset.size(); ++t)
    if (layout.offset[t] >= 0) keys[t] = synthetic_key(seed, p.weights()->Get(t)->name()->str());
  auto produce = [&](size_t i, uint8_t* buffer) -> Status {
    const Piece& piece = pieces[i];
    const fb::DType dtype = p.weights()->Get(piece.tensor)->dtype();
    synthetic_bytes(dtype, keys[piece.tensor], piece.first, chunks[i].bytes, buffer);
    return Status::ok();
  };
  LoadOptions chunked = options;
  chunked.chunk_bytes = chunk_bytes;
  return pump_chunks(chunks, produce, sink, chunked);
}

}  // namespace dsv41::gpu
