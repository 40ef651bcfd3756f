// tests/runtime/dsv41rt_cli_test.cpp — the dsv41-rt command line: output formats, logits file, exit codes 0/1/2.
#include <cstring>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "runtime/generate.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41 {
namespace {

TEST(Dsv41rtCli, GeneratePrintsTheLibrarysTokensAndWritesItsLogits) {
  test::TempDir dir("cli");
  const test::fs::path& pack = test::tiny_pack("release");
  test::write_programs(dir / "programs", pack, 2, test::small_settings());
  GenerateOptions o;
  o.program_dir = (dir / "programs").string();
  o.model_dir = pack.string();
  o.prompt = {5, 6, 7};
  o.max_tokens = 4;
  o.stop_at_eos = false;
  auto expected = generate(o);
  ASSERT_TRUE(expected.is_ok()) << expected.status().message();
  std::string ids;
  for (int32_t t : expected->tokens) ids += (ids.empty() ? "" : " ") + std::to_string(t);

  const std::vector<std::string> base = {"generate", o.program_dir, "--model", o.model_dir, "--backend", "cpu",
                                         "--prompt-ids", "5,6,7", "--max-tokens", "4", "--ignore-eos"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return test::run_dsv41rt(args);
  };
  const test::CommandResult plain = with({"--logits-out", (dir / "logits.bin").string()});
  ASSERT_EQ(plain.exit_code, 0) << plain.describe();
  EXPECT_EQ(plain.out, ids + "\n");
  const std::vector<uint8_t> bytes = test::read_bytes(dir / "logits.bin");
  ASSERT_EQ(bytes.size(), expected->logits.size() * 1280 * 4);
  EXPECT_EQ(0, std::memcmp(bytes.data(), expected->logits[0].data(), 1280 * 4));

  const test::CommandResult json = with({"--json", "--segment-rows", "1"});
  ASSERT_EQ(json.exit_code, 0) << json.describe();
  EXPECT_EQ(nlohmann::json::parse(json.out)["tokens"].get<std::vector<int32_t>>(), expected->tokens);

  const test::CommandResult all = with({"--all-logits", "--logits-out", (dir / "all.bin").string()});
  ASSERT_EQ(all.exit_code, 0) << all.describe();
  EXPECT_EQ(test::fs::file_size(dir / "all.bin"), (3 + 3) * 1280 * 4u) << "3 prompt rows, then 3 decode steps";
}

TEST(Dsv41rtCli, ExitCodes) {
  const test::CommandResult help = test::run_dsv41rt({"generate", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.describe();
  EXPECT_NE(help.out.find("Example:"), std::string::npos) << help.describe();

  EXPECT_EQ(test::run_dsv41rt({}).exit_code, 2);
  EXPECT_EQ(test::run_dsv41rt({"generate", "/nowhere", "--model", "/nowhere", "--prompt-ids", "1,x", "--max-tokens", "2"})
                .exit_code,
            2);
  EXPECT_EQ(test::run_dsv41rt({"generate", "/nowhere", "--model", "/nowhere", "--prompt-ids", "1", "--max-tokens", "2",
                               "--backend", "tpu"})
                .exit_code,
            2);

  // --exchange takes device or host only.
  const test::CommandResult exchange = test::run_dsv41rt({"generate", "/nowhere", "--model", "/nowhere", "--prompt-ids",
                                                          "1", "--max-tokens", "2", "--backend", "cuda", "--exchange", "nvlink"});
  EXPECT_EQ(exchange.exit_code, 2) << exchange.describe();
  EXPECT_NE(exchange.err.find("--exchange"), std::string::npos) << exchange.describe();

  const test::CommandResult cuda = test::run_dsv41rt(
      {"generate", "/nowhere", "--model", "/nowhere", "--prompt-ids", "1", "--max-tokens", "2", "--backend", "cuda"});
  EXPECT_EQ(cuda.exit_code, 1) << cuda.describe();
  // The programs are read before the driver is opened (without a driver: "libcuda.so.1: not found").
  EXPECT_EQ(cuda.err, "dsv41-rt: error: /nowhere: not a folder of rank*.fb programs\n");

  const test::CommandResult missing =
      test::run_dsv41rt({"generate", "/nowhere", "--model", "/nowhere", "--prompt-ids", "1", "--max-tokens", "2"});
  EXPECT_EQ(missing.exit_code, 1) << missing.describe();
  EXPECT_EQ(missing.err, "dsv41-rt: error: /nowhere: not a folder of rank*.fb programs\n");
}

}  // namespace
}  // namespace dsv41
