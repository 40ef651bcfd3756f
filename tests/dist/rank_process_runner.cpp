// tests/dist/rank_process_runner.cpp — fork/exec of one dsv41-rt rank, and waiting for it with a limit.
#include "tests/dist/rank_process_runner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::test {

void RankProcess::start(const std::vector<std::string>& args, const fs::path& err_path,
                        const std::string& visible_devices) {
  err = err_path;
  write_file(err_path, "");
  pid = fork();
  if (pid == 0) {
    FILE* f = freopen(err_path.c_str(), "a", stderr);
    (void)f;
    FILE* o = freopen("/dev/null", "w", stdout);
    (void)o;
    if (!visible_devices.empty()) setenv("CUDA_VISIBLE_DEVICES", visible_devices.c_str(), 1);
    std::vector<std::string> all = {dsv41rt_path()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
}

bool RankProcess::wait(int limit_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(limit_ms);
  while (Clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ended = Clock::now();
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return false;
}

int RankProcess::exit_code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

std::vector<std::string> rank_args(std::vector<std::string> args, int rank, int world, int port) {
  for (std::string a : {std::string("--rank"), std::to_string(rank), std::string("--world"), std::to_string(world),
                        std::string("--master"), "127.0.0.1:" + std::to_string(port)})
    args.push_back(a);
  return args;
}

}  // namespace dsv41::test
