// tests/golden/golden_inputs.cpp — the release and tiny header-only packs the golden suites plan.
#include "tests/golden/golden_inputs.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "compiler/synth/synth_pack.h"

namespace dsv41 {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

// `fixture` written as a header-only release-format pack of `shards` shards and read back.
ModelInputs header_only_inputs(const std::string& fixture, int shards) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("dsv41-golden-{}-{}", fixture, ::getpid());
  const std::string config_path = std::string(DSV41_SOURCE_DIR) + "/fixtures/" + fixture + "/config.json";
  const std::string config_text = read_text(config_path);
  auto config = parse_model_config(config_text, config_path);
  EXPECT_TRUE(config.is_ok()) << config.status().message();
  SynthPackOptions options;
  options.out_dir = dir.string();
  options.format = SynthFormat::Release;
  options.headers_only = true;
  options.shards = shards;
  const Status written = write_synth_pack(*config, config_text, options);
  EXPECT_TRUE(written.is_ok()) << written.message();
  auto read = ModelInputs::read(dir.string());
  EXPECT_TRUE(read.is_ok()) << read.status().message();
  fs::remove_all(dir);
  return std::move(read).value();
}

}  // namespace

const ModelInputs& release_inputs() {
  static const ModelInputs inputs = header_only_inputs("dsv41-release", 8);
  return inputs;
}

const ModelInputs& tiny_inputs() {
  static const ModelInputs inputs = header_only_inputs("dsv41-tiny", 2);
  return inputs;
}

RankLists plan_rank_lists(const ModelInputs& inputs, const PlanOptions& options, int rank) {
  auto plan = plan_rank(inputs, options, rank);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  auto file = ProgramFile::from_bytes(plan->program, "plan");
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  auto lists = read_call_lists(file->program());
  return {std::move(file).value(), std::move(lists).value()};
}

std::string golden_body(const std::string& text) {
  size_t at = 0;
  while (at < text.size() && text[at] == '#') {
    const size_t end = text.find('\n', at);
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return text.substr(at);
}

}  // namespace dsv41
