// runtime/cli/bench_command.cpp — `dsv41-rt bench PROGRAM... [--synthetic-weights SEED | --model DIR] [--master ...]`: flags and printing.
#include "runtime/cli/bench_command.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/program_file.h"
#include "runtime/cli/rank_flags.h"
#include "runtime/gpu/bench_rank.h"
#include "runtime/gpu/bench_report.h"
#include "runtime/gpu/bench_runner.h"

namespace dsv41::cli {
namespace {

struct BenchFlags {
  std::vector<std::string> programs;
  gpu::BenchOptions options;
  bool no_prefill = false, json = false, quiet = false;
  std::string json_out;
  dist::RankProcessOptions rank;  // --master: this process is one rank of a bench world
};

Status run_bench_command(BenchFlags f) {
  if (f.no_prefill) f.options.prefill.clear();
  if (f.quiet) f.options.progress = nullptr;
  std::string lines;  // --json-out: every program's object so far, rewritten whole after each
  int failed = 0;
  const gpu::BenchReportSink print = [&](const gpu::BenchReport& report) -> Status {
    for (const gpu::PhaseMeasure& m : report.phases) failed += !m.error.empty();
    if (f.json)
      std::printf("%s\n", gpu::bench_json(report).dump().c_str());  // one line per program (JSON Lines)
    else
      std::printf("%s\n", gpu::bench_text(report).c_str());
    std::fflush(stdout);
    if (f.json_out.empty()) return Status::ok();
    lines += gpu::bench_json(report).dump() + "\n";
    return write_file_atomic(f.json_out, lines.data(), lines.size()).with_context("--json-out");
  };
  if (!f.rank.master.empty()) {
    if (f.programs.size() != 1)
      return Status::errorf("{} programs with --master: a rank process measures one (the folder of rank*.fb, or its "
                            "own rank{}.fb)", f.programs.size(), f.rank.rank);
    const int rank = f.rank.rank;
    f.rank.on_peer_failure = [rank](const std::string& reason) { exit_for_peer_failure(rank, reason); };
    gpu::BenchOptions options = f.options;
    options.program = f.programs[0];
    DSV41_TRY(gpu::run_bench_as_rank(options, f.rank, print).with_context(fmt::format("rank {}", rank)));
  } else {
    for (const std::string& program : f.programs) {
      gpu::BenchOptions options = f.options;
      options.program = program;
      DSV41_TRY(gpu::run_bench(options, print));
    }
  }
  if (failed > 0) return Status::errorf("{} phase{} failed (see the report)", failed, failed == 1 ? "" : "s");
  return Status::ok();
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "bench",
      "Measures decode and prefill steps of one rank's program on a GPU against the device's read roofline.\n"
      "For each program in turn: measures the roofline (a streaming-read kernel, 16-byte loads on every SM,\n"
      "over --roofline-mib), boots the rank (weights read from --model, or --synthetic-weights), then for\n"
      "each phase decode.r{--rows} and prefill.n{--prefill}: puts every row at --fill cache entries, replays\n"
      "the phase's CUDA graph back to back between CUDA events (median, p10, p90 of --replays), and counts\n"
      "the weight bytes one step reads: the dense weights, the embedding rows of its tokens and only the\n"
      "routed experts its rows select (the router's choices read back in an eager pass). GB/s is those\n"
      "bytes over the median step; 'roofline' is that as a share of the measured read bandwidth.\n"
      "--per-op adds a table of per-call times (CUDA events around each launch of the eager pass), grouped\n"
      "by op, slowest first, and one by call site (each weight-reading product with its bytes, the selected\n"
      "experts' included, against their time at the roofline). A program of a bigger world is measured with --alone: its rank by itself,\n"
      "exchanges without peers (the per-rank case; its logits mean nothing), or with every rank a process\n"
      "(--rank/--world/--master, or `dsv41-rt launch --gpus 0,1 bench DIR ...`): NCCL inside the graphs, each\n"
      "phase replayed exactly --replays times on every rank, rank 0's report printed, and per phase the time\n"
      "of one step's NCCL exchanges (eager pass, each synchronised before and after, host-timed).\n\n"
      "Example (the bench fixture at world 1, release formats, synthetic weights):\n"
      "  dsv41c synth-pack --config fixtures/dsv41-bench/config.json --out /tmp/bench --format release --headers-only\n"
      "  dsv41c plan /tmp/bench --world 1 --slots 16 --target h200 --out /tmp/bench-w1\n"
      "  dsv41-rt bench /tmp/bench-w1/rank0.fb --synthetic-weights 7 --per-op\n"
      "  # world 2, one process per GPU:\n"
      "  dsv41c plan /tmp/bench --world 2 --slots 16 --target h200 --out /tmp/bench-w2\n"
      "  dsv41-rt launch --gpus 0,1 bench /tmp/bench-w2 --synthetic-weights 7 --rows 1,8 --no-prefill");
  cmd->add_option("PROGRAM", f->programs, "one rank's program (rank{N}.fb) or several, measured in turn")->required();
  cmd->add_option("--model", f->options.model_dir, "the model folder the programs were planned from (its shards are read)");
  cmd->add_option("--synthetic-weights", f->options.synthetic_seed,
                  "fill every weight on the device from this seed instead of reading shards (speed does not depend "
                  "on the values; the routing does, a little)");
  cmd->add_option("--backend", f->options.backend, "cuda (the only backend bench measures)")->capture_default_str();
  cmd->add_option("--device", f->options.device, "the CUDA device ordinal")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--rows", f->options.rows, "decode phases to measure, by rows (comma separated)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prefill", f->options.prefill, "prefill phases to measure, by segment rows (comma separated)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--no-prefill", f->no_prefill, "measure no prefill phase");
  cmd->add_option("--fill", f->options.fill,
                  "cache entries before each row's position (decode rows at position FILL; a prefill segment at "
                  "FILL .. FILL+N-1): what attention and the indexer read")
      ->capture_default_str();
  cmd->add_option("--replays", f->options.replays, "timed graph replays per phase (at most; see --phase-seconds)")
      ->capture_default_str();
  cmd->add_option("--warmup", f->options.warmup, "untimed replays before timing (at least one is run: it sizes the run)")
      ->capture_default_str();
  cmd->add_option("--phase-seconds", f->options.phase_seconds,
                  "time budget per phase: fewer replays (never under 3) when --replays would run past it")
      ->capture_default_str();
  cmd->add_flag("--per-op", f->options.per_op, "per-call time tables per phase: by op (counts, share of the step) and by call site (bytes, share of the roofline)");
  cmd->add_flag("--alone", f->options.alone,
                "run one rank of a bigger world by itself: its own compute with exchanges that have no peer (no "
                "logits are claimed)");
  cmd->add_flag("--no-pdl{false}", f->options.programmatic_launch,
                "launch the kernels without programmatic dependent launch (each kernel then starts only after the "
                "previous one has finished; by default the next one is scheduled while the previous drains)");
  cmd->add_flag("--one-lane{false}", f->options.graph_lanes,
                "capture each phase's graph on one stream, every call after the previous one (by default independent "
                "calls, e.g. a layer's kv projection beside its query norm and projection, run side by side on two)");
  cmd->add_option("--roofline-mib", f->options.roofline_mib, "the streaming-read buffer, MiB (far above the L2 cache)")
      ->capture_default_str();
  cmd->add_option("--draft", f->options.draft,
                  "also measure a DSpark round of one sequence with K drafts: the program's smallest Draft phase "
                  "(draft.r{block}) and the verification window (the smallest decode bucket of at least K+1 rows, as the "
                  "runtime takes it), each as one sequence's rows at consecutive positions; the report adds the round's cost "
                  "(draft + verify medians), tokens/s = A / round time for each acceptance length A, and the ratio to "
                  "serial decode.r1 (programs planned with dsv41c plan --draft-tokens; 0: off)")
      ->capture_default_str();
  cmd->add_option("--acceptance", f->options.acceptance,
                  "the acceptance length (tokens a round yields, 1 to K+1) of the headline drafted tokens/s; the "
                  "release's drafter accepts about 3 (docs/perf.md)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print one JSON object per program (JSON Lines) instead of tables");
  cmd->add_option("--json-out", f->json_out, "also write the JSON objects to this file (JSON Lines), whatever is printed");
  cmd->add_flag("--quiet", f->quiet, "no progress on stderr");
  add_rank_flags(cmd, f->rank);
  return [f]() { return run_bench_command(*f); };
}

}  // namespace dsv41::cli
