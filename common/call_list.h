// common/call_list.h — the model as data: phases of calls over named buffers, weights and per-step statics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace dsv41 {

// A planned buffer. Scratch buffers live in a phase's arena at `offset`; state buffers live in
// each slot's state block at `offset` (the same layout for every slot).
struct BufferDecl {
  std::string name;
  DType dtype = DType::F32;  // BF16, F32 or I32
  std::vector<int64_t> shape;
  uint64_t offset = 0, bytes = 0;
};

enum class ArgKind : uint8_t {
  Scratch,     // ints[0]: index into the phase's buffers
  State,       // ints[0]: index into the program's state buffers
  Statics,     // the per-step statics block (see StaticsField)
  Weight,      // ints[0]: index into the program's weights (the weight, never its scale)
  WeightList,  // ints: weight indices (e.g. every expert's w1)
  Int,         // ints[0]: a run-time integer
  Float,       // real: a run-time float (eps, theta, scales)
  IntList,     // ints: run-time integers (e.g. every rank's vocabulary width)
};

struct Arg {
  std::string name;
  ArgKind kind = ArgKind::Int;
  std::vector<int64_t> ints;
  double real = 0.0;
};

// Compile-time constants: together with the op (and the target) they name a kernel variant.
struct Constant {
  std::string name;
  int64_t value = 0;
};

// How a call launches its kernel: chosen and bound-checked at plan time (compiler/kernels/kernel_plan.h).
struct KernelLaunch {
  int32_t variant = -1;  // index into the rank's kernels; -1: not bound (--target none)
  int64_t grid[3] = {1, 1, 1};
  int64_t block = 0;
  int64_t dynamic_shared = 0;
};

struct Call {
  std::string op;
  std::vector<Constant> constants;
  std::vector<Arg> args;
  KernelLaunch launch;
  int64_t constant(const std::string& name) const;  // aborts when absent: the emitter always sets them
  const Arg& arg(const std::string& name) const;
  const Arg* find_arg(const std::string& name) const;  // nullptr when an optional argument is absent
};

enum class PhaseKind : uint8_t { Decode, Prefill };

// One launchable unit: R rows through the whole forward. Rows may belong to different sequences;
// which slot and position each row has comes from the statics block at run time.
struct Phase {
  std::string name;  // "decode.r4", "prefill.n2048"
  PhaseKind kind = PhaseKind::Decode;
  int64_t rows = 0;
  std::vector<BufferDecl> buffers;
  uint64_t arena_bytes = 0;
  std::vector<Call> calls;
};

// The statics block: int32 [rows, kStaticsFields], written before each run of a phase.
enum StaticsField : int { kStaticToken = 0, kStaticSlot, kStaticPosition, kStaticFirstRow, kStaticsFields };
// kStaticSlot < 0 marks an unused row. kStaticFirstRow is the phase row holding the same sequence's
// first row in this step: rows of one sequence are consecutive and have consecutive positions.

constexpr uint64_t kBufferAlignment = 256;

}  // namespace dsv41
