// runtime/cli/rank_flags.h — the flags that make a generate, serve or bench process one rank of a world of processes (--master, --rank, --world, --connect-timeout-ms), and the rank's backend and peer-failure exit.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "runtime/cli/backend_flags.h"
#include "runtime/dist/rank_process.h"

namespace dsv41::cli {

// Adds the four flags, bound to `options`; returns --master, which the others need (and so may a
// command's own rank-only flags).
CLI::Option* add_rank_flags(CLI::App* cmd, dist::RankProcessOptions& options);

// Another rank failed: this rank can do nothing useful, so it ends at once (from the control
// connection's reader thread) with the documented code and the first failure's reason.
[[noreturn]] void exit_for_peer_failure(int rank, const std::string& reason);

// Completes `options` from the backend flags: --backend cuda opens this rank's GPU (a CudaRankBackend,
// NCCL between ranks; --devices is refused: a rank process runs on one GPU), the CPU backend reads
// `model_dir`; a peer's failure ends the process (exit_for_peer_failure).
Status prepare_rank_process(dist::RankProcessOptions& options, const BackendFlags& backend, const std::string& model_dir,
                            bool time_exchanges);

}  // namespace dsv41::cli
