// common/engram_hash.h — Engram's row ids: prime layout of the tables, multipliers, rolling n-gram hash.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/call_list.h"
#include "common/model_config.h"
#include "common/status.h"

namespace dsv41 {

// One Engram layer's hash parameters (docs/model.md "Engram"). Column col = (n−2)·heads + h for
// order n = 2..max_n and head h; its rows in the layer's table are [offsets[col], offsets[col] + primes[col]).
struct EngramLayerHash {
  int64_t layer = 0;                 // the transformer layer id (seeds the multipliers)
  int64_t heads = 0;                 // hash heads per order
  std::vector<int64_t> multipliers;  // max_n odd values, one per lookback distance s = 0..max_n−1
  std::vector<int64_t> primes;       // (max_n − 1)·heads moduli
  std::vector<int64_t> offsets;      // exclusive prefix sums of primes
  int64_t table_rows() const;        // Σ primes
  int64_t columns() const { return static_cast<int64_t>(primes.size()); }
};

// The moduli of every Engram layer, in engram_layer_ids order: for each layer, each order n and each
// head, the next prime above a running value that restarts at vocab_size − 1 for each order, never
// reusing a prime any earlier column (of any layer) took. Result [layer][(n−2)·heads + h].
std::vector<std::vector<int64_t>> engram_primes(int64_t vocab_size, int64_t layers, int64_t max_n, int64_t heads);

// The multipliers 2·v + 1 for one layer, v the first max_n int64 draws of NumPy
// default_rng(10007·layer).integers(0, (2^63−1)//compressed_vocab//2). Only the draws listed in
// common/engram_multipliers.cpp are known (NumPy's generator is not reimplemented); any other
// (layer, compressed vocabulary, max_n) is an error naming the three.
Result<std::vector<int64_t>> engram_multipliers(int64_t layer, int64_t compressed_vocab, int64_t max_n);

// Every Engram layer's hash, checked: each layer's Σ primes must equal its engram_num_embeddings
// (an error names the layer, both numbers and the primes' range).
Result<std::vector<EngramLayerHash>> engram_layer_hashes(const ModelConfig& config);

// Row ids of T positions. `ids` are compressed token ids (token map applied) of the positions in
// order; `lookback` holds the max_n − 1 compressed ids before the first position, oldest first,
// −1 where there is none (sequence start). Reading back from a position, the first missing token
// "blocks": it and every older token count as `pad`. rows: [T, columns] row ids within the layer's
// table, rows[t·columns + (s−1)·heads + h] = (x_s mod primes[col]) + offsets[col], where
// x_s = XOR over k ≤ s of token(t−k)·multipliers[k].
void engram_rows(const EngramLayerHash& hash, int64_t pad, std::span<const int64_t> lookback,
                 std::span<const int64_t> ids, std::span<int64_t> rows);

// An engram_hash call's constants and integer lists (docs/ops.md "engram_hash"), checked once, so every
// backend hashes from the same parameters: the CPU op, and the CUDA backend's host gather of a step's rows.
struct EngramHashCall {
  int64_t layers = 0, max_n = 0, heads = 0, window = 0;
  std::vector<EngramLayerHash> hashes;              // one per Engram layer, in engram_layer_ids order
  const std::vector<int64_t>* token_map = nullptr;  // the call's own list: the Call must outlive this
  int64_t pad = 0;                                  // the compressed id of pad_token
  int64_t columns() const { return (max_n - 1) * heads; }
  int64_t width() const { return layers * columns(); }
};
// Refuses constants out of range, list sizes that disagree with them, a prime below 1, an empty token
// map (a program planned without tokenizer.json) and a pad token outside the map.
Result<EngramHashCall> engram_hash_call(const Call& call);

// The row ids of one position for every layer: out[l·columns + col] (width() ids). `before` holds the
// raw token ids of the max_n − 1 positions before it, oldest first, −1 before the sequence start;
// `token` is its own. A token outside the map is an error naming the row and that token's position.
Status engram_position_rows(const EngramHashCall& hash, std::span<const int64_t> before, int64_t token, int64_t row,
                            int64_t position, std::span<int64_t> out);

// The refusal of a row id outside a table, worded once for every backend: names the layer, the
// position, the column, the id and the table's rows.
Status engram_row_outside(int64_t layer, int64_t position, int64_t column, int64_t id, int64_t rows);

}  // namespace dsv41
