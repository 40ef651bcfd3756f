// compiler/cli/synth_pack_command.cpp — `dsv41c synth-pack`: a pack with the release inventory, from a config and a seed.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/model_config.h"
#include "compiler/cli/commands.h"
#include "compiler/synth/synth_pack.h"

namespace dsv41::cli {

Runner add_synth_pack_command(CLI::App& app) {
  struct Flags {
    std::string config, out, format = "bf16";
    bool headers_only = false;
    uint64_t seed = 0;
    int shards = 1;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "synth-pack", "Write a synthetic pack (safetensors shards + config.json) with the release tensor inventory.\n"
                    "--headers-only writes valid headers and no data, so the full release plans in CI.");
  cmd->add_option("--config", f->config, "config.json to build the pack for")->required();
  cmd->add_option("--out", f->out, "output model folder")->required();
  cmd->add_option("--format", f->format, "bf16 (every linear BF16) or release (FP8/FP4 with UE8M0 scales)")
      ->check(CLI::IsMember({"bf16", "release"}))
      ->capture_default_str();
  cmd->add_flag("--headers-only", f->headers_only, "write headers without tensor data");
  cmd->add_option("--seed", f->seed, "seed of the synthetic values")->capture_default_str();
  cmd->add_option("--shards", f->shards, "number of safetensors shards")->check(CLI::Range(1, 4096))->capture_default_str();
  return [f]() -> Status {
    std::ifstream in(f->config, std::ios::binary);
    if (!in) return Status::errorf("--config {}: cannot open", f->config);
    std::stringstream text;
    text << in.rdbuf();
    DSV41_ASSIGN_OR_RETURN(ModelConfig config, parse_model_config(text.str(), f->config));
    SynthPackOptions options;
    options.out_dir = f->out;
    options.format = f->format == "release" ? SynthFormat::Release : SynthFormat::BF16;
    options.headers_only = f->headers_only;
    options.seed = f->seed;
    options.shards = f->shards;
    options.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    DSV41_TRY(write_synth_pack(config, text.str(), options));
    std::printf("wrote %s pack%s to %s\n", f->format.c_str(), f->headers_only ? " (headers only)" : "", f->out.c_str());
    return Status::ok();
  };
}

}  // namespace dsv41::cli
