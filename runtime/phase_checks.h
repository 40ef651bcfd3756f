// runtime/phase_checks.h — the checks every backend's session makes before running a phase: which phase, and its statics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"

namespace dsv41 {

// The phase called `name`, or nullptr.
const Phase* find_phase_in(const std::vector<Phase>& phases, const std::string& name);

// The index of `phase` in `phases`; refuses a phase that is not one of them (a caller bug made visible).
Result<size_t> index_of_phase(const std::vector<Phase>& phases, const Phase& phase);

// Refuses statics that are not [phase.rows, kStaticsFields], or an active row whose slot, position,
// token or first_row is outside its bound, naming the phase, the row, the value and the bound.
Status check_phase_statics(const Phase& phase, const std::vector<int32_t>& statics, int64_t slots, int64_t context,
                           int64_t vocab);

}  // namespace dsv41
