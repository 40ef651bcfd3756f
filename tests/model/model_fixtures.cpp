// tests/model/model_fixtures.cpp — packs, worlds and generations made once per process; logit comparisons and crossings.
#include "tests/model/model_fixtures.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/program/rank_planner.h"
#include "compiler/plan/targets.h"
#include "tests/support/test_support.h"

namespace dsv41::model_test {
namespace {

// Everything this process wrote, removed when it exits (kept with DSV41_KEEP_TEST_DIRS).
struct Scratch {
  fs::path root = fs::temp_directory_path() / fmt::format("dsv41_model_tests_{}", static_cast<long>(getpid()));
  std::map<int, fs::path> packs;
  std::map<int, std::unique_ptr<reference::ReferenceModel>> models;
  std::map<std::tuple<int, int, int>, fs::path> worlds;
  std::map<std::string, GenerateResult> runs;
  std::map<std::string, Logits> references;
  ~Scratch() {
    std::error_code ec;
    if (!std::getenv("DSV41_KEEP_TEST_DIRS")) fs::remove_all(root, ec);
  }
};

Scratch& scratch() {
  static Scratch instance;
  return instance;
}

std::string key_text(const RunKey& k) { return describe(k); }

}  // namespace

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::Check: return "check(f32)";
    case Mode::BF16: return "bf16";
    case Mode::CheckOfficial: return "check(f32)+official-caches";
    case Mode::BF16Official: return "bf16+official-caches";
  }
  return "?";
}
const char* format_name(SynthFormat format) { return format == SynthFormat::BF16 ? "bf16-pack" : "release-pack"; }

