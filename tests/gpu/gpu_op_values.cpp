// tests/gpu/gpu_op_values.cpp — the seeded random stream, typed element access, random fills,
// distinct picks and weight values for the generated inputs.
#include "tests/gpu/gpu_op_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

#include "common/cache_format.h"
#include "common/numeric_formats.h"

namespace dsv41::gpu_test {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The fp32 shape a weight has once dequantized (runtime/cpu/weight_store.cpp): FP4 rows store two
// values a byte, so their logical columns are twice the stored ones.
std::vector<int64_t> fp32_shape(const PlannedTensor& t) {
  std::vector<int64_t> shape = t.local_shape;
  if (t.encoding == Encoding::FP4Rows && !shape.empty()) shape.back() *= 2;
  return shape;
}

// Stores `value` as element i of a buffer of `dtype`.
void store(std::vector<uint8_t>& bytes, DType dtype, int64_t i, float value) {
  switch (dtype) {
    case DType::BF16: {
      const uint16_t b = f32_to_bf16(value);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
      break;
    }
    case DType::I32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(bytes.data() + 4 * i, &v, 4);
      break;
    }
    default: std::memcpy(bytes.data() + 4 * i, &value, 4);
  }
}

void store_int(std::vector<uint8_t>& bytes, int64_t i, int32_t v) { std::memcpy(bytes.data() + 4 * i, &v, 4); }

float load(const uint8_t* bytes, DType dtype, int64_t i) {
  if (dtype == DType::BF16) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    return bf16_to_f32(b);
  }
  float v;
  std::memcpy(&v, bytes + 4 * i, 4);
  return v;
}

void fill_random(Rng& rng, std::vector<uint8_t>& bytes, DType dtype, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) store(bytes, dtype, i, dtype == DType::I32 ? 0.0f : rng.uniform(lo, hi));
}

void fill_packed_rows(Rng& rng, std::vector<uint8_t>& bytes, const std::string& arg, const std::vector<int64_t>& shape) {
  const std::optional<CacheRole> role = cache_role_of_arg(arg);
  DSV41_CHECK(role && shape.size() == 2);
  const int64_t dim = packed_row_dim(*role, shape[1]);
  DSV41_CHECK(dim > 0);
  std::vector<float> values(static_cast<size_t>(dim));
  for (int64_t r = 0; r < shape[0]; ++r) {
    for (float& v : values) v = rng.uniform(-1.0f, 1.0f);
    pack_cache_row(*role, values.data(), dim, bytes.data() + r * shape[1]);
  }
}

// Up to `count` distinct values of [0, n), in random order.
std::vector<int64_t> distinct(Rng& rng, int64_t n, int64_t count) {
  count = std::min(count, n);
  std::vector<int64_t> out;
  if (count <= 0) return out;
  if (n <= 4 * count || n <= 4096) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), int64_t{0});
    for (int64_t i = 0; i < count; ++i) std::swap(all[i], all[i + rng.below(n - i)]);
    all.resize(static_cast<size_t>(count));
    return all;
  }
  std::set<int64_t> seen;
  while (static_cast<int64_t>(out.size()) < count) {
    const int64_t v = rng.below(n);
    if (seen.insert(v).second) out.push_back(v);
  }
  return out;
}

// Random fp32 values for a weight: matrices scaled by 1/sqrt(columns) (so products stay O(1));
// norm vectors near 1; the SwiGLU gate/up matrices larger, so that the clamp at swiglu_limit acts.
std::vector<float> weight_values(Rng& rng, const Call& call, const std::string& arg, const std::vector<int64_t>& shape) {
  const int64_t n = numel_of(shape);
  std::vector<float> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (shape.size() <= 1) {
    const bool norm = arg.find("norm") != std::string::npos || call.op.rfind("rmsnorm", 0) == 0 || call.op == "hc_collapse_norm";
    for (float& x : v) x = norm ? rng.uniform(0.5f, 1.5f) : rng.uniform(-1.0f, 1.0f);
    return v;
  }
  const int64_t cols = std::max<int64_t>(shape.back(), 1);
  float scale = 1.0f / std::sqrt(static_cast<float>(cols));
  if ((call.op == "moe_experts" || call.op == "shared_expert") && (arg == "w1" || arg == "w3")) scale *= 20.0f;
  for (float& x : v) x = rng.uniform(-scale, scale);
  return v;
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
int64_t Rng::below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
int64_t Rng::range(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
float Rng::uniform(float lo, float hi) {
  const float u = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return lo + (hi - lo) * u;
}

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  Rng r(seed ^ (salt * 0xD1B54A32D192ED03ull));
  return r.next();
}

}  // namespace dsv41::gpu_test
