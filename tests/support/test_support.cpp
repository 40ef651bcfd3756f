// tests/support/test_support.cpp — temp folders, file I/O, command capture and safetensors writing for the suites.
#include "tests/support/test_support.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <dlfcn.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace dsv41::test {
namespace {

std::atomic<int> next_serial{0};

// Keeps names of parameterised tests ("Suite/Test/3") usable as file names.
std::string file_safe(std::string text) {
  for (char& c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  return text;
}

fs::path unique_path(const std::string& kind, const std::string& tag) {
  std::string test = "no_test";
  if (const auto* info = testing::UnitTest::GetInstance()->current_test_info())
    test = std::string(info->test_suite_name()) + "." + info->name();
  return fs::path(testing::TempDir()) / file_safe(fmt::format("dsv41_{}_{}{}{}_{}_{}", kind, test, tag.empty() ? "" : "_",
                                                              tag, static_cast<long>(getpid()), next_serial++));
}

}  // namespace

fs::path source_dir() { return DSV41_SOURCE_DIR; }
fs::path fixture_config_path(const std::string& fixture) { return source_dir() / "fixtures" / fixture / "config.json"; }
std::string dsv41c_path() { return DSV41C_PATH; }

ModelConfig fixture_config(const std::string& fixture) {
  const fs::path path = fixture_config_path(fixture);
  auto config = parse_model_config(read_file(path), path.string());
  if (!config.is_ok()) {
    ADD_FAILURE() << "fixture " << fixture << ": " << config.status().message();
    return ModelConfig{};
  }
  return std::move(config).value();
}

TempDir::TempDir(const std::string& tag) : path_(unique_path("dir", tag)) {
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::create_directories(path_, ec);
  if (ec) ADD_FAILURE() << path_ << ": cannot create: " << ec.message();
}

TempDir::~TempDir() {
  if (std::getenv("DSV41_KEEP_TEST_DIRS")) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) ADD_FAILURE() << path << ": cannot open";
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
  const std::string text = read_file(path);
  return std::vector<uint8_t>(text.begin(), text.end());
}

void write_file(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out.flush()) ADD_FAILURE() << path << ": cannot write";
}

void write_bytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

std::string CommandResult::describe() const {
  return fmt::format("command: {}\nexit code: {}\n--- stdout ---\n{}\n--- stderr ---\n{}", command, exit_code, out, err);
}

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

CommandResult run_command(const std::string& command) {
  CommandResult result;
  result.command = command;
  const fs::path capture = unique_path("cmd", "");
  fs::create_directories(capture);
  const fs::path out = capture / "stdout", err = capture / "stderr";
  const std::string line =
      fmt::format("{} >{} 2>{} </dev/null", command, shell_quote(out.string()), shell_quote(err.string()));
  const int status = std::system(line.c_str());
  if (status == -1) result.exit_code = -1;
  else if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = read_file(out);
  result.err = read_file(err);
  std::error_code ec;
  fs::remove_all(capture, ec);
  return result;
}

bool cuda_driver_installed() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library) dlclose(library);
  return library != nullptr;
}

CommandResult run_dsv41c(const std::vector<std::string>& args) {
  std::string command = shell_quote(dsv41c_path());
  for (const auto& arg : args) command += " " + shell_quote(arg);
  return run_command(command);
}

void make_pack(const fs::path& dir, const std::string& fixture, const std::string& format, int shards,
               bool headers_only) {
  std::vector<std::string> args = {"synth-pack", "--config", fixture_config_path(fixture).string(), "--out",
                                   dir.string(), "--format", format, "--shards", std::to_string(shards)};
  if (headers_only) args.push_back("--headers-only");
  const CommandResult r = run_dsv41c(args);
  if (r.exit_code != 0) ADD_FAILURE() << "synth-pack failed\n" << r.describe();
}

void write_safetensors(const fs::path& path, std::string_view header_json, std::string_view data) {
  std::string bytes(8, '\0');
  const uint64_t length = header_json.size();
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
  bytes.append(header_json);
  bytes.append(data);
  write_file(path, bytes);
}

void write_safetensors(const fs::path& path, const SafetensorsFile& file) {
  write_safetensors(path, file.header.dump(), file.data);
}

SafetensorsFile read_safetensors(const fs::path& path) {
  const std::string bytes = read_file(path);
  SafetensorsFile file;
  if (bytes.size() < 8) {
    ADD_FAILURE() << path << ": " << bytes.size() << " bytes, too short for a safetensors file";
    return file;
  }
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(bytes[i]);
  if (length > bytes.size() - 8) {
    ADD_FAILURE() << path << ": header length " << length << " exceeds the file";
    return file;
  }
  file.header = ordered_json::parse(bytes.substr(8, length), nullptr, false);
  if (file.header.is_discarded()) ADD_FAILURE() << path << ": header is not JSON";
  file.data = bytes.substr(8 + length);
  return file;
}

ordered_json tensor_entry(const std::string& dtype, const std::vector<int64_t>& shape, uint64_t begin, uint64_t end) {
  ordered_json entry;
  entry["dtype"] = dtype;
  entry["shape"] = shape;
  entry["data_offsets"] = ordered_json::array({begin, end});
  return entry;
}

}  // namespace dsv41::test
