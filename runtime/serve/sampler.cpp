// runtime/serve/sampler.cpp — slice candidates, the ordered merge, truncation (top_k, top_p, min_p) and keyed Gumbel-max.
#include "runtime/serve/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dsv41::serve {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// NaN sorts as -inf: it can never be chosen ahead of a number.
float clean(float x) { return x != x ? kNegInf : x; }

}  // namespace

bool candidate_before(const Candidate& a, const Candidate& b) {
  if (a.value != b.value) return a.value > b.value;
  // Padding (id -1) goes after every real id of equal value.
  if ((a.id < 0) != (b.id < 0)) return b.id < 0;
  return a.id < b.id;
}

double keyed_uniform(uint64_t seed, int64_t position, int32_t id) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ static_cast<uint64_t>(position));
  h = splitmix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(id)));
  return (static_cast<double>(h >> 11) + 0.5) * 0x1.0p-53;  // strictly inside (0, 1)
}

int64_t candidate_width(const SamplingParams& params, int64_t widest_slice) {
  if (params.temperature > 0 && params.top_k == 0) return widest_slice;
  const int64_t want = std::max<int64_t>({params.top_k, params.top_logprobs, 1});
  return std::min(want, widest_slice);
}

SliceCandidates slice_candidates(const float* logits, int32_t first_id, int64_t n, int64_t width) {
  SliceCandidates out;
  std::vector<Candidate> all(static_cast<size_t>(n));
  out.max = kNegInf;
  for (int64_t i = 0; i < n; ++i) {
    all[i] = {clean(logits[i]), static_cast<int32_t>(first_id + i)};
    out.max = std::max(out.max, all[i].value);
  }
  if (out.max != kNegInf)
    for (int64_t i = 0; i < n; ++i) out.sum_exp += std::exp(static_cast<double>(all[i].value) - out.max);
  const int64_t keep = std::min(width, n);
  std::partial_sort(all.begin(), all.begin() + keep, all.end(), candidate_before);
  out.best.assign(all.begin(), all.begin() + keep);
  out.best.resize(static_cast<size_t>(width), Candidate{kNegInf, -1});
  return out;
}

Sampled sample_merged(const std::vector<SliceCandidates>& slices, const SamplingParams& params, int64_t position) {
  std::vector<Candidate> merged;
  float max = kNegInf;
  for (const SliceCandidates& s : slices) {
    merged.insert(merged.end(), s.best.begin(), s.best.end());
    max = std::max(max, s.max);
  }
  std::sort(merged.begin(), merged.end(), candidate_before);
  while (!merged.empty() && merged.back().id < 0) merged.pop_back();
  Sampled out;
  if (merged.empty()) return out;
  double sum = 0;
  for (const SliceCandidates& s : slices)
    if (s.max != kNegInf) sum += s.sum_exp * std::exp(static_cast<double>(s.max) - max);
  const double log_norm = static_cast<double>(max) + std::log(sum);
  auto logprob = [&](float x) { return static_cast<float>(x - log_norm); };
  for (int i = 0; i < params.top_logprobs && i < static_cast<int>(merged.size()); ++i)
    out.top.emplace_back(merged[i].id, logprob(merged[i].value));

  size_t chosen = 0;
  if (params.temperature > 0) {
    size_t keep = merged.size();
    if (params.top_k > 0) keep = std::min(keep, static_cast<size_t>(params.top_k));
    // Probabilities of the kept candidates at this temperature, summed in candidate order.
    const double t = params.temperature, top = merged[0].value;
    std::vector<double> p(keep);
    double total = 0;
    for (size_t i = 0; i < keep; ++i) total += (p[i] = std::exp((merged[i].value - top) / t));
    size_t nucleus = keep;
    if (params.top_p < 1.0f) {
      double mass = 0;
      for (size_t i = 0; i < keep; ++i) {
        mass += p[i] / total;
        if (mass >= params.top_p) {
          nucleus = i + 1;
          break;
        }
      }
    }
    keep = nucleus;
    if (params.min_p > 0)
      while (keep > 1 && p[keep - 1] < params.min_p * p[0]) --keep;
    double best = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < keep; ++i) {
      if (merged[i].value == kNegInf) break;
      const double g = -std::log(-std::log(keyed_uniform(params.seed, position, merged[i].id)));
      const double score = merged[i].value / t + g;
      if (score > best) {  // ties keep the earlier candidate (higher value, then lower id)
        best = score;
        chosen = i;
      }
    }
  }
  out.id = merged[chosen].id;
  out.logprob = logprob(merged[chosen].value);
  return out;
}

Sampled sample_row(const float* logits, int64_t vocab, const SamplingParams& params, int64_t position,
                   const std::vector<int64_t>& slice_sizes) {
  const std::vector<int64_t> sizes = slice_sizes.empty() ? std::vector<int64_t>{vocab} : slice_sizes;
  const int64_t widest = *std::max_element(sizes.begin(), sizes.end());
  const int64_t width = candidate_width(params, widest);
  std::vector<SliceCandidates> slices;
  int64_t first = 0;
  for (int64_t n : sizes) {
    slices.push_back(slice_candidates(logits + first, static_cast<int32_t>(first), n, width));
    first += n;
  }
  return sample_merged(slices, params, position);
}

}  // namespace dsv41::serve
