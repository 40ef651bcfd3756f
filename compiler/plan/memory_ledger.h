// compiler/plan/memory_ledger.h — the device memory one rank needs: weights by rule, per-slot state, activations.
#pragma once

#include <cstdint>
#include <string>

#include "common/rank_share.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41 {

struct MemoryLedger {
  // Device bytes of the weights in their stored formats (weights and scales), each tensor rounded up
  // to kDeviceTensorAlignment; host tables in their stored bytes.
  uint64_t weights_replicated = 0, weights_split = 0, weights_host = 0;
  // Stored bytes of host-table rows one phase row reads (Engram: every layer's columns, codes and
  // scales), what a GPU backend copies per token from the host mapping to the device.
  uint64_t host_copy_per_row = 0;
  uint64_t state_per_slot = 0, state = 0;
  uint64_t activations = 0;
  uint64_t total = 0;  // device bytes: weights not on the host + state + activations + kernel globals
  uint64_t limit = 0;  // 0: unchecked
  // The module-scope __device__ variables of the rank's kernels (split partials, counters): the driver
  // allocates them when the rank's session loads its modules, one load per distinct variant. Known
  // only once the kernels are compiled (add_kernel_globals); 0 and unknown with --target none.
  uint64_t kernel_globals = 0;
  bool kernel_globals_known = false;
};

// `state_per_slot` and `activations` come from the emitted call lists: the state layout and the
// largest phase arena (plus its statics block), so the ledger is exact.
MemoryLedger build_ledger(const WeightPlan& plan, uint64_t state_per_slot, int slots, uint64_t activations,
                          uint64_t limit);
// Records the compiled kernels' module globals (the sum of their KernelResources::module_globals) and
// adds them to the total; called once, after compiling.
void add_kernel_globals(MemoryLedger& ledger, uint64_t bytes);
// A readable multi-line table of the ledger.
std::string ledger_text(const MemoryLedger& ledger);
// Refuses a rank whose total exceeds its limit, printing the ledger.
Status check_fits(const MemoryLedger& ledger, const RankShare& share, const std::string& limit_source);

std::string gib_text(uint64_t bytes);

}  // namespace dsv41
