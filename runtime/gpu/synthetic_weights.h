// runtime/gpu/synthetic_weights.h — `--synthetic-weights SEED`: the layout's stored tensors filled from a
// seed instead of the shards, valid for each stored dtype, so release shapes boot without their files.
#pragma once

#include <cstdint>

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

}  // namespace dsv41::gpu
