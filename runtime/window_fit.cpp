// runtime/window_fit.cpp — planned-size fitting, padded runs and a sequence's rows (runtime/window_fit.h).
#include "runtime/window_fit.h"

#include <algorithm>
#include <utility>

#include "common/call_list.h"
#include "common/status.h"

namespace dsv41 {

int64_t smallest_holding(const std::vector<int64_t>& sizes, int64_t rows) {
  int64_t best = 0;
  for (int64_t s : sizes)
    if (s >= rows && (best == 0 || s < best)) best = s;
  return best;
}

int64_t largest_size(const std::vector<int64_t>& sizes) {
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

PhaseRun padded_run(std::string phase, int64_t rows) {
  DSV41_CHECK(rows > 0);
  PhaseRun run{std::move(phase), std::vector<int32_t>(static_cast<size_t>(rows * kStaticsFields), 0), {}};
  for (int64_t r = 0; r < rows; ++r) run.statics[static_cast<size_t>(r * kStaticsFields + kStaticSlot)] = -1;
  return run;
}

void write_sequence_rows(PhaseRun& run, int64_t first_row, int32_t slot, int64_t position,
                         std::span<const int32_t> tokens) {
  const auto n = static_cast<int64_t>(tokens.size());
  DSV41_CHECK(first_row >= 0 && (first_row + n) * kStaticsFields <= static_cast<int64_t>(run.statics.size()));
  for (int64_t j = 0; j < n; ++j) {
    int32_t* row = run.statics.data() + (first_row + j) * kStaticsFields;
    row[kStaticToken] = tokens[static_cast<size_t>(j)];
    row[kStaticSlot] = slot;
    row[kStaticPosition] = static_cast<int32_t>(position + j);
    row[kStaticFirstRow] = static_cast<int32_t>(first_row);
  }
}

}  // namespace dsv41
