// runtime/cli/backend_flags.cpp — --backend cpu|cuda and the CUDA backend's options, as one factory; --draft-tokens.
#include "runtime/cli/backend_flags.h"

#include "runtime/gpu/cuda_backend.h"

namespace dsv41::cli {

void add_backend_flags(CLI::App* cmd, BackendFlags& flags) {
  cmd->add_option("--backend", flags.backend,
                  "cpu (reference kernels) or cuda (the program's cubins; every rank a thread on --device, or with "
                  "--master one rank process per GPU exchanging over NCCL; boot reports on stderr)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--device", flags.device,
                  "cuda: the CUDA device ordinal every rank uses (with --master: this rank's; `launch --gpus` "
                  "shows each rank only its own GPU, as 0)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--devices", flags.devices,
                  "cuda: one GPU per rank, all threads of this process: rank r runs on the r-th ordinal "
                  "(e.g. --devices 0,1 for world 2); they exchange over NCCL inside the graphs (--exchange host: through host memory)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber)
      ->excludes("--device");
  cmd->add_option("--synthetic-weights", flags.synthetic_seed,
                  "cuda: fill every weight on the device from this seed instead of reading the shards (the "
                  "release shapes run without their files; the tokens mean nothing); Engram's host tables are "
                  "then made row by row from the seed as a step reads them, nothing mapped");
  cmd->add_flag("--eager", flags.eager, "cuda: launch every call on each step instead of replaying captured CUDA graphs");
  cmd->add_option("--exchange", flags.exchange,
                  "cuda, ranks as threads: device (inside the graphs: ranks on one GPU share one graph per phase, each "
                  "exchange device copies and a rank-ordered sum; with --devices, NCCL between the threads) or host "
                  "(every exchange through host memory, between graph segments); the boot report names the one that runs")
      ->check(CLI::IsMember({"device", "host"}))
      ->capture_default_str();
}

gpu::CudaBackendOptions cuda_backend_options(const BackendFlags& flags, const std::string& model_dir) {
  gpu::CudaBackendOptions cuda;
  cuda.model_dir = model_dir;
  cuda.device = flags.device;
  cuda.devices = flags.devices;
  cuda.eager = flags.eager;
  cuda.synthetic_seed = flags.synthetic_seed;
  cuda.exchange = flags.exchange == "host" ? gpu::CudaBackendOptions::Exchange::Host : gpu::CudaBackendOptions::Exchange::Device;
  return cuda;
}

BackendFactory backend_factory(const BackendFlags& flags, const std::string& model_dir) {
  if (flags.backend != "cuda") return {};
  const gpu::CudaBackendOptions cuda = cuda_backend_options(flags, model_dir);
  return [cuda](int world) -> Result<std::unique_ptr<Backend>> {
    DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(world, cuda));
    return std::unique_ptr<Backend>(std::move(backend));
  };
}

void add_draft_tokens_flag(CLI::App* cmd, int64_t& draft_tokens, const std::string& metrics) {
  cmd->add_option("--draft-tokens", draft_tokens,
                  "drafts per round and stream, verified exactly so the tokens equal serial decoding's, greedy or "
                  "sampled (0: serial; at most the programs' dsv41c plan --draft-tokens). Drafts come from the model's "
                  "DSpark blocks when the programs have Draft phases, else from prompt lookup; the acceptance is "
                  "reported " + metrics)
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

}  // namespace dsv41::cli
