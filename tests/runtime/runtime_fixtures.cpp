// tests/runtime/runtime_fixtures.cpp — tiny packs written once per process, planned programs, and whole-tensor references.
#include "tests/runtime/runtime_fixtures.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>

#include <gtest/gtest.h>

#include "common/numeric_formats.h"
#include "common/pack_index.h"
#include "compiler/program/rank_planner.h"
#include "compiler/synth/synth_pack.h"
#include "compiler/plan/targets.h"

namespace dsv41::test {
namespace {

// The packs of this process, removed when it exits (kept with DSV41_KEEP_TEST_DIRS).
struct PackCache {
  fs::path root = fs::temp_directory_path() / ("dsv41_runtime_packs_" + std::to_string(getpid()));
  std::map<std::string, fs::path> made;
  ~PackCache() {
    std::error_code ec;
    if (!std::getenv("DSV41_KEEP_TEST_DIRS")) fs::remove_all(root, ec);
  }
};

PackCache& cache() {
  static PackCache instance;
  return instance;
}

}  // namespace

const fs::path& tiny_pack(const std::string& format) { return fixture_pack("dsv41-tiny", format); }

const fs::path& fixture_pack(const std::string& fixture, const std::string& format) {
  PackCache& c = cache();
  const std::string key = fixture == "dsv41-tiny" ? format : fixture + "-" + format;
  auto it = c.made.find(key);
  if (it != c.made.end()) return it->second;
  const fs::path dir = c.root / key;
  const std::string text = read_file(fixture_config_path(fixture));
  SynthPackOptions options;
  options.out_dir = dir.string();
  options.format = format == "release" ? SynthFormat::Release : SynthFormat::BF16;
  options.seed = 7;
  options.shards = format == "release" ? 2 : 1;
  const Status status = write_synth_pack(fixture_config(fixture), text, options);
  if (!status.is_ok()) ADD_FAILURE() << "write_synth_pack " << fixture << " " << format << ": " << status.message();
  return c.made.emplace(key, dir).first->second;
}

ServingSettings small_settings() {
  ServingSettings s;
  s.context = 64;
  s.slots = 2;
  s.prefill_rows = {8, 4};
  s.decode_rows = {1, 2};
  return s;
}

std::vector<ProgramFile> plan_programs(const fs::path& model_dir, int world, const ServingSettings& settings,
                                       const std::vector<int32_t>& engram_token_map, const PlanTarget& target) {
  std::vector<ProgramFile> out;
  auto inputs = ModelInputs::read(model_dir.string());
  if (!inputs.is_ok()) {
    ADD_FAILURE() << inputs.status().message();
    return out;
  }
  inputs->engram_token_map = engram_token_map;
  PlanOptions options;
  options.world = world;
  options.settings = settings;
  auto found = find_target(target.name);
  if (!found.is_ok()) {
    ADD_FAILURE() << found.status().message();
    return out;
  }
  options.target = *found;
  options.build.cache_dir = target.cache_dir;
  for (int rank = 0; rank < world; ++rank) {
    auto plan = plan_rank(*inputs, options, rank);
    if (!plan.is_ok()) {
      ADD_FAILURE() << "plan rank " << rank << " of " << world << ": " << plan.status().message();
      return out;
    }
    auto file = ProgramFile::from_bytes(plan->program, "rank" + std::to_string(rank) + ".fb");
    if (!file.is_ok()) {
      ADD_FAILURE() << file.status().message();
      return out;
    }
    out.push_back(std::move(file).value());
  }
  return out;
}

void write_programs(const fs::path& dir, const fs::path& model_dir, int world, const ServingSettings& settings,
                    const std::vector<int32_t>& engram_token_map, const PlanTarget& target) {
  fs::create_directories(dir);
  for (const ProgramFile& file : plan_programs(model_dir, world, settings, engram_token_map, target))
    write_bytes(dir / ("rank" + std::to_string(file.program().rank()) + ".fb"), file.bytes());
}

int64_t weight_index(const fb::Program& program, const std::string& name) {
  for (uint32_t i = 0; i < program.weights()->size(); ++i)
    if (program.weights()->Get(i)->name()->str() == name) return i;
  return -1;
}

std::vector<float> dequantized_full_tensor(const fs::path& model_dir, const fb::Program& program, const std::string& name,
                                           int64_t& rows, int64_t& cols) {
  auto pack = PackIndex::open(model_dir.string());
  if (!pack.is_ok()) {
    ADD_FAILURE() << pack.status().message();
    return {};
  }
  auto read_entry = [&](const std::string& tensor) {
    const TensorEntry* entry = pack->find(tensor);
    if (!entry) {
      ADD_FAILURE() << tensor << ": not in the pack";
      return std::vector<uint8_t>{};
    }
    const ShardInfo& shard = pack->shards()[entry->shard];
    std::ifstream in(model_dir / shard.file_name, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(shard.data_start() + entry->data_begin));
    std::vector<uint8_t> bytes(entry->bytes());
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!in) ADD_FAILURE() << tensor << ": cannot read its bytes";
    return bytes;
  };
  const fb::PlannedTensor* planned = program.weights()->Get(static_cast<uint32_t>(weight_index(program, name)));
  const auto encoding = static_cast<Encoding>(planned->encoding());
  const std::vector<int64_t> shape(planned->stored_shape()->begin(), planned->stored_shape()->end());
  rows = shape.size() == 2 ? shape[0] : 1;
  cols = (encoding == Encoding::FP4Rows ? 2 : 1) * shape.back();
  const std::vector<uint8_t> weight = read_entry(name);
  std::vector<uint8_t> scale;
  if (encoding == Encoding::FP8Block || encoding == Encoding::FP4Rows || encoding == Encoding::FP8Rows)
    scale = read_entry(scale_name(name));
  std::vector<float> out(static_cast<size_t>(rows * cols));
  dequantize(encoding, static_cast<DType>(planned->dtype()), weight.data(), scale.data(), rows, cols, out.data());
  return out;
}

std::string dsv41rt_path() {
  const char* carried = std::getenv("DSV41_RT_BINARY");
  return carried && *carried ? carried : DSV41RT_PATH;
}

CommandResult run_dsv41rt(const std::vector<std::string>& args) {
  std::string command = shell_quote(dsv41rt_path());
  for (const auto& arg : args) command += " " + shell_quote(arg);
  return run_command(command);
}

GenerateOptions tiny_generate_options(const fs::path& programs, const std::vector<int32_t>& prompt, int max_tokens,
                                      int64_t segment_rows) {
  GenerateOptions o;
  o.program_dir = programs.string();
  o.model_dir = tiny_pack("release").string();
  o.prompt = prompt;
  o.max_tokens = max_tokens;
  o.segment_rows = segment_rows;
  o.stop_at_eos = false;
  return o;
}

}  // namespace dsv41::test
