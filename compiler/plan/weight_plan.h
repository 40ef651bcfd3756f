// compiler/plan/weight_plan.h — per tensor, the split rule and the byte runs one rank reads from the original shards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.h"
#include "common/pack_index.h"
#include "common/rank_share.h"
#include "common/tensor_inventory.h"

namespace dsv41 {

// `count` runs of `length` bytes, `stride` apart, from absolute file `offset` of shard `shard`.
struct ByteRun {
  int shard = 0;
  uint64_t offset = 0, length = 0, stride = 0, count = 1;
  uint64_t bytes() const { return length * count; }
};

// One stored tensor (a weight or its scale) as a rank reads it.
struct PlannedTensor {
  std::string name;
  DType dtype = DType::BF16;
  std::vector<int64_t> stored_shape;  // the whole tensor in the pack
  std::vector<int64_t> local_shape;   // the rank's part
  SplitRule rule = SplitRule::Replicated;
  Encoding encoding = Encoding::Plain;
  bool host_resident = false;
  std::vector<ByteRun> runs;
  uint64_t bytes() const;
};

struct WeightPlan {
  std::vector<PlannedTensor> tensors;
  uint64_t replicated_bytes = 0;  // device-resident, same on every rank
  uint64_t split_bytes = 0;       // device-resident, this rank's part
  uint64_t host_bytes = 0;        // host-resident (Engram tables)
  size_t ignored_tensors = 0;     // pack tensors on the ignore list
  uint64_t total_bytes() const { return replicated_bytes + split_bytes + host_bytes; }
  size_t run_count() const;
};

// One stored tensor of the pack matched to its inventory entry (rank-independent).
struct MatchedTensor {
  SplitRule rule;
  ShareAxis axis;
  int64_t unit;
  bool host_resident;
  Encoding encoding;
  size_t entry;   // index into PackIndex::tensors()
  bool is_scale;  // the scale of the weight before it
};

struct PackMatch {
  std::vector<MatchedTensor> tensors;  // inventory order: each weight, then its scale
  size_t ignored_tensors = 0;
};

// Checks the pack holds exactly the tensors the config needs (each in an admitted encoding and
// shape; anything else ignored by name or refused). Done once per model.
Result<PackMatch> match_pack(const ModelConfig& config, const PackIndex& pack);
// The rank's byte runs for every matched tensor.
WeightPlan slice_weights(const PackMatch& match, const PackIndex& pack, const RankShare& share);

// Checks the pack holds exactly the tensors the config needs (each in an admitted encoding and
// shape; anything else ignored by name or refused) and plans the rank's byte runs.
Result<WeightPlan> plan_weights(const ModelConfig& config, const PackIndex& pack, const RankShare& share);

}  // namespace dsv41
