// compiler/kernels/kernel_plan.h — binds every call of a rank's phases to its kernel variant and launch, and
// checks every bound of every phase against the target (shared memory, grid, op-specific limits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/kernel_contract.h"
#include "common/program_calls.h"
#include "compiler/plan/targets.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41 {

struct PlannedVariant {
  Variant variant;
  int64_t threads = 0;        // block size (the same for every call of a variant)
  int64_t launches = 0;       // calls of the rank's phases that launch it
  int64_t max_dynamic_shared = 0;
};

// A phase that cannot launch on the target, with the first bound it breaks.
struct PhaseRefusal {
  size_t phase = 0;  // index in the rank's phases
  PhaseKind kind = PhaseKind::Decode;
  int64_t rows = 0;
  std::string message;  // "rank 2, phase prefill.n4096, call 57 (index_select): shared memory 245760 bytes ..."
};

struct KernelPlan {
  std::vector<PlannedVariant> variants;  // sorted by key
  std::vector<PhaseRefusal> refusals;    // phases that do not fit (their calls stay unbound)
};

// Binds calls in place (Call::launch) and collects the variants. A call that does not bind to its
// kernel's contract is an error; a phase that breaks a bound is a refusal the caller decides on.
// With target "none" (no arch), variants are keyed "@none" and shared memory is not checked.
Result<KernelPlan> plan_kernels(CallLists& calls, const WeightPlan& weights, const Target& target, int rank);

// The variant-key arch of a target ("none" for --target none).
std::string variant_arch(const Target& target);

}  // namespace dsv41
