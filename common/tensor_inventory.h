// common/tensor_inventory.h — every tensor a config's model uses: name, logical shape, storage kind and split rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "common/model_config.h"

namespace dsv41 {

// How a tensor may be stored. The release format quantizes linears; the bf16 format stores them as BF16.
enum class StorageKind : uint8_t {
  Plain,         // always `plain_dtype` (BF16 norms, F32 HC tensors, ...)
  Linear,        // BF16, or F8_E4M3 + UE8M0 scale per 32x32 tile
  ExpertLinear,  // BF16, or FP4 e2m1 packed in I8 [out, in/2] + UE8M0 scale per 32 inputs
  EmbedRows,     // BF16, or F8_E4M3 + UE8M0 scale per 32 values of a row (Engram tables)
};

// The concrete encoding a pack uses for one tensor.
enum class Encoding : uint8_t { Plain, BF16, FP8Block, FP4Rows, FP8Rows };

enum class SplitRule : uint8_t {
  Replicated,  // every rank reads all of it
  OutputRows,  // rows split: the rank's heads, expert columns or vocabulary rows
  InputCols,   // columns split: strided runs, one per row
  GroupPart,   // whole output groups (wo_a): rows of the rank's groups
  HeadSlice,   // per-head values (attn_sink)
};

enum class ShareAxis : uint8_t { None, Heads, Groups, ExpertCols, Vocab };

struct ExpectedTensor {
  std::string name;            // the weight's name; its scale is `scale_name(name)`
  std::vector<int64_t> shape;  // logical shape: [out, in] for matrices
  StorageKind storage = StorageKind::Plain;
  DType plain_dtype = DType::BF16;
  SplitRule rule = SplitRule::Replicated;
  ShareAxis axis = ShareAxis::None;
  int64_t unit = 1;            // rows (or columns) per share unit: head_dim per head, o_lora per group
  bool host_resident = false;  // Engram tables: too large for device memory, read from host memory
};

// A stored tensor of one encoding: the weight and, for quantized encodings, its scale.
struct StoredForm {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

std::vector<ExpectedTensor> expected_tensors(const ModelConfig& config);
// "a.b.weight" -> "a.b.scale".
std::string scale_name(const std::string& weight_name);
// Tensors a text-serving plan skips: vision.*, aligner.*, image_*, *.bias_vl.
bool is_ignored_tensor(std::string_view name);
// Encodings a storage kind admits, in preference order (bf16 first).
std::vector<Encoding> admitted_encodings(StorageKind storage);
// The weight (and scale) a tensor is stored as under an encoding.
std::vector<StoredForm> stored_forms(const ExpectedTensor& tensor, Encoding encoding);
std::string_view encoding_name(Encoding encoding);
std::string_view split_rule_name(SplitRule rule);

}  // namespace dsv41
