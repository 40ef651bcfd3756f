// runtime/cpu/weight_store.h — a rank's weights read from the original shards and dequantized to fp32 once, at load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/cpu/op_context.h"
#include "schemas/program_generated.h"

namespace dsv41::cpu {

struct LoadedWeight {
  std::string name;
  std::vector<int64_t> shape;  // the rank's logical shape: local_shape, with FP4's two values a stored byte
  std::vector<float> values;
};

class WeightStore {
 public:
  // Reads the program weights at `indices` (each a weight, never a scale) from the shards in
  // model_dir: the byte runs of the weight and, for FP8/FP4 encodings, of its scale tensor, each
  // checked against the shard file's size before reading; then dequantizes them.
  static Result<WeightStore> load(const fb::Program& program, const std::string& model_dir,
                                  const std::vector<int64_t>& indices);

  // The weight at a program index; data is nullptr (and shape empty) when it was not loaded.
  WeightView view(int64_t index) const;
  bool loaded(int64_t index) const { return index >= 0 && index < static_cast<int64_t>(slot_of_.size()) && slot_of_[index] >= 0; }
  size_t count() const { return weights_.size(); }
  uint64_t value_bytes() const;  // fp32 bytes held

 private:
  std::vector<int64_t> slot_of_;  // program weight index -> position in weights_, or -1
  std::vector<LoadedWeight> weights_;
};

}  // namespace dsv41::cpu
