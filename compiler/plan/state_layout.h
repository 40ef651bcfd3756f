// compiler/plan/state_layout.h — one slot's persistent state: window rings, compressed and index-key caches, compressor tails.
#pragma once

#include <string>
#include <vector>

#include "common/cache_format.h"
#include "common/call_list.h"
#include "common/model_config.h"

namespace dsv41 {

struct StateLayout {
  std::vector<BufferDecl> buffers;
  uint64_t bytes_per_slot = 0;
  int index_of(const std::string& name) const;  // -1 when absent
};

// Names: "L{n}.ring", and on kv sources "L{n}.cache", "L{n}.index_cache", "L{n}.tail" (ratio >= 2);
// "engram.lookback" (I32 [sliding_window] token ids) when the config has Engram layers.
// `activations` replaces BF16 for cache rows (F32 in check mode). With `draft_tokens` > 0 the rings
// and tails are longer (ring_rows, tail_rows), so rewinding rejected draft rows loses nothing. With the
// official cache format, rings, caches and index caches are packed rows (common/cache_format.h: U8
// [rows, packed_row_bytes]); tails stay fp32. With `draft_rings`, each DSpark draft block i gets
// "D{i}.ring", a window ring of its context rows (always activation rows: the draft blocks' own cache).
StateLayout plan_state_layout(const ModelConfig& config, int64_t context, DType activations = DType::BF16,
                              int64_t draft_tokens = 0, CacheFormat cache_format = CacheFormat::BF16,
                              bool draft_rings = false);

// Rows of a window ring: the window, plus the rows a rejected verification may write past it. A row
// at position q lands in slot q mod rows; after a rewind to L the window of L (L - window .. L - 1)
// must still be there, while rows up to L + draft_tokens - 1 were written.
int64_t ring_rows(int64_t window, int64_t draft_tokens);
// Rows of a compressor tail (raw rows of the open group at slot p mod rows): the ratio when not
// drafting; else draft_tokens + max(2, ratio - 1), so a verification of draft_tokens + 1 rows never
// overwrites the open group a rewind goes back to (its oldest row is ratio - 1 before the rewind).
int64_t tail_rows(int64_t ratio, int64_t draft_tokens);

// Appends a buffer at the next aligned offset; returns the new region size.
uint64_t append_buffer(std::vector<BufferDecl>& buffers, uint64_t used, std::string name, DType dtype,
                       std::vector<int64_t> shape);

}  // namespace dsv41
