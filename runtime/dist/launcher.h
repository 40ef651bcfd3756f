// runtime/dist/launcher.h — starts one rank process per GPU (or per CPU rank) on this host, forwards signals, reports the first failure.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41::dist {

struct LaunchOptions {
  std::string executable;            // the dsv41-rt to start (normally /proc/self/exe)
  std::vector<std::string> command;  // e.g. {"generate", "PROGRAMS", "--model", "DIR", ...}
  int world = 1;
  std::vector<int> gpus;             // empty: CPU ranks; else rank i sees only GPU gpus[i] (CUDA_VISIBLE_DEVICES)
  std::string master_host = "127.0.0.1";
  int master_port = 0;               // 0: a free loopback port
  int grace_ms = 3000;               // after the first failure, how long the others get before SIGKILL
};

struct LaunchOutcome {
  int exit_code = 0;   // 0, or the first failing rank's exit code (128 + signal when it was killed)
  std::string reason;  // empty, or "rank 1 (pid 4242) was killed by signal 9 (Killed)"
};

// Starts rank i as `executable command... --rank i --world W --master HOST:PORT`, forwards SIGINT and
// SIGTERM to every rank while they run, and waits for all. Ranks still running `grace_ms` after the
// first failure are killed (they should have stopped themselves within 2 s).
Result<LaunchOutcome> launch(const LaunchOptions& options);

}  // namespace dsv41::dist
