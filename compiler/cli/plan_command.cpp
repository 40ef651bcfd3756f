// compiler/cli/plan_command.cpp — `dsv41c plan MODEL_DIR --world W --rank N|all`: write rank{N}.fb for each rank.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "common/program_file.h"
#include "compiler/cli/commands.h"
#include "compiler/cli/settings_flags.h"
#include "compiler/tokens/engram_token_map.h"
#include "compiler/program/program_summary.h"
#include "compiler/program/rank_planner.h"

namespace dsv41::cli {
namespace {

struct PlanFlags : ModelFlags {
  std::string rank = "all", out = ".", target = "none", cache;
  double memory_gib = 0;
  bool quiet = false, accept_map_count = false;
  int jobs = 0;
};

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

Result<std::vector<int>> ranks_of(const std::string& text, int world) {
  if (world < 1) return Status::errorf("world {}: must be at least 1", world);  // before sizing a vector by it
  if (text == "all") {
    std::vector<int> all(world);
    for (int r = 0; r < world; ++r) all[r] = r;
    return all;
  }
  char* end = nullptr;
  const long rank = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') return Status::errorf("--rank {}: expected a rank number or \"all\"", text);
  if (rank < 0 || rank >= world)
    return Status::errorf("--rank {}: outside 0..{} of world {}", rank, world - 1, world);
  return std::vector<int>{static_cast<int>(rank)};
}

Status plan_ranks(const PlanFlags& f) {
  DSV41_ASSIGN_OR_RETURN(PlanOptions options, plan_options(f, f.target));
  if (f.memory_gib < 0) return Status::errorf("--memory-gib {}: must be positive", f.memory_gib);
  options.memory_limit = static_cast<uint64_t>(f.memory_gib * (1ull << 30));
  DSV41_ASSIGN_OR_RETURN(std::vector<int> ranks, ranks_of(f.rank, f.world));
  DSV41_ASSIGN_OR_RETURN(ModelInputs inputs, ModelInputs::read(f.model_dir));
  DSV41_TRY(check_world(inputs.config, f.world));
  std::vector<std::string> warnings;
  // Refused before any planning: a token map that is not the trained one gives wrong Engram rows.
  DSV41_ASSIGN_OR_RETURN(auto map, model_engram_token_map(inputs.config, f.model_dir, &warnings, f.accept_map_count));
  if (map) inputs.engram_token_map = std::move(map->compressed);
  DSV41_ASSIGN_OR_RETURN(options.settings, settle_settings(inputs, options, &warnings));
  for (const std::string& w : warnings) std::fprintf(stderr, "dsv41c: warning: %s\n", with_flag_names(w).c_str());
  if (!f.quiet && !f.context)
    std::printf("context %lld tokens: the default, the smaller of %lld and max_position_embeddings %lld\n",
                static_cast<long long>(options.settings.context), static_cast<long long>(kDefaultContext),
                static_cast<long long>(inputs.config.max_position_embeddings));
  options.build.cache_dir = default_cache_dir(f.cache, env_or_empty("DSV41_CACHE"), env_or_empty("HOME"));
  options.build.jobs = f.jobs;
  options.build.progress = !f.quiet && isatty(fileno(stderr));
  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  if (ec) return Status::errorf("--out {}: cannot create the folder: {}", f.out, ec.message());
  for (int rank : ranks) {
    DSV41_ASSIGN_OR_RETURN(RankPlan plan, plan_rank(inputs, options, rank));
    const std::string path = (std::filesystem::path(f.out) / fmt::format("rank{}.fb", rank)).string();
    // Read back through the loader: the compiler never writes a program the runtime would refuse.
    DSV41_ASSIGN_OR_RETURN(ProgramFile check, ProgramFile::from_bytes(plan.program, path));
    DSV41_TRY(write_file_atomic(path, plan.program.data(), plan.program.size()));
    if (!f.quiet) std::printf("%s  -> %s (%zu bytes)\n", program_text(check.program()).c_str(), path.c_str(), plan.program.size());
  }
  return Status::ok();
}

Status run_plan(const PlanFlags& f) { return with_flag_names(plan_ranks(f)); }

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plan ranks of a world and write DIR/rank{N}.fb for each.\n"
              "Reads config.json and the safetensors headers only; refuses, with the failing bound,\n"
              "a world, a tensor, a kernel launch or a memory total that cannot be served. With a GPU\n"
              "--target, compiles every kernel variant the rank launches with NVRTC into the program\n"
              "(cached, so a re-plan is fast). Optional prefill sizes that do not fit are dropped\n"
              "with a warning; the default (first) one must fit on every rank.");
  add_model_flags(cmd, *f);
  cmd->add_option("--rank", f->rank, "a rank number or \"all\"")->capture_default_str();
  cmd->add_option("--out", f->out, "folder for the rank{N}.fb programs")->capture_default_str();
  cmd->add_option("--target", f->target, "GPU target: " + target_names() + " (none: no cubins, no memory check)")
      ->capture_default_str();
  cmd->add_option("--cache", f->cache, "kernel cache folder (default: $DSV41_CACHE, else ~/.cache/dsv41)");
  cmd->add_option("--jobs", f->jobs, "parallel NVRTC compiles (default: every hardware thread)");
  cmd->add_option("--memory-gib", f->memory_gib, "device memory limit per rank in GiB (default: the target's)");
  cmd->add_flag("--accept-engram-map-count", f->accept_map_count,
                "plan even when the Engram token map built from tokenizer.json has another count than config\n"
                "engram_compressed_vocab_size (a loud warning instead of the refusal; the map is used as built)");
  cmd->add_flag("--quiet", f->quiet, "print nothing on success");
  return [f]() { return run_plan(*f); };
}

}  // namespace dsv41::cli
