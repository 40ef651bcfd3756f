// tests/draft/oracle_drafter.h — a test drafter that knows serial decoding's output and drafts it with planted mistakes, so rounds keep all, some or none of their drafts.
#pragma once

#include <algorithm>
#include <vector>

#include "runtime/draft_verify.h"

namespace dsv41::test {

// Drafts the continuation of whichever of `serial` (whole sequences: prompt then serial decoding's
// tokens) the sequence is a prefix of; when the sequence's length is not a multiple of 3, one draft
// (index length mod drafts) is wrong. Nothing when the sequence is none of them.
inline Drafter oracle_drafter(std::vector<std::vector<int32_t>> serial, int32_t vocab) {
  return [serial = std::move(serial), vocab](const std::vector<int32_t>& sequence, int64_t k) {
    for (const auto& full : serial) {
      if (full.size() < sequence.size() || !std::equal(sequence.begin(), sequence.end(), full.begin())) continue;
      const size_t end = std::min(full.size(), sequence.size() + static_cast<size_t>(k));
      std::vector<int32_t> drafts(full.begin() + static_cast<std::ptrdiff_t>(sequence.size()),
                                  full.begin() + static_cast<std::ptrdiff_t>(end));
      if (sequence.size() % 3 != 0 && !drafts.empty()) {
        int32_t& wrong = drafts[sequence.size() % drafts.size()];
        wrong = (wrong + 1) % vocab;
      }
      return drafts;
    }
    return std::vector<int32_t>{};
  };
}

}  // namespace dsv41::test
