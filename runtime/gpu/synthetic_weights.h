// runtime/gpu/synthetic_weights.h — `--synthetic-weights SEED`: the layout's stored tensors filled from a
// seed instead of the shards, valid for each stored dtype, so release shapes boot without their files.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/gpu/weight_loader.h"

namespace dsv41::gpu {

// Every tensor of `layout` gets bytes that depend only on `seed`, the tensor's name and the byte's
// place (so any chunking and thread count give the same region): BF16 values below 2^-5 in
// magnitude, F32 uniform in [-kSyntheticAmplitude, kSyntheticAmplitude]; FP8 e4m3 codes of at most
// 1.875 in magnitude (never NaN); packed FP4 (I8/U8) any byte (e2m1 has no NaN); UE8M0 scales
// 2^-7 .. 2^0; other dtypes zero.
Result<LoadStats> fill_synthetic_weights(const fb::Program& program, const StoredLayout& layout, uint64_t seed,
                                         ByteSink& sink, const LoadOptions& options);

constexpr float kSyntheticAmplitude = 0.05f;

// The key of a tensor's values: what fill_synthetic_weights draws the tensor `name` from.
uint64_t synthetic_key(uint64_t seed, const std::string& name);
// Bytes [first, first + count) of a tensor of `dtype` drawn from `key`, exactly as
// fill_synthetic_weights writes them: the Engram host tables use it to make only the rows a step reads.
void synthetic_bytes(fb::DType dtype, uint64_t key, uint64_t first, uint64_t count, uint8_t* out);

}  // namespace dsv41::gpu
