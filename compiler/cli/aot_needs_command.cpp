// compiler/cli/aot_needs_command.cpp — `dsv41c aot-needs MODEL_DIR --world W [--json]`: every kernel variant
// each rank launches, with launch counts, and the union across ranks.
#include <cstdio>
#include <memory>

#include "compiler/kernels/aot_needs.h"
#include "compiler/cli/commands.h"
#include "compiler/cli/settings_flags.h"

namespace dsv41::cli {
namespace {

struct NeedsFlags : ModelFlags {
  std::string target = "h200";
  bool json = false;
};

Status list_needs(const NeedsFlags& f) {
  DSV41_ASSIGN_OR_RETURN(PlanOptions options, plan_options(f, f.target));
  DSV41_ASSIGN_OR_RETURN(ModelInputs inputs, ModelInputs::read(f.model_dir));
  DSV41_TRY(check_world(inputs.config, f.world));
  DSV41_ASSIGN_OR_RETURN(AotNeeds needs, aot_needs(inputs, options));
  for (const std::string& w : needs.warnings) std::fprintf(stderr, "dsv41c: warning: %s\n", with_flag_names(w).c_str());
  const std::string text = f.json ? aot_needs_json(needs) : aot_needs_text(needs);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::ok();
}

Status run_needs(const NeedsFlags& f) { return with_flag_names(list_needs(f)); }

}  // namespace

Runner add_aot_needs_command(CLI::App& app) {
  auto f = std::make_shared<NeedsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "aot-needs", "List the kernel variants each rank of a world launches (op, compile-time constants and\n"
                   "arch: the variant key), with launch counts over all phases, and their union: what\n"
                   "`plan --target` compiles. Header-only and fast; no NVRTC.");
  add_model_flags(cmd, *f);
  cmd->add_option("--target", f->target, "GPU target (its arch is part of each key): " + target_names())
      ->capture_default_str();
  cmd->add_flag("--json", f->json,
                "print {\"ranks\": [{\"rank\": r, \"variants\": [key...], \"launches\": [n...]}...], \"union\": [key...]}");
  return [f]() { return run_needs(*f); };
}

}  // namespace dsv41::cli
