// compiler/synth/synth_values.h — deterministic synthetic weight values that keep a deep forward pass well scaled.
#pragma once

#include <cstdint>

#include "common/model_config.h"
#include "common/tensor_inventory.h"

namespace dsv41 {

// The values of one synthetic tensor: a pure function of (seed, tensor name, element index), so they do
// not depend on sharding, the storage format or the order tensors are written in.
class SynthValues {
 public:
  SynthValues(const ExpectedTensor& tensor, uint64_t seed);
  // Elements [first, first + count) in row-major order of the logical shape.
  void fill(int64_t first, int64_t count, float* out) const;

 private:
  uint64_t key_ = 0;
  float center_ = 0.0f, std_ = 0.0f;
  int64_t comb_first_ = -1, comb_side_ = 0;  // hc_*_base: where the comb matrix starts and its side
};

}  // namespace dsv41
