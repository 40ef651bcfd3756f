// compiler/plan/memory_ledger.cpp — memory per rank, decided at plan time so a plan that cannot fit is refused offline.
#include "compiler/plan/memory_ledger.h"

#include "common/weight_format.h"

namespace dsv41 {
std::string gib_text(uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30)); }

MemoryLedger build_ledger(const WeightPlan& plan, uint64_t state_per_slot, int slots, uint64_t activations,
                          uint64_t limit) {
  MemoryLedger m;
  // What the device allocates for weights: every planned stored tensor (a weight or its scale) in
  // its stored format, one allocation each on a kDeviceTensorAlignment boundary (the runtime's
  // weight loader, docs/kernels.md "Weights"). Host tables are mapped from the shards as they are.
  for (const PlannedTensor& t : plan.tensors) {
    if (t.host_resident) m.weights_host += t.bytes();
    else if (t.rule == SplitRule::Replicated) m.weights_replicated += device_tensor_bytes(t.bytes());
    else m.weights_split += device_tensor_bytes(t.bytes());
  }
  m.state_per_slot = state_per_slot;
  m.state = state_per_slot * slots;
  m.activations = activations;
  m.total = m.weights_replicated + m.weights_split + m.state + m.activations;
  m.limit = limit;
  return m;
}

void add_kernel_globals(MemoryLedger& m, uint64_t bytes) {
  m.kernel_globals = bytes;
  m.total += bytes;
  m.kernel_globals_known = true;
}

std::string ledger_text(const MemoryLedger& m) {
  std::string text;
  text += fmt::format("  weights, replicated  {:>12}\n", gib_text(m.weights_replicated));
  text += fmt::format("  weights, split       {:>12}\n", gib_text(m.weights_split));
  text += fmt::format("  state                {:>12}  ({} a slot)\n", gib_text(m.state), gib_text(m.state_per_slot));
  text += fmt::format("  activations          {:>12}\n", gib_text(m.activations));
  text += m.kernel_globals_known
              ? fmt::format("  kernel globals       {:>12}  ({} bytes: the kernels' __device__ variables)\n",
                            gib_text(m.kernel_globals), m.kernel_globals)
              : std::string("  kernel globals       not counted (known once the kernels are compiled; none with "
                            "--target none)\n");
  text += fmt::format("  device total         {:>12}", gib_text(m.total));
  text += m.limit ? fmt::format("  of {}\n", gib_text(m.limit)) : std::string("  (no limit checked)\n");
  if (m.weights_host)
    text += fmt::format("  host tables          {:>12}  (Engram: mapped read-only from the shards once per host, shared by "
                        "every rank process; not in device memory)\n  host rows a token    {:>12} bytes (copied to the "
                        "device each step)\n",
                        gib_text(m.weights_host), m.host_copy_per_row);
  return text;
}

Status check_fits(const MemoryLedger& m, const RankShare& share, const std::string& limit_source) {
  if (m.limit == 0 || m.total <= m.limit) return Status::ok();
  return Status::errorf("rank {} of world {}: needs {} of device memory, the limit is {} ({})\n{}", share.rank,
                        share.world, gib_text(m.total), gib_text(m.limit), limit_source, ledger_text(m));
}

}  // namespace dsv41
