// runtime/gpu/device_layout.h — what one rank allocates on the device (stored weights, weight and integer
// tables, state, arena, statics, error words), the weight load, and each call's bindings.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/program_calls.h"
#include "common/program_file.h"
#include "common/status.h"
#include "common/weight_format.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/phase_graphs.h"
#include "runtime/gpu/weight_loader.h"

namespace dsv41::gpu {

struct DeviceLayout {
  // Weights in their stored formats (weights and scales as the pack holds them, the rank's share):
  // one region, each tensor at stored.offset[program index], kDeviceTensorAlignment apart.
  StoredLayout stored;
  std::vector<int64_t> scale_of;                   // program weight index -> its scale's index, or -1
  std::vector<std::optional<WeightFormat>> format; // per program tensor (none for scales)
  // Device arrays a call's WeightList (DeviceWeight, 16 bytes each) or IntList (long long)
  // argument points to, shared by every call with the same list.
  std::map<std::pair<ArgKind, std::vector<int64_t>>, uint64_t> table_offset;
  uint64_t table_bytes = 0;
  uint64_t state_bytes = 0;    // slots x state_bytes_per_slot
  uint64_t arena_bytes = 0;    // the largest phase arena: phases of a rank run one at a time
  uint64_t statics_bytes = 0;  // the largest phase's statics block
  uint64_t error_bytes = 0;    // one int32 word per call of the largest phase
  uint64_t exchange_bytes = 0; // captured exchanges only (NCCL, or the device copies between rank threads on one GPU): the largest exchange's all-gathered partials
  // Engram (runtime/gpu/engram_step.h): a step's table rows and their ids on the device; the pinned
  // host buffer they are gathered into; the bytes copied per phase row.
  uint64_t engram_bytes = 0, engram_pinned_bytes = 0, engram_copy_per_row = 0;
  // The kernels' module globals (__device__ variables: the program's per-kernel module_globals).
  // The driver allocates them when the session loads its modules, before the free-memory check, so
  // they are not in total().
  uint64_t module_globals = 0;
  uint64_t total() const {
    return stored.total + table_bytes + state_bytes + arena_bytes + statics_bytes + error_bytes + exchange_bytes +
           engram_bytes;
  }
};

// Sizes everything from the program alone (no file is read).
Result<DeviceLayout> plan_device_layout(const ProgramFile& program, const CallLists& calls);

// The staging a captured exchange needs (bytes): the largest exchange of any phase, all-gathered:
// world × rows × width floats for exchange_sum, rows × Σ widths for exchange_gather.
uint64_t exchange_staging_bytes(const CallLists& calls, int world);

// The program's ledger beside what this session allocates, line by line.
std::string ledger_lines(const fb::Program& program, const DeviceLayout& layout);

// Fills `weights` (layout.stored.total bytes) with the stored bytes: read from the shards of
// `model_dir`, or, with a `synthetic_seed`, generated from it (no file read). Returns what it moved.
Result<LoadStats> load_weights(CudaDriver& driver, const fb::Program& program, const DeviceLayout& layout,
                               DeviceBuffer& weights, const std::string& model_dir,
                               std::optional<uint64_t> synthetic_seed, const LoadOptions& options);

// Fills the tables (DeviceWeight entries pointing into `weights`) on `stream` and waits for it.
Status upload_tables(CudaDriver& driver, const DeviceLayout& layout, const DeviceBuffer& weights, DeviceBuffer& tables,
                     CUstream stream);

// Where the Engram step puts a step's rows (runtime/gpu/engram_step.h). Every engram_gather reads
// them instead of the host table it names: its ids from `ids` (row r, column k: r·width + k, its own
// place) and its rows from the step table {codes, scales} of `rows` rows, which is also the table's
// row count its bounds check sees. rows 0: no Engram.
struct EngramBinding {
  CUdeviceptr ids = 0, codes = 0, scales = 0;
  int64_t rows = 0;
};

struct DeviceAddresses {
  CUdeviceptr weights = 0, tables = 0, state = 0, arena = 0, statics = 0, errors = 0;
  CUdeviceptr exchange = 0;  // captured exchanges' staging
  EngramBinding engram;
};

// How a world's exchanges run: none to make (world 1: each call's kernel alone), on the host between
// graph segments (exchange_sum keeps its kernel, which stores the summed x into out; exchange_gather's
// host step writes out itself), or captured (enqueued before the call's kernel; exchange_gather's
// kernel reads the rank-major staging as its x and permutes it into out).
enum class ExchangeBinding : uint8_t { None, Host, Captured };

// Every call of `phase` bound to device addresses.
Result<PhaseGraphs> bind_phase(CudaDriver& driver, KernelLauncher& launcher, const fb::Program& program,
                               const CallLists& calls, const Phase& phase, const DeviceLayout& layout,
                               const DeviceAddresses& at, ExchangeBinding exchanges);

}  // namespace dsv41::gpu
