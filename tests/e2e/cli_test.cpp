// tests/e2e/cli_test.cpp — the built dsv41c: exit codes 0/1/2, refusal text, inspect --json shares, byte-identical plans.
#include <gtest/gtest.h>

#include "common/pack_index.h"
#include "common/program_file.h"
#include "tests/support/test_support.h"

namespace dsv41 {
namespace {
using test::CommandResult;
using test::fs::path;
using test::run_dsv41c;
using test::TempDir;
using json = nlohmann::json;

void expect_refused(const CommandResult& r, const std::vector<std::string>& parts) {
  EXPECT_EQ(r.exit_code, 1) << r.describe();
  // Warnings (an Engram config's, for one) may come first; the error line follows them.
  size_t at = 0;
  while (r.err.compare(at, 17, "dsv41c: warning: ") == 0 && r.err.find('\n', at) != std::string::npos)
    at = r.err.find('\n', at) + 1;
  EXPECT_EQ(r.err.compare(at, 15, "dsv41c: error: "), 0) << r.describe();
  for (const auto& part : parts) EXPECT_NE(r.err.find(part), std::string::npos) << "\"" << part << "\"\n" << r.describe();
}

void expect_usage_error(const CommandResult& r, const std::string& mention) {
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_NE(r.err.find(mention), std::string::npos) << "\"" << mention << "\"\n" << r.describe();
}

// `dsv41c plan PACK --world W [extra...] --out OUT`, with the tiny fixture's context limit.
CommandResult plan(const path& pack, int world, const path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"plan", pack.string(), "--world", std::to_string(world), "--out", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_dsv41c(args);
}

json inspect_json(const path& program) {
  const CommandResult r = run_dsv41c({"inspect", program.string(), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.describe();
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

std::vector<std::string> files_of(const path& dir) {
  std::vector<std::string> names;
  for (const auto& e : test::fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Cli, UsageErrorsExitWithTwo) {
  TempDir dir;
  const std::string pack = dir.path().string();
  expect_usage_error(run_dsv41c({}), "subcommand");
  expect_usage_error(run_dsv41c({"frobnicate"}), "subcommand");
  expect_usage_error(run_dsv41c({"plan", pack}), "--world");
  expect_usage_error(run_dsv41c({"plan", "--world", "2"}), "MODEL_DIR");
  expect_usage_error(run_dsv41c({"plan", pack, "--world", "2", "--frobnicate"}), "--frobnicate");
  expect_usage_error(run_dsv41c({"plan", pack, "--world", "two"}), "two");
  expect_usage_error(run_dsv41c({"inspect"}), "PROGRAM");
  expect_usage_error(run_dsv41c({"synth-pack", "--out", pack}), "--config");
  expect_usage_error(run_dsv41c({"synth-pack", "--config", "c.json", "--out", pack, "--format", "q4"}), "q4");
}

TEST(Cli, HelpAndVersionExitWithZero) {
  const CommandResult help = run_dsv41c({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.describe();
  for (const char* command : {"plan", "inspect", "synth-pack"}) EXPECT_NE(help.out.find(command), std::string::npos);
  const CommandResult plan_help = run_dsv41c({"plan", "--help"});
  EXPECT_EQ(plan_help.exit_code, 0);
  EXPECT_NE(plan_help.out.find("--memory-gib"), std::string::npos);
  const CommandResult version = run_dsv41c({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find(fmt::format("program format {}", kProgramFormatVersion)), std::string::npos)
      << version.out;
}

// Tiny world 3 with no settings flags: three uneven ranks at the default context (the model's 4096,
// below 65,536, said in the summary); inspect --json reports each share and a self-consistent ledger.
TEST(Cli, TinyWorld3PlansWithDefaultsAndInspectsEveryRank) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 2);
  ASSERT_FALSE(PackIndex::open((dir / "pack").string())->check_data_present().is_ok()) << "expected a header-only pack";
  const CommandResult r = plan(dir / "pack", 3, dir / "out");
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(files_of(dir / "out"), (std::vector<std::string>{"rank0.fb", "rank1.fb", "rank2.fb"}));
  EXPECT_NE(r.out.find("rank 1 of world 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("context 4096 tokens: the default, the smaller of 65536 and max_position_embeddings 4096"),
            std::string::npos)
      << r.out;
  const std::vector<json> groups = {{0, 3}, {3, 6}, {6, 8}}, heads = {{0, 6}, {6, 12}, {12, 16}};
  const std::vector<json> experts = {{0, 256}, {256, 512}, {512, 640}}, vocab = {{0, 512}, {512, 896}, {896, 1280}};
  uint64_t split_total = 0;
  for (int rank = 0; rank < 3; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const json j = inspect_json(dir / "out" / fmt::format("rank{}.fb", rank));
    EXPECT_EQ(j["world"], 3);
    EXPECT_EQ(j["rank"], rank);
    EXPECT_EQ(j["settings"]["context"], 4096);
    EXPECT_EQ(j["share"]["groups"], groups[rank]);
    EXPECT_EQ(j["share"]["heads"], heads[rank]);
    EXPECT_EQ(j["share"]["expert_cols"], experts[rank]);
    EXPECT_EQ(j["share"]["vocab_rows"], vocab[rank]);
    const json& w = j["weights"];
    const json& m = j["memory"];
    EXPECT_GT(w["tensors"].get<uint64_t>(), 100u);
    EXPECT_GE(w["ranges"].get<uint64_t>(), w["tensors"].get<uint64_t>());
    EXPECT_EQ(w["bytes"].get<uint64_t>(), w["replicated"].get<uint64_t>() + w["split"].get<uint64_t>() + w["host"].get<uint64_t>());
    // The device holds what it reads, each stored tensor rounded up to 256 bytes.
    const uint64_t read = w["replicated"].get<uint64_t>() + w["split"].get<uint64_t>();
    EXPECT_GE(m["weights"].get<uint64_t>(), read);
    EXPECT_LE(m["weights"].get<uint64_t>(), read + 255 * w["tensors"].get<uint64_t>());
    EXPECT_EQ(m["total"].get<uint64_t>(),
              m["weights"].get<uint64_t>() + m["state"].get<uint64_t>() + m["activations"].get<uint64_t>());
    EXPECT_GT(m["state"].get<uint64_t>(), 0u);
    EXPECT_GT(m["activations"].get<uint64_t>(), 0u);
    split_total += w["split"].get<uint64_t>();
  }
  // World 1 reads every byte; the ranks of world 3 split exactly what world 1 reads as split.
  ASSERT_EQ(plan(dir / "pack", 1, dir / "one", {"--context", "4096", "--quiet"}).exit_code, 0);
  const json one = inspect_json(dir / "one" / "rank0.fb");
  EXPECT_EQ(one["weights"]["bytes"].get<uint64_t>(), PackIndex::open((dir / "pack").string())->total_data_bytes());
  EXPECT_EQ(one["weights"]["split"].get<uint64_t>(), split_total);
  const CommandResult text = run_dsv41c({"inspect", (dir / "out" / "rank2.fb").string()});
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find(fmt::format("program format {}", kProgramFormatVersion)), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("rank 2 of world 3"), std::string::npos) << text.out;
}

// The release, header-only: world 4 splits experts 640/640/512/512 and vocabulary 32384/32384/32256/32256.
TEST(Cli, ReleaseWorld4SharesAndARankPlannedAloneIsIdentical) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-release", "release", 8);
  const CommandResult r = plan(dir / "pack", 4, dir / "all", {"--target", "h200", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.out, "") << "--quiet";
  // Engram is emitted; the header-only pack has no tokenizer.json: --quiet or not, plan says the
  // token map was not built (the runtime refuses such programs' Engram calls).
  EXPECT_NE(r.err.find("tokenizer.json: absent, so the Engram token map is not built"), std::string::npos) << r.err;
  const std::vector<json> experts = {{0, 640}, {640, 1280}, {1280, 1792}, {1792, 2304}};
  const std::vector<json> vocab = {{0, 32384}, {32384, 64768}, {64768, 97024}, {97024, 129280}};
  for (int rank = 0; rank < 4; ++rank) {
    const json j = inspect_json(dir / "all" / fmt::format("rank{}.fb", rank));
    EXPECT_EQ(j["share"]["expert_cols"], experts[rank]) << rank;
    EXPECT_EQ(j["share"]["vocab_rows"], vocab[rank]) << rank;
    EXPECT_EQ(j["share"]["heads"], json({16 * rank, 16 * rank + 16})) << rank;
    EXPECT_LE(j["memory"]["total"].get<uint64_t>(), j["memory"]["limit"].get<uint64_t>()) << rank;
    // The ledger counts the kernels' module globals: one module per variant, each read from its cubin.
    uint64_t globals = 0;
    for (const json& k : j["kernels"]) globals += k["module_globals"].get<uint64_t>();
    EXPECT_GT(globals, 0u) << rank << ": the split kernels keep partials in __device__ arrays";
    EXPECT_EQ(j["memory"]["kernel_globals"].get<uint64_t>(), globals) << rank;
  }
  ASSERT_EQ(plan(dir / "pack", 4, dir / "one", {"--target", "h200", "--rank", "1", "--quiet"}).exit_code, 0);
  EXPECT_EQ(files_of(dir / "one"), (std::vector<std::string>{"rank1.fb"}));
  EXPECT_TRUE(test::read_bytes(dir / "one" / "rank1.fb") == test::read_bytes(dir / "all" / "rank1.fb"))
      << "rank 1 planned alone differs from rank 1 of --rank all";
}

// Replaces the first `stated` of PACK/config.json by `replacement`; false when it is not there.
bool restate(const test::fs::path& pack, const std::string& stated, const std::string& replacement) {
  std::string config = test::read_file(pack / "config.json");
  const size_t at = config.find(stated);
  if (at == std::string::npos) return false;
  config.replace(at, stated.size(), replacement);
  test::write_file(pack / "config.json", config);
  return true;
}

// With the release's tokenizer.json beside the pack, plan builds the Engram token map first and refuses
// a count other than engram_compressed_vocab_size, naming both (docs/model.md "Engram" says why this
// fixture's tokenizer gives 99,510, not the release's 99,092); --accept-engram-map-count plans with a
// loud warning instead.
TEST(Cli, ReleaseTokenMapOfAnotherCountIsRefusedNamingBothNumbers) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-release", "release", 8);
  test::fs::copy_file(test::fs::path(DSV41_SOURCE_DIR) / "fixtures/dsv41-release/tokenizer.json", dir / "pack" / "tokenizer.json");
  const CommandResult r = plan(dir / "pack", 4, dir / "out", {"--quiet"});
  expect_refused(r, {"tokenizer.json: the Engram token map of ids 0..129279 has 99510 compressed ids, but config "
                     "engram_compressed_vocab_size is 99092"});
  EXPECT_FALSE(test::fs::exists(dir / "out" / "rank0.fb"));
  const CommandResult accepted = plan(dir / "pack", 1, dir / "accepted", {"--quiet", "--accept-engram-map-count"});
  ASSERT_EQ(accepted.exit_code, 0) << accepted.describe();
  EXPECT_NE(accepted.err.find("has 99510 compressed ids, but config engram_compressed_vocab_size is 99092 (accepted "
                              "by request"),
            std::string::npos)
      << accepted.err;
  EXPECT_TRUE(test::fs::exists(dir / "accepted" / "rank0.fb"));
}

// The tiny Engram fixture with its tokenizer plans at world 3 without a warning (Engram is emitted);
// the same pack stating another compressed vocabulary is refused before anything is planned.
TEST(Cli, TinyEngramPlansAndRefusesAnotherTokenMapCount) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny-engram", "bf16", 2);
  test::fs::copy_file(test::fs::path(DSV41_SOURCE_DIR) / "fixtures/dsv41-tiny-engram/tokenizer.json",
                      dir / "pack" / "tokenizer.json");
  const CommandResult r = plan(dir / "pack", 3, dir / "out", {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  ASSERT_TRUE(restate(dir / "pack", "\"engram_compressed_vocab_size\": 1070", "\"engram_compressed_vocab_size\": 1071"));
  expect_refused(plan(dir / "pack", 3, dir / "again", {"--quiet"}),
                 {"the Engram token map of ids 0..1279 has 1070 compressed ids, but config "
                  "engram_compressed_vocab_size is 1071"});
}

// A config whose engram_num_embeddings disagrees with the pack's table rows is refused naming both
// shapes (a config whose primes do not sum to it: tests/common/engram_hash_test.cpp).
TEST(Cli, EngramTableRowsOtherThanTheConfigAreRefusedNamingBoth) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny-engram", "release", 1);
  ASSERT_TRUE(restate(dir / "pack", "6126,", "6127,"));
  expect_refused(plan(dir / "pack", 1, dir / "out", {"--quiet"}),
                 {"layers.1.engram.embed.weight: shape [6126, 32], expected [6127, 32]"});
}

TEST(Cli, ReleaseWorld9IsRefusedNamingOGroups) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-release", "release", 8);
  expect_refused(plan(dir / "pack", 9, dir / "out"), {"world 9: more ranks than o_groups 8"});
  EXPECT_FALSE(test::fs::exists(dir / "out" / "rank0.fb"));
}

TEST(Cli, ReleaseWorld1OnH200IsRefusedWithTheLedger) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-release", "release", 8);
  expect_refused(plan(dir / "pack", 1, dir / "out", {"--target", "h200"}),
                 {"rank 0 of world 1: needs", "the limit is 131.32 GiB (target h200 device memory)",
                  "weights, replicated", "weights, split", "device total", "host tables"});
  EXPECT_FALSE(test::fs::exists(dir / "out" / "rank0.fb"));
}

TEST(Cli, TooSmallMemoryLimitIsRefusedPrintingTheLedger) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 1);
  expect_refused(plan(dir / "pack", 2, dir / "out", {"--context", "4096", "--memory-gib", "0.001"}),
                 {"rank 0 of world 2: needs", "the limit is 0.00 GiB (--memory-gib)", "weights, replicated",
                  "weights, split", "state", "activations", "device total"});
  EXPECT_FALSE(test::fs::exists(dir / "out" / "rank0.fb"));
}

// Bad flag values are refusals (exit 1) that name the flag and its value.
TEST(Cli, BadFlagValuesAreRefusedByName) {
  TempDir dir;
  const path pack = dir / "pack", out = dir / "out";
  test::make_pack(pack, "dsv41-tiny", "bf16", 1);
  const std::vector<std::string> ctx = {"--context", "4096"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), ctx.begin(), ctx.end());
    return extra;
  };
  expect_refused(plan(pack, 2, out, with({"--target", "tpu"})), {"--target tpu: unknown target", "h200"});
  expect_refused(plan(pack, 3, out, with({"--rank", "5"})), {"--rank 5: outside 0..2 of world 3"});
  expect_refused(plan(pack, 3, out, with({"--rank", "x"})), {"--rank x: expected a rank number or \"all\""});
  expect_refused(plan(pack, 2, out, with({"--memory-gib", "-1"})), {"--memory-gib -1: must be positive"});
  expect_refused(plan(pack, 2, out, {"--context", "0"}), {"--context 0: must be at least 1"});
  expect_refused(plan(pack, 2, out, {"--context", "4097"}), {"--context 4097", "max_position_embeddings 4096"});
  expect_refused(plan(pack, 2, out, with({"--decode-rows", "4,2"})), {"--decode-rows 2: after 4"});
  expect_refused(plan(pack, 2, out, with({"--prefill-rows", "0"})), {"--prefill-rows 0: must be between 1 and 65536"});
  expect_refused(plan(pack, 0, out, ctx), {"world 0: must be at least 1"});
  expect_refused(plan(pack, -1, out, ctx), {"world -1"});
  expect_refused(plan(pack, 6, out, ctx), {"world 6: more ranks than the 5 expert blocks"});
  expect_refused(plan(dir / "absent", 1, out, ctx), {"config.json: cannot open", (dir / "absent").string()});
  EXPECT_FALSE(test::fs::exists(out / "rank0.fb"));
}

