// runtime/cli/launch_command.cpp — `dsv41-rt launch [--world W | --gpus 0,1] COMMAND...`: flags in, dist::launch, the first failure out.
#include "runtime/cli/launch_command.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cli/id_list.h"
#include "runtime/dist/launcher.h"

namespace dsv41::cli {
namespace {

struct LaunchFlags {
  dist::LaunchOptions options;
  int world = 0;
  std::string gpus;
  CLI::App* command = nullptr;
};

int run_launch(LaunchFlags& f) {
  if (!f.gpus.empty()) {
    auto gpus = parse_id_list("--gpus", f.gpus, "a GPU ordinal", 9999);
    if (!gpus.is_ok()) {
      std::fprintf(stderr, "dsv41-rt launch: error: %s\n", gpus.status().message().c_str());
      return 2;
    }
    f.options.gpus.assign(gpus->begin(), gpus->end());
  }
  f.options.command = f.command->remaining();
  f.options.world = f.world > 0 ? f.world : static_cast<int>(f.options.gpus.size());
  if (f.options.world == 0) {
    std::fprintf(stderr, "dsv41-rt launch: error: give --world W (CPU ranks) or --gpus 0,1,...\n");
    return 2;
  }
  f.options.executable = "/proc/self/exe";
  auto outcome = dist::launch(f.options);
  if (!outcome.is_ok()) {
    std::fprintf(stderr, "dsv41-rt launch: error: %s\n", outcome.status().message().c_str());
    return 1;
  }
  if (outcome->exit_code != 0)
    std::fprintf(stderr, "dsv41-rt launch: first failure: %s\n", outcome->reason.c_str());
  return outcome->exit_code;
}

}  // namespace

CodeRunner add_launch_command(CLI::App& app) {
  auto f = std::make_shared<LaunchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "launch",
      "Starts one rank process per GPU (--gpus) or per CPU rank (--world) on this host, each running\n"
      "`dsv41-rt COMMAND... --rank N --world W --master 127.0.0.1:PORT`, forwards SIGINT and SIGTERM to\n"
      "them, and exits with the first failing rank's code (docs/distributed.md).\n\n"
      "Examples:\n"
      "  dsv41-rt launch --world 2 generate /tmp/tiny-w2 --model /tmp/tiny --prompt-ids 5,6,7 --max-tokens 8\n"
      "  # one process per GPU, exchanging over NCCL inside the CUDA graphs (programs planned --target h200):\n"
      "  dsv41-rt launch --gpus 0,1 generate /tmp/tiny-w2 --model /tmp/tiny --prompt-ids 5,6,7 --max-tokens 8 "
      "--backend cuda");
  cmd->prefix_command();  // everything from COMMAND on belongs to the ranks
  cmd->add_option("--world", f->world, "CPU ranks to start (one process each)")->check(CLI::PositiveNumber);
  // One token, split here: a list option would also swallow COMMAND and its arguments.
  cmd->add_option("--gpus", f->gpus, "GPU ordinals, comma separated (0,1): rank i sees only the i-th");
  cmd->add_option("--master-port", f->options.master_port, "rank 0's control port on 127.0.0.1 (0: a free one)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--grace-ms", f->options.grace_ms,
                  "after the first failure, how long the other ranks get to stop before SIGKILL")
      ->capture_default_str();
  f->command = cmd;
  return [f]() { return run_launch(*f); };
}

}  // namespace dsv41::cli
