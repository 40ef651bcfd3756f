// compiler/emit/unemitted_parts.cpp — the warnings for config features the emitter skips (Engram until issue 13).
#include "compiler/emit/unemitted_parts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dsv41 {

std::vector<std::string> unemitted_parts(const ModelConfig& config) {
  std::vector<std::string> parts;
  // A warning rather than a refusal: the release config must stay plannable (its memory, shares and
  // variants are still right), but nobody may mistake its call lists for the trained model's forward.
  if (config.has_engram())
    parts.push_back(fmt::format(
        "config engram_layer_ids [{}]: Engram is NOT emitted yet; these call lists omit it, so the planned "
        "forward is not the trained model's (real weights give different logits) and the runtime refuses it",
        fmt::join(config.engram_layer_ids, ", ")));
  return parts;
}

}  // namespace dsv41
