// compiler/plan/state_layout.h — one slot's persistent state: window rings, compressed and index-key caches, compressor tails.
#pragma once

#include <string>
#include <vector>

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
// `activations` replaces BF16 for cache rows (F32 in check mode).
StateLayout plan_state_layout(const ModelConfig& config, int64_t context, DType activations = DType::BF16);

// Appends a buffer at the next aligned offset; returns the new region size.
uint64_t append_buffer(std::vector<BufferDecl>& buffers, uint64_t used, std::string name, DType dtype,
                       std::vector<int64_t> shape);

}  // namespace dsv41
