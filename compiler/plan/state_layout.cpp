// compiler/plan/state_layout.cpp — per-slot state sized for the planned context; caches never wrap, rings do.
#include "compiler/plan/state_layout.h"

#include <algorithm>

namespace dsv41 {

uint64_t append_buffer(std::vector<BufferDecl>& buffers, uint64_t used, std::string name, DType dtype,
                       std::vector<int64_t> shape) {
  uint64_t bytes = dtype_bytes(dtype);
  for (int64_t extent : shape) bytes *= static_cast<uint64_t>(extent);
  const uint64_t offset = (used + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  buffers.push_back({std::move(name), dtype, std::move(shape), offset, bytes});
  return offset + bytes;
}

int StateLayout::index_of(const std::string& name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name) return static_cast<int>(i);
  return -1;
}

int64_t ring_rows(int64_t window, int64_t draft_tokens) { return window + draft_tokens; }

int64_t tail_rows(int64_t ratio, int64_t draft_tokens) {
  return draft_tokens == 0 ? ratio : std::max(ratio, draft_tokens + std::max<int64_t>(2, ratio - 1));
}

StateLayout plan_state_layout(const ModelConfig& c, int64_t context, DType activations, int64_t draft_tokens,
                              CacheFormat cache_format, bool draft_rings) {
  StateLayout layout;
  uint64_t used = 0;
  // One cache of `rows` rows of `dim` values, as activations or packed in its role's official format.
  auto append_cache = [&](std::string name, CacheRole role, int64_t rows, int64_t dim) {
    if (cache_format == CacheFormat::Official)
      return append_buffer(layout.buffers, used, std::move(name), kPackedCacheDType, {rows, packed_row_bytes(role, dim)});
    return append_buffer(layout.buffers, used, std::move(name), activations, {rows, dim});
  };
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "L" + std::to_string(l) + ".";
    const LayerRole& role = c.layers[l];
    used = append_cache(p + "ring", CacheRole::Window, ring_rows(c.sliding_window, draft_tokens), c.head_dim);
    if (!role.kv_source) continue;
    const int64_t entries = (context + role.ratio - 1) / role.ratio;
    used = append_cache(p + "cache", CacheRole::Compressed, entries, c.head_dim);
    used = append_cache(p + "index_cache", CacheRole::IndexKey, entries, c.index_head_dim);
    if (role.ratio >= 2) used = append_buffer(layout.buffers, used, p + "tail", DType::F32, {tail_rows(role.ratio, draft_tokens), 2 * c.head_dim});
  }
  // Engram's lookback: the raw token ids of the last `sliding_window` positions, entry p mod W, so the
  // hash of a step's first rows can read the max_n − 1 tokens before it and a sequence rewound by its
  // length reads back exactly what the window rings do.
  if (c.has_engram()) used = append_buffer(layout.buffers, used, "engram.lookback", DType::I32, {c.sliding_window});
  // DSpark: the context rows (from the target's taps) of each draft block, position-addressed like
  // the target's rings, so a rewind keeps them.
  if (draft_rings)
    for (int64_t i = 0; i < c.num_nextn_predict_layers; ++i)
      used = append_buffer(layout.buffers, used, "D" + std::to_string(i) + ".ring", activations,
                           {ring_rows(c.sliding_window, draft_tokens), c.head_dim});
  layout.bytes_per_slot = (used + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  return layout;
}

}  // namespace dsv41
