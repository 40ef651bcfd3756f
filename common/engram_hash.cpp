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

Result<EngramHashCall> engram_hash_call(const Call& call) {
  EngramHashCall h;
  const auto constant = [&](const char* name, int64_t lo, int64_t hi) -> Result<int64_t> {
    const int64_t v = call.constant(name);
    if (v < lo || v > hi)
      return Status::errorf("op {}: constant {} is {}, expected {} .. {}", call.op, name, v, lo, hi);
    return v;
  };
  DSV41_ASSIGN_OR_RETURN(h.layers, constant("layers", 1, 8));
  DSV41_ASSIGN_OR_RETURN(h.max_n, constant("max_n", 2, 8));
  DSV41_ASSIGN_OR_RETURN(h.heads, constant("heads", 1, 64));
  DSV41_ASSIGN_OR_RETURN(h.window, constant("window", h.max_n - 1, 1 << 24));
  const std::vector<int64_t>& map = call.arg("token_map").ints;
  if (map.empty())
    return Status::errorf("op {}: the program holds no Engram token map (planned from a folder without "
                          "tokenizer.json); re-plan it from the model folder with its tokenizer.json",
                          call.op);
  const std::vector<int64_t>&multipliers = call.arg("multipliers").ints, &primes = call.arg("primes").ints,
                          &offsets = call.arg("offsets").ints;
  const int64_t columns = h.columns(), width = h.width();
  if (static_cast<int64_t>(multipliers.size()) != h.layers * h.max_n || static_cast<int64_t>(primes.size()) != width ||
      static_cast<int64_t>(offsets.size()) != width)
    return Status::errorf("op {}: {} multipliers, {} primes and {} offsets, expected {}, {} and {}", call.op,
                          multipliers.size(), primes.size(), offsets.size(), h.layers * h.max_n, width, width);
  for (int64_t p : primes)
    if (p < 1) return Status::errorf("op {}: a prime {} below 1", call.op, p);
  h.hashes.resize(static_cast<size_t>(h.layers));
  for (int64_t l = 0; l < h.layers; ++l) {
    EngramLayerHash& layer = h.hashes[l];
    layer.heads = h.heads;
    layer.multipliers.assign(multipliers.begin() + l * h.max_n, multipliers.begin() + (l + 1) * h.max_n);
    layer.primes.assign(primes.begin() + l * columns, primes.begin() + (l + 1) * columns);
    layer.offsets.assign(offsets.begin() + l * columns, offsets.begin() + (l + 1) * columns);
  }
  const int64_t pad = call.arg("pad_token").ints.at(0);
  if (pad < 0 || pad >= static_cast<int64_t>(map.size()))
    return Status::errorf("op {}: pad_token {} outside the token map's {} ids", call.op, pad, map.size());
  h.token_map = &map;
  h.pad = map[pad];
  return h;
}

Status engram_position_rows(const EngramHashCall& hash, std::span<const int64_t> before, int64_t token, int64_t row,
                            int64_t position, std::span<int64_t> out) {
  DSV41_CHECK(static_cast<int64_t>(before.size()) == hash.max_n - 1);
  DSV41_CHECK(static_cast<int64_t>(out.size()) == hash.width());
  const std::vector<int64_t>& map = *hash.token_map;
  const auto compressed = [&](int64_t raw, int64_t at) -> Result<int64_t> {
    if (raw < 0 || raw >= static_cast<int64_t>(map.size()))
      return Status::errorf("op engram_hash: row {} position {}: token {} outside the token map's {} ids", row, at, raw,
                            map.size());
    return map[raw];
  };
  std::vector<int64_t> lookback(before.size());
  for (size_t k = 0; k < before.size(); ++k) {
    const int64_t at = position - static_cast<int64_t>(before.size() - k);
    lookback[k] = -1;
    if (before[k] >= 0) {
      DSV41_ASSIGN_OR_RETURN(lookback[k], compressed(before[k], at));
    }
  }
  DSV41_ASSIGN_OR_RETURN(const int64_t self, compressed(token, position));
  const int64_t columns = hash.columns();
  for (int64_t l = 0; l < hash.layers; ++l)
    engram_rows(hash.hashes[l], hash.pad, lookback, std::span<const int64_t>(&self, 1),
                out.subspan(l * columns, columns));
  return Status::ok();
}

Status engram_row_outside(int64_t layer, int64_t position, int64_t column, int64_t id, int64_t rows) {
  return Status::errorf("Engram layer {}: position {} column {}: row id {} outside the table's {} rows", layer,
                        position, column, id, rows);
}

}  // namespace dsv41
