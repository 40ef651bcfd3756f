// runtime/cli/backend_flags.h — the flags that choose a backend (--backend, --device, --devices, --eager, --synthetic-weights, --exchange) and how it runs (--draft-tokens), shared by generate and serve.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/gpu/cuda_backend.h"
#include "runtime/rank_session.h"

namespace dsv41::cli {

struct BackendFlags {
  std::string backend = "cpu";
  int device = 0;
  std::vector<int> devices;  // --devices: rank r of the world on devices[r]
  bool eager = false;
  std::optional<uint64_t> synthetic_seed;
  std::string exchange = "device";  // --exchange device|host
};

// Adds the six flags to `cmd`, bound to `flags` (which must outlive parsing).
void add_backend_flags(CLI::App* cmd, BackendFlags& flags);

// Adds --draft-tokens (drafts per round, verified exactly) to `cmd`; `metrics` says where the
// acceptance is reported (generate: stderr; serve: /metrics).
void add_draft_tokens_flag(CLI::App* cmd, int64_t& draft_tokens, const std::string& metrics);

// The CUDA backend's options the flags give (also for a CUDA rank process).
gpu::CudaBackendOptions cuda_backend_options(const BackendFlags& flags, const std::string& model_dir);

// The factory the flags choose for a model folder; empty for the CPU backend (the callers' default).
BackendFactory backend_factory(const BackendFlags& flags, const std::string& model_dir);

}  // namespace dsv41::cli
