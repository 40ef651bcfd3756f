// tests/gpu/gpu_op_inputs.h — host side of the GPU op check: semantically valid random inputs for one
// planned call (docs/ops.md; tests/gpu/gpu_op_inputs.cpp) and the CPU reference run over exactly those
// bytes (tests/gpu/gpu_op_cpu.cpp). Comparing the outputs: tests/gpu/gpu_op_compare.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/kernel_contract.h"
#include "common/program_calls.h"
#include "common/status.h"
#include "compiler/memory_ledger.h"
#include "compiler/weight_plan.h"

namespace dsv41::gpu_test {

// Everything one planned call needs besides its own description.
struct CallSite {
  const CallLists* lists = nullptr;
  const Phase* phase = nullptr;
  const Call* call = nullptr;
  const WeightPlan* weights = nullptr;
  ServingSettings settings;
  int rank = 0, world = 1;
  // Compression ratio of each compressed cache (state buffer index), from the rank's compress and
  // index_select calls: a cache of capacity C and ratio r admits positions below C·r.
  std::map<int64_t, int64_t> cache_ratio;
};

// A weight of the rank's local shape in two forms: its stored bytes (what the GPU kernel reads: the
// pack's format, codes plus UE8M0 scales where the format has them) and those bytes dequantized
// by the CPU backend's own path (common/numeric_formats.h dequantize, as runtime/cpu/weight_store
// does at load): what the CPU op reads.
struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;  // logical (fp32) shape: FP4 holds two values a stored byte
  Encoding encoding = Encoding::Plain;
  DType dtype = DType::F32;      // the stored weight's dtype
  std::vector<uint8_t> stored;   // local share, row-major, as the weight plan's runs concatenate it
  std::vector<uint8_t> scales;   // its scale tensor's local share (empty when unscaled)
  std::vector<float> values;     // dequantized
};

// A state argument: `slots` copies of the buffer, `stride` bytes apart (slot 0 first).
struct StateLayout {
  const BufferDecl* decl = nullptr;
  int slots = 0;
  size_t stride = 0;
};

// The mutable bytes of a call: both backends start from one copy of it.
struct Image {
  std::vector<int32_t> statics;                      // [R, 4]
  std::map<int64_t, std::vector<uint8_t>> scratch;   // by phase buffer index (aliased arguments share one)
  std::map<int64_t, std::vector<uint8_t>> state;     // by state buffer index: slots × stride bytes
};

// A buffer the op writes, compared after both runs.
struct Output {
  std::string arg;  // argument name
  bool state = false;
  int64_t index = 0;  // phase buffer index or state buffer index
};

struct CallInputs {
  int64_t rows = 0;
  int slots = 0;  // state copies allocated (slot ids of the statics are below it)
  Image image;
  std::map<int64_t, StateLayout> state_layout;  // by state buffer index
  std::map<int64_t, std::unique_ptr<HostTensor>> weights;  // by weight index (Weight arguments)
  // WeightList arguments: entry e of the list points at one tensor of `pool` (a small set of
  // distinct random matrices shared modulo the pool size when the list is large).
  std::map<std::string, std::vector<const HostTensor*>> lists;
  std::vector<std::unique_ptr<HostTensor>> pool;
  // exchange_gather: every rank's block, rank-major (what the runtime's all-gather hands the kernel as x).
  std::vector<float> gathered;
  std::vector<Output> outputs;
  std::string description;  // sequences, slots, positions (for failure messages)
};

// Builds valid random inputs for `site` from `seed`: statics of 1-3 sequences (distinct slots,
// consecutive positions, a few inactive rows), positions keeping every cache index below its
// capacity, I32 inputs in range (expert ids, selections, candidate blocks), random state for every
// slot, weights of the local shape in their stored formats (random values quantized by the pack's
// encoder, so codes are valid and scales sane) and their CPU dequantization, outputs poisoned with 0xFF (shared_expert's accumulator and
// in-place outputs start random instead). A failure names what could not be built.
Result<CallInputs> make_inputs(const CallSite& site, uint64_t seed);

// Runs the CPU op of the call over `image` (modified in place).
Status run_cpu(const CallSite& site, const CallInputs& inputs, Image& image);

}  // namespace dsv41::gpu_test
