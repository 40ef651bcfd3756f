// tests/golden/golden_inputs.cpp — the release header-only pack the golden suites plan.
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

const ModelInputs& release_inputs() {
  static const ModelInputs inputs = [] {
    const fs::path dir = fs::temp_directory_path() / ("dsv41-golden-" + std::to_string(::getpid()));
    const std::string config_path = std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-release/config.json";
    const std::string config_text = read_text(config_path);
    auto config = parse_model_config(config_text, config_path);
    EXPECT_TRUE(config.is_ok()) << config.status().message();
    SynthPackOptions options;
    options.out_dir = dir.string();
    options.format = SynthFormat::Release;
    options.headers_only = true;
    options.shards = 8;
    const Status written = write_synth_pack(*config, config_text, options);
    EXPECT_TRUE(written.is_ok()) << written.message();
    auto read = ModelInputs::read(dir.string());
    EXPECT_TRUE(read.is_ok()) << read.status().message();
    fs::remove_all(dir);
    return std::move(read).value();
  }();
  return inputs;
}

}  // namespace dsv41
