// compiler/emit/unemitted_parts.h — parts of a config's forward the emitter does not produce yet, as warnings.
#pragma once

#include <string>
#include <vector>

#include "common/model_config.h"

namespace dsv41 {

// One warning per part of the model's forward that the config asks for and the call lists omit
// (today: Engram). Such a plan still runs on the CPU backend's refusal path only; its fingerprints
// pin a forward that is not the trained model's, so `dsv41c plan` and `aot-needs` print these loudly.
// Empty when the emitted forward is the config's whole forward.
std::vector<std::string> unemitted_parts(const ModelConfig& config);

}  // namespace dsv41
