// compiler/program/program_summary.h — what `plan` prints and `inspect` shows: a program as human text or one JSON object.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "schemas/program_generated.h"

namespace dsv41 {

nlohmann::json program_json(const fb::Program& program);
// A few lines: share, weights and memory of one rank.
std::string program_text(const fb::Program& program);

}  // namespace dsv41
