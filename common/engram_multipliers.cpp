// common/engram_multipliers.cpp — Engram's hash multipliers as constants, with the NumPy draw that derives them.
#include <array>

#include <fmt/format.h>

#include "common/engram_hash.h"

namespace dsv41 {
namespace {

struct KnownDraw {
  int64_t layer, compressed_vocab;
  std::array<int64_t, 4> multipliers;  // max_n = 4
};

// Derived once with NumPy 1.24 (Debian python3-numpy), as the official Engram module does it:
//   import numpy as np
//   half = (np.iinfo(np.int64).max // compressed_vocab) // 2
//   v = np.random.default_rng(10007 * layer).integers(0, half, size=(4,), dtype=np.int64)
//   multipliers = 2 * v + 1
// Odd, and below 2^63 / compressed_vocab, so token·multiplier never leaves int64.
// Release (compressed vocabulary 99,092; half = 46,539,438,283,891): layers 1 and 14.
// fixtures/dsv41-tiny-engram (its tokenizer's map has 1,070 ids; half = 4,309,986,933,109,708): layers 1 and 2.
constexpr KnownDraw kKnown[] = {
    {1, 99092, {76632096046245, 4839876093313, 35959672319349, 73987337458391}},
    {14, 99092, {67716810739261, 51510806800915, 30921347202721, 82619226485591}},
    {1, 1070, {7096848281695919, 448217758727685, 3330201728475667, 6851918919090677}},
    {2, 1070, {7085306720124099, 3435603475959921, 2097359559796635, 6614581028880777}},
};

}  // namespace

Result<std::vector<int64_t>> engram_multipliers(int64_t layer, int64_t compressed_vocab, int64_t max_n) {
  for (const KnownDraw& k : kKnown)
    if (k.layer == layer && k.compressed_vocab == compressed_vocab &&
        max_n == static_cast<int64_t>(k.multipliers.size()))
      return std::vector<int64_t>(k.multipliers.begin(), k.multipliers.end());
  return Status::errorf(
      "Engram layer {}: no multipliers known for engram_compressed_vocab_size {} and engram_max_ngram_size {} "
      "(common/engram_multipliers.cpp lists the NumPy draws; add this one with the command it documents)",
      layer, compressed_vocab, max_n);
}

}  // namespace dsv41
