// runtime/phase_checks.cpp — phase lookup and statics bounds, shared by the CPU and CUDA sessions.
#include "runtime/phase_checks.h"

#include "runtime/cpu/op_context.h"

namespace dsv41 {

const Phase* find_phase_in(const std::vector<Phase>& phases, const std::string& name) {
  for (const Phase& phase : phases)
    if (phase.name == name) return &phase;
  return nullptr;
}

Result<size_t> index_of_phase(const std::vector<Phase>& phases, const Phase& phase) {
  if (!phases.empty() && &phase >= phases.data() && &phase < phases.data() + phases.size())
    return static_cast<size_t>(&phase - phases.data());
  return Status::errorf("phase {}: not one of this session's phases (pass a phase from phases() or find_phase())",
                        phase.name);
}

Status check_phase_statics(const Phase& phase, const std::vector<int32_t>& statics, int64_t slots, int64_t context,
                           int64_t vocab) {
  if (statics.size() != static_cast<size_t>(phase.rows) * kStaticsFields)
    return Status::errorf("phase {}: statics hold {} values, expected {} rows x {} fields = {}", phase.name,
                          statics.size(), phase.rows, static_cast<int>(kStaticsFields), phase.rows * kStaticsFields);
  const cpu::StaticsView view{statics.data(), phase.rows};
  for (int64_t row = 0; row < phase.rows; ++row) {
    if (!view.active(row)) continue;
    if (view.slot(row) >= slots)
      return Status::errorf("phase {}: statics row {}: slot {} outside 0..{} (settings slots {})", phase.name, row,
                            view.slot(row), slots - 1, slots);
    if (view.position(row) < 0 || view.position(row) >= context)
      return Status::errorf("phase {}: statics row {}: position {} outside 0..{} (settings context {})", phase.name,
                            row, view.position(row), context - 1, context);
    if (view.token(row) < 0 || view.token(row) >= vocab)
      return Status::errorf("phase {}: statics row {}: token {} outside 0..{} (vocab_size {})", phase.name, row,
                            view.token(row), vocab - 1, vocab);
    if (view.first_row(row) < 0 || view.first_row(row) > row)
      return Status::errorf("phase {}: statics row {}: first_row {} outside 0..{}", phase.name, row,
                            view.first_row(row), row);
  }
  return Status::ok();
}

}  // namespace dsv41
