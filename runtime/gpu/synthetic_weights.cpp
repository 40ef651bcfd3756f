// runtime/gpu/synthetic_weights.cpp — counter-based values per tensor (splitmix64 of name hash and index), chunked into the sink.
#include "runtime/gpu/synthetic_weights.h"

#include <algorithm>
#include <cstring>

#include "common/hashing.h"
#include "common/numeric_formats.h"

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

// Byte `i` of a tensor of `dtype` whose values draw from `key`; values of several bytes are built
// from their element index so that a chunk starting mid-element still agrees with its neighbours.
uint8_t synthetic_byte(fb::DType dtype, uint64_t key, uint64_t i) {
  switch (dtype) {
    case fb::DType::BF16: {
      const uint16_t v = f32_to_bf16(kSyntheticAmplitude * unit(splitmix64(key ^ (i / 2))));
      return static_cast<uint8_t>(i % 2 == 0 ? v & 0xFF : v >> 8);
    }
    case fb::DType::F32: {
      const float f = kSyntheticAmplitude * unit(splitmix64(key ^ (i / 4)));
      uint8_t bytes[4];
      std::memcpy(bytes, &f, 4);
      return bytes[i % 4];
    }
    case fb::DType::F8_E4M3: return f32_to_e4m3(2.0f * unit(splitmix64(key ^ i)));
    case fb::DType::F8_E8M0: return static_cast<uint8_t>(120 + splitmix64(key ^ i) % 8);
    case fb::DType::I8:
    case fb::DType::U8: return static_cast<uint8_t>(splitmix64(key ^ i));
    default: return 0;
  }
}

}  // namespace

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
    if (layout.offset[t] >= 0) keys[t] = splitmix64(seed ^ hash_text(p.weights()->Get(t)->name()->str()));
  auto produce = [&](size_t i, uint8_t* buffer) -> Status {
    const Piece& piece = pieces[i];
    const fb::DType dtype = p.weights()->Get(piece.tensor)->dtype();
    for (uint64_t b = 0; b < chunks[i].bytes; ++b) buffer[b] = synthetic_byte(dtype, keys[piece.tensor], piece.first + b);
    return Status::ok();
  };
  LoadOptions chunked = options;
  chunked.chunk_bytes = chunk_bytes;
  return pump_chunks(chunks, produce, sink, chunked);
}

}  // namespace dsv41::gpu
