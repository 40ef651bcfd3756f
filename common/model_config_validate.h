// common/model_config_validate.h — the rules a config must satisfy, and the layer roles they derive.
#pragma once

#include <string>

#include "common/model_config.h"

namespace dsv41 {

// Checks every field the planner uses and fills the derived constants and layer roles.
// `prefix` ("text_config." or "") makes messages name fields as they appear in the file.
Status validate_model_config(ModelConfig& config, const std::string& prefix);

}  // namespace dsv41
