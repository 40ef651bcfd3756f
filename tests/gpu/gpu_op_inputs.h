// tests/gpu/gpu_op_inputs.h — host side of the GPU op check: semantically valid random inputs for one
// planned call (docs/ops.md), the CPU reference run over exactly those bytes, and the comparison of
// every buffer the op writes.
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

// The call's CallEnv, resolved against its rank's lists and weight plan (as compiler/kernel_plan.cpp does).
CallEnv call_env(const CallSite& site);

// An fp32 weight in the rank's local shape.
struct HostTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
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
// slot, fp32 weights of the local shape, outputs poisoned with 0xFF (shared_expert's accumulator and
// in-place outputs start random instead). A failure names what could not be built.
Result<CallInputs> make_inputs(const CallSite& site, uint64_t seed);

// Runs the CPU op of the call over `image` (modified in place).
Status run_cpu(const CallSite& site, const CallInputs& inputs, Image& image);

// Tolerances (docs/ops.md: products accumulate in fp32; act stores round to bf16):
//   BF16 output: |g − c| ≤ 2e-2·|c| + 1e-3·max|c|
//   F32 output:  |g − c| ≤ 1e-3·|c| + 1e-4·max|c|
//   I32 output (ids, selections, candidates): identical
// max|c| is over the whole compared buffer; NaN matches only NaN.
constexpr double kBf16Rel = 2e-2, kBf16Abs = 1e-3, kF32Rel = 1e-3, kF32Abs = 1e-4;

// Compares one output; "" when it matches, else a report of the first mismatches (element, slot
// when `slot_stride` (bytes between slot copies of a state buffer) is given, row and column).
std::string compare_output(const std::string& what, DType dtype, const std::vector<int64_t>& shape,
                           const uint8_t* cpu, const uint8_t* gpu, size_t bytes, size_t slot_stride = 0);

// The bytes of an output in an image.
const std::vector<uint8_t>& output_bytes(const Image& image, const Output& output);
// Its dtype and shape (the state's per-slot shape).
DType output_dtype(const CallSite& site, const Output& output);
std::vector<int64_t> output_shape(const CallSite& site, const CallInputs& inputs, const Output& output);

// The weight elements a call reads (to prefer cheap representatives).
int64_t call_weight_elements(const Call& call, const WeightPlan& weights);

}  // namespace dsv41::gpu_test
