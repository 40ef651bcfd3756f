// compiler/memory_ledger.cpp — memory per rank, decided at plan time so a plan that cannot fit is refused offline.
#include "compiler/memory_ledger.h"

#include <algorithm>

namespace dsv41 {
namespace {

constexpr uint64_t kBf16 = 2, kF32 = 4, kI32 = 4;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string gib_text(uint64_t bytes) { return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1ull << 30)); }

uint64_t state_bytes_per_slot(const ModelConfig& c, int64_t context) {
  const uint64_t blocks = c.num_hidden_layers + c.num_nextn_predict_layers;
  uint64_t bytes = blocks * c.sliding_window * c.head_dim * kBf16;  // every block's window ring
  for (const LayerRole& role : c.layers) {
    if (!role.kv_source) continue;
    const uint64_t entries = ceil_div(context, role.ratio);
    bytes += entries * c.head_dim * kBf16;        // compressed latents
    bytes += entries * c.index_head_dim * kBf16;  // index keys
    bytes += role.ratio * 2 * c.head_dim * kF32;  // raw kv and score rows of the open group
    if (role.candidate_source) bytes += c.candidate_topk_blocks * kI32;
  }
  if (c.has_engram()) bytes += (c.engram_max_ngram_size - 1) * kI32;  // token lookback for the n-gram hashes
  return bytes;
}

uint64_t activation_bytes(const ModelConfig& c, const RankShare& share, const ServingSettings& s) {
  const uint64_t rows = std::max<int64_t>(s.prefill_rows, *std::max_element(s.decode_rows.begin(), s.decode_rows.end()));
  const uint64_t heads = share.heads.size(), width = share.expert_cols.size(), vocab = share.vocab_rows.size();
  const uint64_t keys = c.sliding_window + c.index_topk;  // keys one query row attends
  uint64_t per_row = 0;
  per_row += 2 * c.hc_dim * kBf16;                         // streams in and out
  per_row += c.hc_dim * kF32 + c.mix_hc * kF32;            // fp32 flattened streams and mixes
  per_row += 4 * c.hidden_size * kF32;                     // collapse, norm, partial sums, exchange
  per_row += c.q_lora_rank * kF32 + heads * c.head_dim * (kBf16 + kF32);  // query and attention output
  per_row += heads * keys * kF32;                          // attention scores
  per_row += c.index_n_heads * c.index_head_dim * kF32 + c.index_topk * kI32;
  per_row += (c.num_experts_per_tok + c.n_shared_experts) * width * 2 * kF32;  // gate and up activations
  per_row += c.n_routed_experts * kF32;                    // router scores
  per_row += vocab * kF32;                                 // this rank's logits
  return rows * per_row;
}

MemoryLedger build_ledger(const ModelConfig& c, const RankShare& share, const WeightPlan& plan,
                          const ServingSettings& settings, uint64_t limit) {
  MemoryLedger m;
  m.weights_replicated = plan.replicated_bytes;
  m.weights_split = plan.split_bytes;
  m.weights_host = plan.host_bytes;
  m.state_per_slot = state_bytes_per_slot(c, settings.context);
  m.state = m.state_per_slot * settings.slots;
  m.activations = activation_bytes(c, share, settings);
  m.total = m.weights_replicated + m.weights_split + m.state + m.activations;
  m.limit = limit;
  return m;
}

std::string ledger_text(const MemoryLedger& m) {
  std::string text;
  text += fmt::format("  weights, replicated  {:>12}\n", gib_text(m.weights_replicated));
  text += fmt::format("  weights, split       {:>12}\n", gib_text(m.weights_split));
  text += fmt::format("  state                {:>12}  ({} a slot)\n", gib_text(m.state), gib_text(m.state_per_slot));
  text += fmt::format("  activations          {:>12}\n", gib_text(m.activations));
  text += fmt::format("  device total         {:>12}", gib_text(m.total));
  text += m.limit ? fmt::format("  of {}\n", gib_text(m.limit)) : std::string("  (no limit checked)\n");
  if (m.weights_host) text += fmt::format("  host tables          {:>12}  (Engram, in host memory)\n", gib_text(m.weights_host));
  return text;
}

Status check_fits(const MemoryLedger& m, const RankShare& share, const std::string& limit_source) {
  if (m.limit == 0 || m.total <= m.limit) return Status::ok();
  return Status::errorf("rank {} of world {}: needs {} of device memory, the limit is {} ({})\n{}", share.rank,
                        share.world, gib_text(m.total), gib_text(m.limit), limit_source, ledger_text(m));
}

}  // namespace dsv41
