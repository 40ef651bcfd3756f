// runtime/serve/sampler.h — the keyed exact sampler: per vocabulary slice candidates, a (value, id) merge, Gumbel-max keyed by (seed, position, id).
//
// A token depends only on the logits, the parameters, the seed and the position: never on the batch,
// the stream mode or the world. The uniform of each candidate comes from a counter-based generator
// keyed by (seed, position, token id), and every sum runs in candidate order, so the bits are the same
// however the vocabulary is split into slices.
#pragma once

#include <cstdint>
#include <vector>

namespace dsv41::serve {

struct SamplingParams {
  float temperature = 1.0f;  // 0: greedy (argmax, ties to the lower id)
  int top_k = 0;             // 0: the whole vocabulary
  float top_p = 1.0f;        // nucleus mass kept, in (0, 1]
  float min_p = 0.0f;        // keep tokens whose probability is at least min_p times the largest
  uint64_t seed = 0;
  int top_logprobs = 0;      // alternatives reported with each token (0..20)
};

struct Candidate {
  float value;  // the raw logit
  int32_t id;
};

// Candidates ordered by value (descending) then id (ascending): the one order every merge uses.
bool candidate_before(const Candidate& a, const Candidate& b);

// What one slice [first_id, first_id + n) contributes: its best `width` candidates in candidate
// order (padded with -inf and id -1 to `width`, so every rank sends the same size), and the terms of
// its log-sum-exp (for logprobs over the whole vocabulary).
struct SliceCandidates {
  std::vector<Candidate> best;
  float max = 0.0f;
  double sum_exp = 0.0;  // Σ exp(x - max) over the slice
};
SliceCandidates slice_candidates(const float* logits, int32_t first_id, int64_t n, int64_t width);

// How many candidates each slice contributes for these parameters: top_k, or the widest slice.
int64_t candidate_width(const SamplingParams& params, int64_t widest_slice);

struct Sampled {
  int32_t id = -1;
  float logprob = 0.0f;  // log softmax over the whole vocabulary
  std::vector<std::pair<int32_t, float>> top;  // top_logprobs alternatives (id, logprob), best first
};

// Merges the slices (in slice order) and picks the token for `position`.
Sampled sample_merged(const std::vector<SliceCandidates>& slices, const SamplingParams& params, int64_t position);

// The same over a full row, split into slices of `slice_sizes` (empty: one slice of the whole row).
Sampled sample_row(const float* logits, int64_t vocab, const SamplingParams& params, int64_t position,
                   const std::vector<int64_t>& slice_sizes = {});

// The uniform in (0, 1) keyed by (seed, position, id): splitmix64 over the three mixed together.
double keyed_uniform(uint64_t seed, int64_t position, int32_t id);

}  // namespace dsv41::serve
