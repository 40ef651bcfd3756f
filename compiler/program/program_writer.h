// compiler/program/program_writer.h — serialises one rank's plan into the flatbuffer program (schemas/program.fbs).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/program/rank_planner.h"

namespace dsv41 {

// Deterministic: the same inputs give the same bytes.
std::vector<uint8_t> build_program(const ModelInputs& inputs, const PlanOptions& options, const RankPlan& plan);

}  // namespace dsv41