std::vector<int32_t> prompt_ids(const PromptCase& prompt, int64_t vocab) {
  std::mt19937 rng(prompt.seed);
  std::uniform_int_distribution<int32_t> pick(3, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> ids(prompt.length);
  for (auto& id : ids) id = pick(rng);
  return ids;
}

const ModelConfig& tiny_config() {
  static const ModelConfig config = test::fixture_config("dsv41-tiny");
  return config;
}

const fs::path& tiny_pack(SynthFormat format) {
  Scratch& s = scratch();
  const int key = static_cast<int>(format);
  if (auto it = s.packs.find(key); it != s.packs.end()) return it->second;
  const fs::path dir = s.root / (format == SynthFormat::BF16 ? "pack-bf16" : "pack-release");
  SynthPackOptions options;
  options.out_dir = dir.string();
  options.format = format;
  options.seed = kPackSeed;
  options.shards = format == SynthFormat::Release ? 2 : 1;
  const Status status =
      write_synth_pack(tiny_config(), test::read_file(test::fixture_config_path("dsv41-tiny")), options);
  if (!status.is_ok()) ADD_FAILURE() << "write_synth_pack " << format_name(format) << ": " << status.message();
  return s.packs.emplace(key, dir).first->second;
}

const reference::ReferenceModel* reference_model(SynthFormat format) {
  Scratch& s = scratch();
  const int key = static_cast<int>(format);
  if (auto it = s.models.find(key); it != s.models.end()) return it->second.get();
  auto model = reference::ReferenceModel::load(tiny_pack(format).string());
  if (!model.is_ok()) ADD_FAILURE() << "reference load " << format_name(format) << ": " << model.status().message();
  auto& slot = s.models[key];
  if (model.is_ok()) slot = std::make_unique<reference::ReferenceModel>(std::move(model).value());
  return slot.get();
}

ServingSettings tiny_settings(Mode mode) {
  ServingSettings s;
  s.context = 256;
  s.slots = 1;
  s.prefill_rows = {2048, 64, 16};
  s.activations = mode == Mode::Check || mode == Mode::CheckOfficial ? DType::F32 : DType::BF16;
  s.cache_format = mode == Mode::CheckOfficial || mode == Mode::BF16Official ? CacheFormat::Official : CacheFormat::BF16;
  return s;
}

const fs::path& world_programs(SynthFormat format, Mode mode, int world) {
  Scratch& s = scratch();
  const auto key = std::make_tuple(static_cast<int>(format), static_cast<int>(mode), world);
  if (auto it = s.worlds.find(key); it != s.worlds.end()) return it->second;
  const fs::path dir = s.root / fmt::format("programs-{}-{}-w{}", format_name(format), mode_name(mode), world);
  fs::create_directories(dir);
  auto inputs = ModelInputs::read(tiny_pack(format).string());
  if (!inputs.is_ok()) {
    ADD_FAILURE() << inputs.status().message();
  } else {
    PlanOptions options;
    options.world = world;
    options.target = *find_target("none");
    options.settings = tiny_settings(mode);
    for (int rank = 0; rank < world; ++rank) {
      auto plan = plan_rank(*inputs, options, rank);
      if (!plan.is_ok()) {
        ADD_FAILURE() << "plan " << format_name(format) << " " << mode_name(mode) << " world " << world << " rank "
                      << rank << ": " << plan.status().message();
        break;
      }
      test::write_bytes(dir / fmt::format("rank{}.fb", rank), plan->program);
    }
  }
  return s.worlds.emplace(key, dir).first->second;
}

std::string describe(const RunKey& k) {
  return fmt::format("{} (seed {}) {} world {} prompt {} (length {}, seed {}) segment rows {}", format_name(k.format),
                     kPackSeed, mode_name(k.mode), k.world, k.prompt.name, k.prompt.length, k.prompt.seed,
                     k.segment_rows == 0 ? tiny_settings(k.mode).prefill_rows[0] : k.segment_rows);
}

const GenerateResult& generated(const RunKey& key) {
  Scratch& s = scratch();
  const std::string text = key_text(key);
  if (auto it = s.runs.find(text); it != s.runs.end()) return it->second;
  GenerateOptions o;
  o.program_dir = world_programs(key.format, key.mode, key.world).string();
  o.model_dir = tiny_pack(key.format).string();
  o.prompt = prompt_ids(key.prompt, tiny_config().vocab_size);
  o.max_tokens = kMaxTokens;
  o.segment_rows = key.segment_rows;
  o.stop_at_eos = false;
  o.all_logits = true;
  GenerateResult result;
  auto run = generate(o);
  if (!run.is_ok()) {
    ADD_FAILURE() << text << ": " << run.status().message();
  } else {
    result = std::move(run).value();
    const size_t rows = key.prompt.length + kMaxTokens - 1;
    if (result.tokens.size() != static_cast<size_t>(kMaxTokens) || result.logits.size() != rows) {
      ADD_FAILURE() << text << ": " << result.tokens.size() << " tokens and " << result.logits.size()
                    << " logit rows, expected " << kMaxTokens << " and " << rows;
      result = {};
    }
  }
  return s.runs.emplace(text, std::move(result)).first->second;
}

const Logits& reference_logits(const RunKey& key) {
  Scratch& s = scratch();
  const GenerateResult& run = generated(key);
  std::vector<int32_t> ids = prompt_ids(key.prompt, tiny_config().vocab_size);
  if (!run.tokens.empty()) ids.insert(ids.end(), run.tokens.begin(), run.tokens.end() - 1);
  std::string text = fmt::format("{} {}", format_name(key.format), mode_name(key.mode));
  for (int32_t id : ids) text += fmt::format(" {}", id);
  if (auto it = s.references.find(text); it != s.references.end()) return it->second;
  reference::ForwardOptions options;
  options.rounding = key.mode == Mode::Check ? reference::Rounding::None : reference::Rounding::BF16;
  Logits out;
  if (const reference::ReferenceModel* model = reference_model(key.format)) {
    auto logits = model->forward(ids, options);
    if (logits.is_ok()) out = std::move(logits).value();
    else ADD_FAILURE() << "reference forward for " << describe(key) << ": " << logits.status().message();
  }
  return s.references.emplace(text, std::move(out)).first->second;
}

}  // namespace dsv41::model_test
