// runtime/cli/rank_flags.cpp — --master/--rank/--world/--connect-timeout-ms, and a rank process's backend (CPU or one GPU with NCCL).
#include "runtime/cli/rank_flags.h"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/dist/control.h"
#include "runtime/gpu/cuda_rank_backend.h"

namespace dsv41::cli {

CLI::Option* add_rank_flags(CLI::App* cmd, dist::RankProcessOptions& o) {
  CLI::Option* master = cmd->add_option("--master", o.master,
                                        "HOST:PORT of rank 0's control connection: run only --rank of the world as "
                                        "this process (rank 0 listens there; `dsv41-rt launch` passes it); PROGRAM may "
                                        "be the folder of rank*.fb (each rank reads its own) or this rank's .fb");
  cmd->add_option("--rank", o.rank, "this process's rank (with --master)")->needs(master)->check(CLI::NonNegativeNumber);
  cmd->add_option("--world", o.world, "the number of rank processes (with --master)")->needs(master)
      ->check(CLI::PositiveNumber);
  cmd->add_option("--connect-timeout-ms", o.connect_timeout_ms, "how long ranks wait for each other to join (with --master)")
      ->needs(master)
      ->capture_default_str();
  return master;
}

void exit_for_peer_failure(int rank, const std::string& reason) {
  std::fprintf(stderr, "dsv41-rt: rank %d: stopped: another rank failed: %s\n", rank, reason.c_str());
  std::fflush(stderr);
  std::_Exit(dist::kExitRankFailed);
}

Status prepare_rank_process(dist::RankProcessOptions& o, const BackendFlags& backend, const std::string& model_dir,
                            bool time_exchanges) {
  if (!backend.devices.empty())
    return Status::error("--devices with --master: a rank process runs on one GPU (--device, or `launch --gpus 0,1` "
                         "for one process per GPU)");
  o.model_dir = model_dir;
  if (backend.backend == "cuda") {  // NCCL between the ranks' GPUs
    gpu::CudaRankOptions cuda;
    cuda.cuda = cuda_backend_options(backend, model_dir);
    cuda.time_exchanges = time_exchanges;
    auto opened = gpu::CudaRankBackend::open(cuda);
    if (!opened.is_ok()) return opened.status().with_context(fmt::format("rank {}", o.rank));
    o.backend = std::move(opened).value();
  }
  const int rank = o.rank;
  o.on_peer_failure = [rank](const std::string& reason) { exit_for_peer_failure(rank, reason); };
  return Status::ok();
}

}  // namespace dsv41::cli
