// compiler/cli/settings_flags.h — flags every planning subcommand takes: the model, the world and the
// serving settings (context, slots, prefill and decode rows, activations).
#pragma once

#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "compiler/program/rank_planner.h"

namespace dsv41::cli {

struct ModelFlags {
  std::string model_dir, activations = "bf16", cache_format = "bf16";
  int world = 1;
  std::optional<int64_t> context;  // unset: the model's default (its 0 in ServingSettings)
  ServingSettings settings;
};

void add_model_flags(CLI::App* cmd, ModelFlags& flags);
// The flags as plan options for `target` (refused by name when unknown).
Result<PlanOptions> plan_options(const ModelFlags& flags, const std::string& target);
// The library names settings ("setting prefill_rows = 0", "setting memory_limit"); dsv41c's user
// knows them as flags ("--prefill-rows 0", "--memory-gib"). Maps the one to the other in a message.
std::string with_flag_names(std::string message);
Status with_flag_names(const Status& status);

}  // namespace dsv41::cli
