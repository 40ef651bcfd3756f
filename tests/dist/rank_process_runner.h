// tests/dist/rank_process_runner.h — one dsv41-rt rank process started by a test (stderr in a file, optional CUDA_VISIBLE_DEVICES), and the flags that make a process one rank.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/test_support.h"

namespace dsv41::test {

struct RankProcess {
  pid_t pid = -1;
  fs::path err;
  int status = 0;
  std::chrono::steady_clock::time_point ended;

  // Runs the built dsv41-rt with `args`, stderr into `err_path` (created first, so a test may read it
  // at once), stdout discarded; `visible_devices` non-empty: CUDA_VISIBLE_DEVICES for the child.
  void start(const std::vector<std::string>& args, const fs::path& err_path, const std::string& visible_devices = "");
  // Waits up to `limit_ms`; false (and the process killed) when it is still running.
  bool wait(int limit_ms);
  int exit_code() const;
  std::string stderr_text() const { return read_file(err); }
};

// `args` + --rank R --world W --master 127.0.0.1:PORT.
std::vector<std::string> rank_args(std::vector<std::string> args, int rank, int world, int port);

}  // namespace dsv41::test
