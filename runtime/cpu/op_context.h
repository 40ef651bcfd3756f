// runtime/cpu/op_context.h — what a CPU op sees while it runs one call: typed views of its buffers and weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/numeric_formats.h"
#include "common/status.h"

namespace dsv41::cpu {

// A buffer of BF16, F32 or I32 values. Reads give fp32 (or int); writes to BF16 round to nearest even.
struct TensorView {
  uint8_t* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numel() const;
  float get(int64_t i) const;
  void set(int64_t i, float value) const;  // BF16: stores bf16_round(value)
  int32_t get_int(int64_t i) const;        // I32 only
  void set_int(int64_t i, int32_t value) const;
};

// The statics block: int32 [rows, kStaticsFields].
struct StaticsView {
  const int32_t* data = nullptr;
  int64_t rows = 0;
  int32_t field(int64_t row, StaticsField f) const { return data[row * kStaticsFields + f]; }
  int32_t token(int64_t row) const { return field(row, kStaticToken); }
  int32_t slot(int64_t row) const { return field(row, kStaticSlot); }
  int32_t position(int64_t row) const { return field(row, kStaticPosition); }
  int32_t first_row(int64_t row) const { return field(row, kStaticFirstRow); }
  bool active(int64_t row) const { return slot(row) >= 0; }
};

// A weight dequantized to fp32 at load, in the rank's local shape.
struct WeightView {
  const float* data = nullptr;
  std::vector<int64_t> shape;
  std::string name;
};

// A host-resident table (Engram) in its stored format: e4m3 codes [rows, dim] and UE8M0 scales
// [rows, dim/32], memory-mapped read-only from the shards (runtime/cpu/host_tables.h).
struct HostTableView {
  const uint8_t* codes = nullptr;
  const uint8_t* scales = nullptr;
  int64_t rows = 0, dim = 0;
  std::string name;
};

// All ranks of a world call these collectively, in the same order; every rank gets the same bits.
class Exchange {
 public:
  virtual ~Exchange() = default;
  // out = x(rank 0) + x(rank 1) + ... in rank order, n floats.
  virtual void sum(int rank, const float* x, int64_t n, float* out) = 0;
  // Concatenates each rank's rows: x is [rows, widths[rank]], out is [rows, Σ widths].
  virtual void gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) = 0;
};

// Built by the session for each call; ops reach their arguments by name (see common/op_set.cpp).
class OpContext {
 public:
  virtual ~OpContext() = default;
  virtual const Call& call() const = 0;
  virtual const StaticsView& statics() const = 0;
  virtual TensorView scratch(const std::string& arg) const = 0;
  // A per-slot state buffer of the given slot.
  virtual TensorView state(const std::string& arg, int slot) const = 0;
  virtual WeightView weight(const std::string& arg) const = 0;
  virtual std::vector<WeightView> weights(const std::string& arg) const = 0;
  // A Weight argument naming a host-resident table; codes null when it is not one (or not mapped).
  virtual HostTableView host_table(const std::string& arg) const {
    (void)arg;
    return {};
  }
  virtual Exchange& exchange() const = 0;
  virtual int rank() const = 0;
  virtual int world() const = 0;

  int64_t constant(const std::string& name) const { return call().constant(name); }
  bool has(const std::string& arg) const { return call().find_arg(arg) != nullptr; }
  double real(const std::string& arg) const { return call().arg(arg).real; }
  int64_t integer(const std::string& arg) const { return call().arg(arg).ints.at(0); }
  const std::vector<int64_t>& ints(const std::string& arg) const { return call().arg(arg).ints; }
};

using OpFunction = Status (*)(const OpContext& context);
// The CPU implementation of an op, or nullptr.
OpFunction find_cpu_op(const std::string& op);

}  // namespace dsv41::cpu
