// compiler/cli/settings_flags.h — flags every planning subcommand takes: the model, the world and the
// serving settings (context, slots, prefill and decode rows, activations).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "compiler/program/rank_planner.h"

namespace dsv41::cli {

struct ModelFlags {
  std::string model_dir, activations = "bf16";
  int world = 1;
  ServingSettings settings;
};

void add_model_flags(CLI::App* cmd, ModelFlags& flags);
// The flags as plan options for `target` (refused by name when unknown).
Result<PlanOptions> plan_options(const ModelFlags& flags, const std::string& target);

}  // namespace dsv41::cli
