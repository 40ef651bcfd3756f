// compiler/cli/settings_flags.cpp — the serving-settings flags `plan` and `aot-needs` share, and the
// common start of both: the model read once, the world checked, the settings taken from the flags.
#include "compiler/cli/settings_flags.h"

namespace dsv41::cli {

void add_model_flags(CLI::App* cmd, ModelFlags& f) {
  cmd->add_option("MODEL_DIR", f.model_dir, "folder with config.json and *.safetensors (+ index)")->required();
  cmd->add_option("--world", f.world, "number of ranks (1 .. o_groups)")->required();
  cmd->add_option("--context", f.context,
                  fmt::format("tokens one slot holds (default: the smaller of {} and the model's "
                              "max_position_embeddings)",
                              kDefaultContext));
  cmd->add_option("--slots", f.settings.slots, "sequences served at once")->capture_default_str();
  cmd->add_option("--prefill-rows", f.settings.prefill_rows, "prefill segment sizes; the first is the default")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--decode-rows", f.settings.decode_rows, "decode window row buckets, ascending")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--activations", f.activations,
                  "bf16 (served: rounded as docs/model.md says) or f32 (check mode: no rounding)")
      ->check(CLI::IsMember({"bf16", "f32"}))
      ->capture_default_str();
  cmd->add_option("--draft-tokens", f.settings.draft_tokens,
                  "tokens a DSpark round drafts per slot, verified exactly (0: off; at most the model's "
                  "dspark_block_size; rings are planned this many rows longer)")
      ->capture_default_str();
  cmd->add_option("--cache-format", f.cache_format,
                  "bf16 (cache rows stored as activations) or official (window rows FP8 e4m3 with a UE8M0 scale "
                  "per 32 values, compressed rows FP4 e2m1 with an E4M3 scale per 16, index keys FP4 with a UE8M0 "
                  "scale per 32, as the official code rounds them: about 28% of the bf16 state per slot)")
      ->check(CLI::IsMember({"bf16", "official"}))
      ->capture_default_str();
}

Result<PlanOptions> plan_options(const ModelFlags& f, const std::string& target) {
  PlanOptions options;
  options.world = f.world;
  options.settings = f.settings;
  options.settings.activations = f.activations == "f32" ? DType::F32 : DType::BF16;
  options.settings.cache_format = cache_format_from_name(f.cache_format).value_or(CacheFormat::BF16);
  if (f.context && *f.context < 1)  // 0 is the library's "default"; a flag given must name a context
    return Status::errorf("--context {}: must be at least 1 (leave the flag out for the model's default)", *f.context);
  if (f.context) options.settings.context = *f.context;
  DSV41_ASSIGN_OR_RETURN(options.target, find_target(target));
  return options;
}

std::string with_flag_names(std::string message) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {"context", "--context"},         {"slots", "--slots"},
      {"prefill_rows", "--prefill-rows"}, {"decode_rows", "--decode-rows"},
      {"activations", "--activations"}, {"memory_limit", "--memory-gib"},
      {"draft_tokens", "--draft-tokens"}, {"cache_format", "--cache-format"}};
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = message.find(from); at != std::string::npos; at = message.find(from, at + to.size()))
      message.replace(at, from.size(), to);
  };
  for (const auto& [setting, flag] : kFlags) {
    replace_all(fmt::format("setting {} = ", setting), fmt::format("{} ", flag));
    replace_all(fmt::format("setting {}", setting), flag);
  }
  return message;
}

Status with_flag_names(const Status& status) {
  return status.is_ok() ? status : Status::error(with_flag_names(status.message()));
}

}  // namespace dsv41::cli
