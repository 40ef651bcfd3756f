// compiler/emit/rank_phases.h — every phase of one rank: decode windows of each planned row bucket and prefill segments.
#pragma once

#include "common/program_calls.h"
#include "compiler/plan/serving_settings.h"
#include "compiler/plan/weight_plan.h"

namespace dsv41 {

CallLists emit_call_lists(const ModelConfig& config, const RankShare& share, const WeightPlan& weights,
                          const ServingSettings& settings);

}  // namespace dsv41
