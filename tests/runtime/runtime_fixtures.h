// tests/runtime/runtime_fixtures.h — synthetic tiny packs (made once per test binary) and planned programs for the runtime tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/program_file.h"
#include "compiler/plan/serving_settings.h"
#include "runtime/generate.h"
#include "tests/support/test_support.h"

namespace dsv41::test {

// A dsv41-tiny model folder with data, written by write_synth_pack once per process ("release" or
// "bf16"; the release pack has 2 shards). Removed at exit.
const fs::path& tiny_pack(const std::string& format);
// The same for another fixture of the dsv41-tiny family (e.g. "dsv41-tiny-draft").
const fs::path& fixture_pack(const std::string& fixture, const std::string& format);

// Small settings that plan quickly: context 64, 2 slots, prefill segments of 8 and 4, decode rows 1 and 2.
ServingSettings small_settings();

// The target plan_programs plans for: "none" (no cubins), or a GPU target whose variants NVRTC
// compiles into `cache_dir` (the CUDA tests: h200).
struct PlanTarget {
  std::string name = "none";
  std::string cache_dir;
};

// Plans every rank of `world` for the model folder (Engram calls hash with `engram_token_map`, none
// when empty); reports a failure and returns what it has.
std::vector<ProgramFile> plan_programs(const fs::path& model_dir, int world, const ServingSettings& settings,
                                       const std::vector<int32_t>& engram_token_map = {},
                                       const PlanTarget& target = {});
// The same, written as DIR/rank{N}.fb.
void write_programs(const fs::path& dir, const fs::path& model_dir, int world, const ServingSettings& settings,
                    const std::vector<int32_t>& engram_token_map = {}, const PlanTarget& target = {});

// The index of a weight in a program by name, or -1.
int64_t weight_index(const fb::Program& program, const std::string& name);

// A whole stored tensor of the folder's pack dequantized to fp32 ([rows, cols] logical; 1-D: rows 1),
// read directly from its shard: the reference the rank's slices are checked against.
std::vector<float> dequantized_full_tensor(const fs::path& model_dir, const fb::Program& program, const std::string& name,
                                           int64_t& rows, int64_t& cols);

// The dsv41-rt the tests run: $DSV41_RT_BINARY where set (a test binary carried to a GPU machine without
// its build, beside a carried dsv41-rt), else the one built with the tests.
std::string dsv41rt_path();
// Runs the built dsv41-rt with `args` (each shell-quoted).
CommandResult run_dsv41rt(const std::vector<std::string>& args);

// Generation of `prompt` on the programs in `programs` over the tiny release-format pack, eos ignored.
GenerateOptions tiny_generate_options(const fs::path& programs, const std::vector<int32_t>& prompt, int max_tokens,
                                      int64_t segment_rows);

}  // namespace dsv41::test
