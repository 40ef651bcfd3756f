// runtime/gpu/device_layout.h — what one rank allocates on the device (weights, pointer and integer
// tables, state, arena, statics, error words), the upload of its weights, and each call's bindings.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/program_calls.h"
#include "common/program_file.h"
#include "common/status.h"
#include "runtime/cpu/weight_store.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/phase_graphs.h"

namespace dsv41::gpu {

struct DeviceLayout {
  // Weights: today the CPU WeightStore's fp32 values (dequantized at load), each 256-byte aligned,
  // at weight_offset[program weight index] (-1: not named by any call).
  cpu::WeightStore host_weights;
  std::vector<int64_t> weight_offset;
  uint64_t weight_bytes = 0;
  // Device arrays a call's WeightList (weight pointers) or IntList (long long) argument points to,
  // shared by every call with the same list.
  std::map<std::pair<ArgKind, std::vector<int64_t>>, uint64_t> table_offset;
  uint64_t table_bytes = 0;
  uint64_t state_bytes = 0;    // slots x state_bytes_per_slot
  uint64_t arena_bytes = 0;    // the largest phase arena: phases of a rank run one at a time
  uint64_t statics_bytes = 0;  // the largest phase's statics block
  uint64_t error_bytes = 0;    // one int32 word per call of the largest phase
  uint64_t total() const {
    return weight_bytes + table_bytes + state_bytes + arena_bytes + statics_bytes + error_bytes;
  }
};

// Reads the weights the calls name from the shards of `model_dir` (after checking the folder is the
// pack the program was planned from) and sizes everything else.
Result<DeviceLayout> plan_device_layout(const ProgramFile& program, const CallLists& calls, const std::string& model_dir);

// The program's ledger beside what this session allocates, line by line.
std::string ledger_lines(const fb::Program& program, const DeviceLayout& layout);

// Copies the weights into `weights` and fills the tables (weight pointers into `weights`), on
// `stream`; the caller synchronises it before `layout` (the host copies) goes.
Status upload_weights(CudaDriver& driver, const DeviceLayout& layout, DeviceBuffer& weights, DeviceBuffer& tables,
                      CUstream stream);

struct DeviceAddresses {
  CUdeviceptr weights = 0, tables = 0, state = 0, arena = 0, statics = 0, errors = 0;
};

// Every call of `phase` bound to device addresses. `host_exchanges`: the world's exchanges run on the
// host between graph segments (exchange_sum keeps its kernel, which stores the summed x into out;
// exchange_gather's host step writes out itself).
Result<PhaseGraphs> bind_phase(CudaDriver& driver, KernelLauncher& launcher, const fb::Program& program,
                               const CallLists& calls, const Phase& phase, const DeviceLayout& layout,
                               const DeviceAddresses& at, bool host_exchanges);

}  // namespace dsv41::gpu
