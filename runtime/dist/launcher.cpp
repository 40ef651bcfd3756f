// runtime/dist/launcher.cpp — fork/exec of the rank processes, signal forwarding, and the wait that keeps the first failure.
#include "runtime/dist/launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/ranges.h>

#include "runtime/dist/socket.h"

namespace dsv41::dist {
namespace {

volatile sig_atomic_t g_pending_signal = 0;

void remember_signal(int signal) { g_pending_signal = signal; }

std::string describe_exit(int rank, pid_t pid, int status) {
  if (WIFSIGNALED(status))
    return fmt::format("rank {} (pid {}) was killed by signal {} ({})", rank, pid, WTERMSIG(status),
                       strsignal(WTERMSIG(status)));
  return fmt::format("rank {} (pid {}) exited with code {}", rank, pid, WEXITSTATUS(status));
}

int exit_code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

}  // namespace

Result<LaunchOutcome> launch(const LaunchOptions& o) {
  if (o.world < 1) return Status::errorf("--world {}: must be 1 or more", o.world);
  if (!o.gpus.empty() && static_cast<int>(o.gpus.size()) != o.world)
    return Status::errorf("--gpus {}: {} devices for world {}", fmt::join(o.gpus, ","), o.gpus.size(), o.world);
  if (o.command.empty()) return Status::error("launch: no command to run (e.g. generate PROGRAM_DIR --model DIR ...)");
  int port = o.master_port;
  if (port == 0) {
    DSV41_ASSIGN_OR_RETURN(port, pick_free_port());
  }
  const std::string master = fmt::format("{}:{}", o.master_host, port);

  struct sigaction action {};
  action.sa_handler = remember_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {}, old_term {};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);

  std::vector<pid_t> pids(o.world, -1);
  std::vector<bool> running(o.world, false);
  Status spawn_failure;
  for (int rank = 0; rank < o.world; ++rank) {
    std::vector<std::string> args = {o.executable};
    args.insert(args.end(), o.command.begin(), o.command.end());
    for (std::string a : {std::string("--rank"), std::to_string(rank), std::string("--world"), std::to_string(o.world),
                          std::string("--master"), master})
      args.push_back(a);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string device = o.gpus.empty() ? std::string() : std::to_string(o.gpus[rank]);
    const pid_t pid = fork();
    if (pid == 0) {
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      if (!device.empty()) setenv("CUDA_VISIBLE_DEVICES", device.c_str(), 1);
      execv(o.executable.c_str(), argv.data());
      std::fprintf(stderr, "dsv41-rt launch: rank %d: cannot run %s: %s\n", rank, o.executable.c_str(), strerror(errno));
      _exit(127);
    }
    if (pid < 0) {
      spawn_failure = Status::errorf("launch: cannot start rank {}: fork: {}", rank, strerror(errno));
      break;
    }
    pids[rank] = pid;
    running[rank] = true;
  }

  LaunchOutcome outcome;
  bool failed = !spawn_failure.is_ok();
  auto kill_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(failed ? 0 : o.grace_ms);
  bool killed = false;
  for (;;) {
    if (const int signal = g_pending_signal) {
      g_pending_signal = 0;
      for (int r = 0; r < o.world; ++r)
        if (running[r]) kill(pids[r], signal);
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < o.world; ++r) {
        if (pids[r] != pid) continue;
        running[r] = false;
        if (exit_code_of(status) != 0 && outcome.exit_code == 0) {
          outcome.exit_code = exit_code_of(status);
          outcome.reason = describe_exit(r, pid, status);
          if (!failed) kill_deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.grace_ms);
          failed = true;
        }
      }
      continue;
    }
    if (pid < 0 && errno != EINTR) break;  // no children left
    if (std::find(running.begin(), running.end(), true) == running.end()) break;
    if (failed && !killed && std::chrono::steady_clock::now() > kill_deadline) {
      for (int r = 0; r < o.world; ++r)
        if (running[r]) kill(pids[r], SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (!spawn_failure.is_ok()) return spawn_failure;
  return outcome;
}

}  // namespace dsv41::dist