TEST(Cli, InspectRefusesWhatIsNotAProgram) {
  TempDir dir;
  test::write_file(dir / "notes.fb", "these are not the bytes you are looking for");
  expect_refused(run_dsv41c({"inspect", (dir / "notes.fb").string()}), {"not a dsv41 program", "notes.fb"});
  expect_refused(run_dsv41c({"inspect", (dir / "absent.fb").string()}), {"absent.fb: cannot open"});
  test::make_pack(dir / "pack", "dsv41-tiny", "bf16", 1);
  ASSERT_EQ(plan(dir / "pack", 1, dir / "out", {"--context", "4096", "--quiet"}).exit_code, 0);
  std::vector<uint8_t> bytes = test::read_bytes(dir / "out" / "rank0.fb");
  bytes.resize(bytes.size() / 2);
  test::write_bytes(dir / "half.fb", bytes);
  expect_refused(run_dsv41c({"inspect", (dir / "half.fb").string(), "--json"}), {"half.fb"});
}

// Same inputs, same bytes: across runs, output folders and pack locations.
TEST(Cli, PlansAreByteIdenticalAcrossRunsFoldersAndPackLocations) {
  TempDir dir;
  test::make_pack(dir / "pack", "dsv41-tiny", "release", 3);
  test::fs::create_directories(dir / "moved");
  test::fs::copy(dir / "pack", dir / "moved" / "pack", test::fs::copy_options::recursive);
  const std::vector<std::string> ctx = {"--context", "2048", "--quiet"};
  ASSERT_EQ(plan(dir / "pack", 4, dir / "a", ctx).exit_code, 0);
  ASSERT_EQ(plan(dir / "pack", 4, dir / "b", ctx).exit_code, 0);
  ASSERT_EQ(plan(dir / "moved" / "pack", 4, dir / "c", ctx).exit_code, 0);
  for (int rank = 0; rank < 4; ++rank) {
    const std::string name = fmt::format("rank{}.fb", rank);
    const std::vector<uint8_t> a = test::read_bytes(dir / "a" / name);
    EXPECT_FALSE(a.empty());
    EXPECT_TRUE(a == test::read_bytes(dir / "b" / name)) << name << ": second run differs";
    EXPECT_TRUE(a == test::read_bytes(dir / "c" / name)) << name << ": pack in another folder differs";
  }
  // synth-pack itself is deterministic too, so a regenerated pack plans the same.
  test::make_pack(dir / "again", "dsv41-tiny", "release", 3);
  for (const auto& name : files_of(dir / "pack"))
    EXPECT_TRUE(test::read_bytes(dir / "pack" / name) == test::read_bytes(dir / "again" / name)) << name;
}

}  // namespace
}  // namespace dsv41
