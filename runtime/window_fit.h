// runtime/window_fit.h — the planned phase a round's rows take, its run with every row padding, and a sequence's rows.
//
// Decode windows, prefill segments and Draft phases are planned in a few sizes; a round's rows take
// the smallest that holds them and the rows left over are padding, which every op skips. Generation,
// the serve planner and the DSpark drafter all build their runs this way.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/round_plan.h"

namespace dsv41 {

// The smallest of `sizes` (planned phase rows, in any order) that holds `rows`; 0 when none does.
int64_t smallest_holding(const std::vector<int64_t>& sizes, int64_t rows);

// The largest of `sizes`; 0 when there is none.
int64_t largest_size(const std::vector<int64_t>& sizes);

// A run of `phase` ("decode.r4") whose `rows` rows are all padding: slot -1 (the ops skip the row and
// write nothing for it), token, position and first row 0. Callers then write the rows they use
// (write_sequence_rows, append_verify_rows).
PhaseRun padded_run(std::string phase, int64_t rows);

// Writes one sequence's rows into `run` from phase row `first_row`: tokens[i] at `position` + i, all of
// `slot`, each naming `first_row` as its sequence's first row. Lists no logits rows.
void write_sequence_rows(PhaseRun& run, int64_t first_row, int32_t slot, int64_t position,
                         std::span<const int32_t> tokens);

}  // namespace dsv41
