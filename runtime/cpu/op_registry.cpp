// runtime/cpu/op_registry.cpp — op name to CPU implementation, one entry per op of common/op_set.cpp.
#include <string_view>
#include <utility>

#include "runtime/cpu/ops.h"
#include "runtime/cpu/ops_draft.h"

namespace dsv41::cpu {
namespace {

constexpr std::pair<std::string_view, OpFunction> kCpuOps[] = {
    {"embed", op_embed},
    {"hc_pre_init", op_hc_pre_init},
    {"hc_collapse_norm", op_hc_collapse_norm},
    {"hc_mix", op_hc_mix},
    {"hc_post", op_hc_post},
    {"linear", op_linear},
    {"grouped_linear", op_grouped_linear},
    {"rmsnorm", op_rmsnorm},
    {"rope", op_rope},
    {"rmsnorm_rope", op_rmsnorm_rope},
    {"compress", op_compress},
    {"index_select", op_index_select},
    {"sparse_attention", op_sparse_attention},
    {"window_store", op_window_store},
    {"exchange_sum", op_exchange_sum},
    {"exchange_gather", op_exchange_gather},
    {"router", op_router},
    {"moe_experts", op_moe_experts},
    {"shared_expert", op_shared_expert},
    {"engram_hash", op_engram_hash},
    {"engram_lookback", op_engram_lookback},
    {"engram_gather", op_engram_gather},
    {"engram_gate", op_engram_gate},
    {"stream_mean", op_stream_mean},
    {"block_attention", op_block_attention},
    {"markov_logits", op_markov_logits},
    {"markov_pick", op_markov_pick},
};

}  // namespace

OpFunction find_cpu_op(const std::string& op) {
  for (const auto& [name, function] : kCpuOps)
    if (name == op) return function;
  return nullptr;
}

}  // namespace dsv41::cpu
