// tests/support/test_support.h — helpers every suite shares: unique temp folders, files, running dsv41c, safetensors files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/model_config.h"

namespace dsv41::test {

namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

// The source tree (fixtures live under it) and the built compiler, from the build's definitions.
fs::path source_dir();
fs::path fixture_config_path(const std::string& fixture);  // fixtures/FIXTURE/config.json
std::string dsv41c_path();
// The fixture's config, parsed and validated; a failure is reported and yields a default config.
ModelConfig fixture_config(const std::string& fixture);

// A folder unique to the running test (suite, test, tag, process, counter), created empty and
// removed when the object goes out of scope (kept when DSV41_KEEP_TEST_DIRS is set, for debugging).
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& child) const { return path_ / child; }

 private:
  fs::path path_;
};

std::string read_file(const fs::path& path);
std::vector<uint8_t> read_bytes(const fs::path& path);
void write_file(const fs::path& path, std::string_view text);
void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes);

// A command's exit code (128 + signal when killed) and what it printed.
struct CommandResult {
  std::string command;
  int exit_code = -1;
  std::string out, err;
  // Everything, for failure messages.
  std::string describe() const;
};

std::string shell_quote(const std::string& text);
// Runs `command` through /bin/sh, capturing stdout and stderr separately.
CommandResult run_command(const std::string& command);
// Runs the built dsv41c with `args` (each shell-quoted).
CommandResult run_dsv41c(const std::vector<std::string>& args);

// Whether libcuda.so.1 loads here: tests of the refusals without a driver skip where it does.
bool cuda_driver_installed();

// Writes a synthetic pack for a fixture through `dsv41c synth-pack`; reports a failure.
void make_pack(const fs::path& dir, const std::string& fixture, const std::string& format, int shards,
               bool headers_only = true);

// A safetensors file as bytes: the JSON header and whatever follows it.
struct SafetensorsFile {
  ordered_json header;
  std::string data;
};

// Writes an 8-byte little-endian header length, `header_json` verbatim, then `data`.
void write_safetensors(const fs::path& path, std::string_view header_json, std::string_view data = {});
void write_safetensors(const fs::path& path, const SafetensorsFile& file);
// Reads a well-formed safetensors file (the test's own input); reports a failure otherwise.
SafetensorsFile read_safetensors(const fs::path& path);
// One header entry: {"dtype": ..., "shape": [...], "data_offsets": [begin, end]}.
ordered_json tensor_entry(const std::string& dtype, const std::vector<int64_t>& shape, uint64_t begin, uint64_t end);

}  // namespace dsv41::test
