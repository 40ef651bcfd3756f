// runtime/cli/generate_command.cpp — `dsv41-rt generate PROGRAM_DIR --model DIR --prompt-ids 5,6,7 --max-tokens N`.
#include "runtime/cli/generate_command.h"

#include <bit>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/dist/rank_process.h"
#include "runtime/generate.h"
#include "runtime/cli/backend_flags.h"
#include "runtime/cli/rank_flags.h"

namespace dsv41::cli {
namespace {

static_assert(std::endian::native == std::endian::little, "--logits-out writes the host's floats as little-endian");

struct GenerateFlags {
  GenerateOptions options;
  bool ignore_eos = false, json = false;
  std::string logits_out;
  // Set by --master: this process is one rank of a world of processes.
  dist::RankProcessOptions rank_process;
  BackendFlags backend;
  bool time_exchanges = false;
};

Status write_logits(const std::string& path, const std::vector<std::vector<float>>& rows) {
  std::vector<float> all;
  for (const auto& row : rows) all.insert(all.end(), row.begin(), row.end());
  return write_file_atomic(path, all.data(), all.size() * sizeof(float)).with_context("--logits-out");
}

Status run_generate(GenerateFlags f) {
  f.options.backend = backend_factory(f.backend, f.options.model_dir);
  f.options.stop_at_eos = !f.ignore_eos;
  const bool as_rank = !f.rank_process.master.empty();
  if (f.time_exchanges && !(as_rank && f.backend.backend == "cuda" && f.backend.eager))
    return Status::error("--time-exchanges: only for --backend cuda --eager ranks as processes (with --master)");
  GenerateResult result;
  if (as_rank) {
    // Ranks as processes: the CPU backend exchanges over the control connection, CUDA over NCCL.
    f.rank_process.program = f.options.program_dir;
    f.rank_process.purpose = "generate";
    DSV41_TRY(prepare_rank_process(f.rank_process, f.backend, f.options.model_dir, f.time_exchanges));
    if (f.rank_process.step_pause_ms > 0)  // a test is watching for the decode to be under way
      f.rank_process.on_decode_step = [](int step) { std::fprintf(stderr, "dsv41-rt: rank 0: decode step %d\n", step); };
    const int rank = f.rank_process.rank;
    auto ran = dist::generate_as_rank(f.rank_process, f.options);
    if (!ran.is_ok()) return ran.status().with_context(fmt::format("rank {}", rank));
    result = std::move(ran).value();
    if (rank != 0) return Status::ok();  // rank 0 prints and writes the result
  } else {
    DSV41_ASSIGN_OR_RETURN(result, generate(f.options));
  }
  if (!f.logits_out.empty()) DSV41_TRY(write_logits(f.logits_out, result.logits));
  const DraftStats& d = result.drafting;
  if (f.json && f.options.draft_tokens > 0)
    std::printf("{\"tokens\": [%s], \"draft_rounds\": %lld, \"drafted\": %lld, \"accepted\": %lld}\n",
                fmt::format("{}", fmt::join(result.tokens, ", ")).c_str(), static_cast<long long>(d.rounds),
                static_cast<long long>(d.drafted), static_cast<long long>(d.accepted));
  else if (f.json)
    std::printf("{\"tokens\": [%s]}\n", fmt::format("{}", fmt::join(result.tokens, ", ")).c_str());
  else
    std::printf("%s\n", fmt::format("{}", fmt::join(result.tokens, " ")).c_str());
  if (!f.json && f.options.draft_tokens > 0) {  // on stderr: stdout stays the token list
    std::fprintf(stderr, "dsv41-rt: drafting by %s: %lld rounds, %lld drafted, %lld accepted, acceptance length %.2f\n",
                 result.drafter.c_str(), static_cast<long long>(d.rounds), static_cast<long long>(d.drafted), static_cast<long long>(d.accepted),
                 d.acceptance_length());
  }
  return Status::ok();
}

}  // namespace

Runner add_generate_command(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "generate",
      "Greedy generation for one prompt of token ids, every rank of the world a thread of this process.\n"
      "Reads PROGRAM_DIR/rank0.fb .. rank{W-1}.fb (written by `dsv41c plan MODEL_DIR --world W --out DIR`),\n"
      "loads each rank's weight ranges from the shards in --model, prefills the prompt in segments of a\n"
      "planned prefill size, then decodes token by token (argmax, ties to the lower id) until --max-tokens\n"
      "or the config's eos_token_id. Prints the generated ids, space separated.\n\n"
      "Example:\n"
      "  dsv41c synth-pack --config fixtures/dsv41-tiny/config.json --out /tmp/tiny\n"
      "  dsv41c plan /tmp/tiny --world 2 --context 256 --prefill-rows 8 --out /tmp/tiny-w2\n"
      "  dsv41-rt generate /tmp/tiny-w2 --model /tmp/tiny --prompt-ids 5,6,7 --max-tokens 8");
  cmd->add_option("PROGRAM_DIR", f->options.program_dir, "folder with rank0.fb .. rank{W-1}.fb of one world")->required();
  cmd->add_option("--model", f->options.model_dir, "the model folder the programs were planned from (shards, config.json)")
      ->required();
  add_backend_flags(cmd, f->backend);
  cmd->add_option("--prompt-ids", f->options.prompt, "prompt token ids, comma separated (e.g. 5,6,7)")
      ->delimiter(',')
      ->required();
  cmd->add_option("--max-tokens", f->options.max_tokens, "tokens to generate at most (prompt + this must fit the context)")
      ->check(CLI::NonNegativeNumber)
      ->required();
  cmd->add_option("--segment-rows", f->options.segment_rows,
                  "prefill segment size: 0 takes the first planned size, 1 goes token by token through decode.r1, "
                  "anything else must be a planned --prefill-rows size")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  add_draft_tokens_flag(cmd, f->options.draft_tokens, "on stderr (--json: in the object)");
  cmd->add_flag("--ignore-eos", f->ignore_eos, "keep generating past eos_token_id until --max-tokens");
  cmd->add_flag("--json", f->json, "print {\"tokens\": [...]} instead of space-separated ids");
  cmd->add_option("--logits-out", f->logits_out,
                  "write the logits as float32 little-endian rows of vocab_size values: the prompt's last row, then "
                  "one row per decode step (every prompt row first with --all-logits)");
  cmd->add_flag("--all-logits", f->options.all_logits, "keep the logits of every prompt row, not only the last");
  // One rank per process (docs/distributed.md); `dsv41-rt launch` passes --master, --rank and --world to each rank.
  CLI::Option* master = add_rank_flags(cmd, f->rank_process);
  cmd->add_flag("--logits-digests", f->rank_process.logits_digests,
                "every rank prints a digest of its logits after each phase on stderr (ranks hold the same bits; "
                "with --master)")
      ->needs(master);
  cmd->add_flag("--time-exchanges", f->time_exchanges,
                "cuda --eager: time every NCCL exchange (synchronising around it) and print the total per rank at "
                "the end (with --master)")
      ->needs(master);
  cmd->add_option("--step-pause-ms", f->rank_process.step_pause_ms,
                  "rank 0 pauses before each decode step and says so on stderr (tests of fail-fast; with --master)")
      ->needs(master);
  return [f]() { return run_generate(*f); };
}

}  // namespace dsv41::cli
