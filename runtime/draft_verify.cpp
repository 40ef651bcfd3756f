// runtime/draft_verify.cpp — verification rows, exact acceptance and prompt-lookup drafts (runtime/draft_verify.h).
#include "runtime/draft_verify.h"

#include "runtime/window_fit.h"

namespace dsv41 {

void append_verify_rows(PhaseRun& run, int64_t first_row, int32_t slot, int64_t position, int32_t pending,
                        const std::vector<int32_t>& drafts) {
  std::vector<int32_t> tokens{pending};
  tokens.insert(tokens.end(), drafts.begin(), drafts.end());
  write_sequence_rows(run, first_row, slot, position, tokens);
  for (size_t j = 0; j < tokens.size(); ++j)
    run.logits_rows.push_back(static_cast<int32_t>(first_row + static_cast<int64_t>(j)));
}

std::vector<int32_t> accept_drafts(const std::vector<std::vector<float>>& logits, const std::vector<int32_t>& drafts,
                                   int64_t first_position, const TokenChooser& choose) {
  std::vector<int32_t> chosen;
  for (size_t j = 0; j <= drafts.size() && j < logits.size(); ++j) {
    chosen.push_back(choose(logits[j], first_position + static_cast<int64_t>(j)));
    if (j == drafts.size() || drafts[j] != chosen.back()) break;  // a correction, or the bonus token
  }
  return chosen;
}

std::vector<int32_t> lookup_drafts(const std::vector<int32_t>& sequence, int64_t k) {
  const auto n = static_cast<int64_t>(sequence.size());
  for (int64_t ngram = 3; ngram >= 1; --ngram) {
    if (n <= ngram) continue;
    // Latest start s < n - ngram whose ngram equals the last one; its continuation is the proposal.
    for (int64_t s = n - ngram - 1; s >= 0; --s) {
      bool match = true;
      for (int64_t i = 0; i < ngram && match; ++i) match = sequence[s + i] == sequence[n - ngram + i];
      if (!match) continue;
      std::vector<int32_t> drafts;
      for (int64_t i = s + ngram; i < n && static_cast<int64_t>(drafts.size()) < k; ++i) drafts.push_back(sequence[i]);
      return drafts;
    }
  }
  return {};
}

}  // namespace dsv41
