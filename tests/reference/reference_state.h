// tests/reference/reference_state.h — per-sequence caches (docs/model.md §9), per-row scratch and path counters.
#pragma once

#include <cstdint>
#include <vector>

#include "tests/reference/reference_math.h"

namespace dsv41::reference {

// What one layer carries between steps.
struct LayerCache {
  std::vector<Vec> window;          // sliding_window rows; slot p mod W holds position p
  std::vector<Vec> compressed;      // kv sources: compressed row j (bf16 values)
  std::vector<Vec> index_keys;      // kv sources: index key j (bf16 values)
  std::vector<Vec> tail_kv, tail_gate;  // kv sources with ratio >= 2: raw rows of the open group
};

struct SequenceState {
  std::vector<LayerCache> layers;
  int64_t length = 0;  // positions processed
};

// Transient within one row: selections published by index sources, blocks published by the
// candidate source.
struct RowScratch {
  std::vector<std::vector<int64_t>> selection;  // per layer; filled for index sources
  std::vector<int64_t> candidate_blocks;        // ascending block ids
  bool candidates_published = false;
};

// Counters that show which code paths a forward exercised (tests assert on them).
struct ReferenceStats {
  int64_t rows = 0;
  int64_t max_window_rows = 0;     // most window rows one query attended
  int64_t ring_overwrites = 0;     // window rows written over an older position's slot
  int64_t groups_closed = 0;       // compressed entries written by ratio >= 2 kv sources
  int64_t entries_written = 0;     // compressed entries written by all kv sources
  int64_t max_visible = 0;         // most visible compressed entries at an index source
  int64_t max_selected = 0;        // most compressed rows one query attended
  int64_t topk_truncations = 0;    // index-source rows that selected fewer entries than visible
  int64_t candidate_maskings = 0;  // masked-source rows where the candidate mask removed entries
  int64_t reused_selections = 0;   // rows of layers that reused their index layer's selection
};

}  // namespace dsv41::reference
