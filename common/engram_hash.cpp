// common/engram_hash.cpp — Engram's prime layout, its check against engram_num_embeddings, and the rolling n-gram hash.
#include "common/engram_hash.h"

#include <numeric>
#include <set>

#include <fmt/format.h>

namespace dsv41 {
namespace {

bool is_prime(int64_t n) {
  if (n < 2) return false;
  for (int64_t d = 2; d * d <= n; ++d)
    if (n % d == 0) return false;
  return true;
}

// Mathematical modulo (NumPy's %): the result has the sign of the modulus.
int64_t floor_mod(int64_t x, int64_t m) {
  const int64_t r = x % m;
  return r < 0 ? r + m : r;
}

}  // namespace

int64_t EngramLayerHash::table_rows() const { return std::accumulate(primes.begin(), primes.end(), int64_t{0}); }

std::vector<std::vector<int64_t>> engram_primes(int64_t vocab_size, int64_t layers, int64_t max_n, int64_t heads) {
  std::set<int64_t> taken;
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(layers));
  for (auto& layer : out)
    for (int64_t n = 2; n <= max_n; ++n) {
      int64_t running = vocab_size - 1;
      for (int64_t h = 0; h < heads; ++h) {
        int64_t p = running + 1;
        while (!is_prime(p) || taken.count(p)) ++p;
        taken.insert(p);
        layer.push_back(p);
        running = p;
      }
    }
  return out;
}

Result<std::vector<EngramLayerHash>> engram_layer_hashes(const ModelConfig& c) {
  const auto layers = static_cast<int64_t>(c.engram_layer_ids.size());
  const auto primes = engram_primes(c.engram_vocab_size, layers, c.engram_max_ngram_size, c.engram_n_heads);
  std::vector<EngramLayerHash> out;
  for (int64_t i = 0; i < layers; ++i) {
    EngramLayerHash h;
    h.layer = c.engram_layer_ids[i];
    h.heads = c.engram_n_heads;
    h.primes = primes[i];
    h.offsets.resize(h.primes.size());
    std::exclusive_scan(h.primes.begin(), h.primes.end(), h.offsets.begin(), int64_t{0});
    if (h.table_rows() != c.engram_num_embeddings[i])
      return Status::errorf(
          "engram_num_embeddings[{}]: value {} for layer {}, but its {} hash primes above engram_vocab_size {} "
          "({}..{}) sum to {}",
          i, c.engram_num_embeddings[i], h.layer, h.primes.size(), c.engram_vocab_size, h.primes.front(),
          h.primes.back(), h.table_rows());
    DSV41_ASSIGN_OR_RETURN(h.multipliers,
                           engram_multipliers(h.layer, c.engram_compressed_vocab_size, c.engram_max_ngram_size));
    out.push_back(std::move(h));
  }
  return out;
}

void engram_rows(const EngramLayerHash& hash, int64_t pad, std::span<const int64_t> lookback,
                 std::span<const int64_t> ids, std::span<int64_t> rows) {
  const auto max_n = static_cast<int64_t>(hash.multipliers.size());
  const auto back = static_cast<int64_t>(lookback.size());
  const int64_t columns = hash.columns();
  DSV41_CHECK(back == max_n - 1);
  DSV41_CHECK(static_cast<int64_t>(rows.size()) == static_cast<int64_t>(ids.size()) * columns);
  for (int64_t t = 0; t < static_cast<int64_t>(ids.size()); ++t) {
    int64_t rolling = 0;
    bool blocked = false;
    for (int64_t s = 0; s < max_n; ++s) {
      // Position t − s of the ids, or lookback[back + t − s] before them.
      const int64_t at = t - s;
      const int64_t token = at >= 0 ? ids[at] : (back + at >= 0 ? lookback[back + at] : -1);
      blocked = blocked || token < 0;
      // Unsigned, so a product past 2^63 wraps as NumPy's int64 does (the multipliers' bound keeps
      // products of ids below the compressed vocabulary inside int64).
      rolling ^= static_cast<int64_t>(static_cast<uint64_t>(blocked ? pad : token) *
                                      static_cast<uint64_t>(hash.multipliers[s]));
      if (s == 0) continue;
      for (int64_t h = 0; h < hash.heads; ++h) {
        const int64_t col = (s - 1) * hash.heads + h;
        rows[t * columns + col] = floor_mod(rolling, hash.primes[col]) + hash.offsets[col];
      }
    }
  }
}

}  // namespace dsv41
