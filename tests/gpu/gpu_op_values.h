// tests/gpu/gpu_op_values.h — the element-level pieces of input generation: the seeded random stream,
// typed loads and stores into byte buffers, random fills and distinct picks, each weight's random
// values, and the fp32 shape of a planned weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/kernel_contract.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41::gpu_test {

// splitmix64: fast, and the same stream everywhere for one seed.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  int64_t below(int64_t n);                 // uniform in [0, n), n > 0
  int64_t range(int64_t lo, int64_t hi);    // uniform in [lo, hi]
  float uniform(float lo, float hi);        // uniform in [lo, hi)

 private:
  uint64_t state_;
};

uint64_t mix_seed(uint64_t seed, uint64_t salt);

int64_t numel_of(const std::vector<int64_t>& shape);

// The fp32 shape a weight has once dequantized (runtime/cpu/weight_store.cpp): FP4 rows store two
// values a byte, so their logical columns are twice the stored ones.
std::vector<int64_t> fp32_shape(const PlannedTensor& t);

// Stores `value` as element i of a buffer of `dtype`.
void store(std::vector<uint8_t>& bytes, DType dtype, int64_t i, float value);
void store_int(std::vector<uint8_t>& bytes, int64_t i, int32_t v);
// Element i of a buffer of `dtype` (BF16 or F32) as fp32.
float load(const uint8_t* bytes, DType dtype, int64_t i);

// n elements of `dtype`, uniform in [lo, hi) (I32: zeros).
void fill_random(Rng& rng, std::vector<uint8_t>& bytes, DType dtype, int64_t n, float lo, float hi);

// A packed cache (common/cache_format.h) of shape [rows, row bytes] for the state argument `arg`
// ("ring", "cache", "index_cache"): every row random values in [-1, 1) packed in its role's format.
void fill_packed_rows(Rng& rng, std::vector<uint8_t>& bytes, const std::string& arg, const std::vector<int64_t>& shape);

// Up to `count` distinct values of [0, n), in random order.
std::vector<int64_t> distinct(Rng& rng, int64_t n, int64_t count);

// Random fp32 values for a weight: matrices scaled by 1/sqrt(columns) (so products stay O(1));
// norm vectors near 1; the SwiGLU gate/up matrices larger, so that the clamp at swiglu_limit acts.
std::vector<float> weight_values(Rng& rng, const Call& call, const std::string& arg, const std::vector<int64_t>& shape);

}  // namespace dsv41::gpu_test
