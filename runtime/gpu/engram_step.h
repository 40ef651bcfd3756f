// runtime/gpu/engram_step.h — Engram on the CUDA backend: a step's table rows, hashed on the host from the
// step's tokens and each slot's lookback, gathered from the host tables into pinned memory and copied to
// the device on the rank's stream ahead of the replay. The tables themselves never reach the device.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/engram_hash.h"
#include "common/status.h"
#include "runtime/cpu/host_tables.h"
#include "runtime/gpu/cuda_driver.h"
#include "runtime/gpu/device_layout.h"
#include "schemas/program_generated.h"

namespace dsv41::gpu {

// What the step buffers take, from the program alone (before anything is allocated or mapped).
struct EngramStepPlan {
  struct Table {
    int64_t weight = -1;  // program weight index of the FP8-row table
    int64_t layer = 0;    // transformer layer (messages)
    int64_t rows = 0;
    std::string name;
  };
  Call hash;                  // the engram_hash call (every phase emits the same one)
  std::vector<Table> tables;  // one per Engram layer, in column order (first_column / columns)
  int64_t dim = 0;            // values per table row (engram_head_dim)
  int64_t columns = 0;        // row ids per layer and phase row
  int64_t width = 0;          // row ids per phase row, every layer's
  int64_t capacity = 0;       // the largest phase's rows
  bool active() const { return width > 0; }
  uint64_t row_bytes() const { return static_cast<uint64_t>(dim + dim / 32); }  // e4m3 codes and UE8M0 scales
  uint64_t copy_per_row() const { return static_cast<uint64_t>(width) * row_bytes(); }
  uint64_t codes_bytes() const { return static_cast<uint64_t>(capacity * width * dim); }
  uint64_t scales_offset() const;  // where the scales start in the pinned and device buffers
  uint64_t ids_offset() const;     // where the device buffer's row ids start
  uint64_t pinned_bytes() const { return ids_offset(); }
  uint64_t device_bytes() const;
};

// The plan of a program's Engram calls; a program without them gets an inactive plan. Refuses gather
// calls that disagree with each other or with the hash (columns, row width, table per column block).
Result<EngramStepPlan> plan_engram_step(const fb::Program& program, const CallLists& calls);

class EngramStep {
 public:
  // Maps the host tables read-only from `model_dir`'s shards (the page cache is shared by every rank
  // process of the host), or, with a synthetic seed, maps nothing and makes each row a step reads
  // from the seed exactly as --synthetic-weights would fill the table; allocates the pinned and device
  // buffers and writes the device row ids (row r, column k reads step row r·width + k) on `stream`.
  static Result<std::unique_ptr<EngramStep>> create(const fb::Program& program, EngramStepPlan plan, CudaDriver& driver,
                                                    int slots, const std::string& model_dir,
                                                    std::optional<uint64_t> synthetic_seed, CUstream stream);
  ~EngramStep();
  EngramStep(const EngramStep&) = delete;
  EngramStep& operator=(const EngramStep&) = delete;

  // What every engram_gather call is bound to instead of its host table.
  EngramBinding binding() const;
  // For the statics of one step of `phase` (already checked): every active row's ids from its
  // tokens and its slot's lookback, each row copied from its table into pinned memory, then one
  // asynchronous copy to the device on `stream` (the replay that follows on it reads them). Waits for
  // `stream` first: the pinned rows of the previous step may still be in flight. Then the slots'
  // lookback takes this step's tokens, as the graph's engram_lookback does on the device. A row id
  // outside its table is refused naming the phase row, the layer and the column.
  Status stage(const Phase& phase, const std::vector<int32_t>& statics, CUstream stream);
  // A slot's sequence ended: its lookback is zeroed, as the device state is.
  void reset_slot(int slot);
  uint64_t last_copy_bytes() const { return last_copy_bytes_; }
  // One line: where the rows come from and what the buffers take.
  std::string describe() const;

 private:
  EngramStep(CudaDriver& driver, EngramStepPlan plan) : driver_(driver), plan_(std::move(plan)) {}
  void copy_row(size_t table, int64_t id, uint8_t* codes, uint8_t* scales) const;

  CudaDriver& driver_;
  EngramStepPlan plan_;
  EngramHashCall hash_;                                   // points into plan_.hash
  cpu::HostTables mapped_;                                // empty when synthesised
  std::vector<cpu::HostTableView> views_;                 // per table, mapped
  std::vector<std::pair<uint64_t, uint64_t>> synthetic_;  // per table: codes' and scales' keys
  DeviceBuffer device_;
  uint8_t* pinned_ = nullptr;
  std::vector<int32_t> lookback_;  // slots × window raw token ids, entry p mod window
  std::vector<int64_t> ids_;       // one position's row ids (scratch)
  uint64_t last_copy_bytes_ = 0;
};

}  // namespace dsv41::gpu
