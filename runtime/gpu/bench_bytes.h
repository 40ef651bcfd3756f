// runtime/gpu/bench_bytes.h — the weight bytes one step of a phase reads, from the program's calls and
// the step's routing: what `dsv41-rt bench` divides by the step time to get GB/s.
//
// Counted once per step: every weight a call names (with its UE8M0 scale, as stored), except the
// embedding table, of which only the rows of the step's distinct tokens are read, and the routed
// experts, of which only those the step's rows select are read (per moe_experts call: the distinct
// ids among its active rows, each expert's w1, w3 and w2 with their scales). Caches, activations and
// the weight tables are not weights and are not counted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"
#include "runtime/gpu/device_layout.h"

namespace dsv41::gpu {

// One moe_experts call: where its routing is and what each expert costs.
struct ExpertCall {
  size_t call = 0;                    // index in the phase
  std::string ids_buffer;             // the I32 [rows, topk] scratch buffer its router wrote
  int64_t topk = 0;
  std::vector<uint64_t> expert_bytes; // per expert id: w1 + w3 + w2 with scales, stored
};

struct PhaseWeightBytes {
  uint64_t dense = 0;          // every other weight the calls name, each once, whole
  uint64_t embed_row = 0;      // one row of the embedding table (0: no embed call)
  int64_t embed_rows = 0;      // the table's rows on this rank
  std::vector<ExpertCall> experts;
};

// From the calls of `phase`, the sizes of `layout` (plan_device_layout) and the program's local shapes
// (the embedding table's rows). Refuses a call whose
// weight or expert list names a tensor the layout does not hold, or a moe_experts call whose ids are
// not an I32 [rows, topk] buffer.
Result<PhaseWeightBytes> phase_weight_bytes(const fb::Program& program, const Phase& phase, const DeviceLayout& layout);

// Weight `index` named by call #`call` of `phase` as stored on the device, with its UE8M0 scale; refuses a
// tensor the layout does not hold, naming the call.
Result<uint64_t> stored_bytes(const DeviceLayout& layout, int64_t index, const Phase& phase, size_t call);

struct StepBytes {
  uint64_t dense = 0, embed = 0, experts = 0;
  int64_t experts_read = 0;   // Σ over moe_experts calls of the distinct experts selected
  std::vector<uint64_t> routed;  // per moe_experts call (PhaseWeightBytes::experts' order): its selected experts' bytes
  uint64_t total() const { return dense + embed + experts; }
};

// The bytes of one step: `distinct_tokens` embedding rows (at most the table's), and for moe_experts
// call k the distinct ids among `ids[k]` (the active rows' selections, any order; an id outside the
// experts is refused, naming the call and the id).
Result<StepBytes> step_bytes(const PhaseWeightBytes& weights, int64_t distinct_tokens,
                             const std::vector<std::vector<int32_t>>& ids);

}  // namespace dsv41::gpu
