// common/kernel_contract.h — the kernels' entry signatures (generated from kernels/ by
// tools/kernel_contract), variant keys, and the check that a call can be bound to its kernel.
//
// A kernel entry is a function template in namespace dsv41k::entry of kernels/<op>.cuh. Its
// template parameters are its compile-time constants (named like the call's constants, dtype_<arg>
// for a buffer's dtype, or format_<arg> for a weight's stored format); its parameters are what the
// runtime passes at launch, in order, each named and typed by the rules of docs/kernels.md. No signature is written by hand
// anywhere else: this table is read from the headers at build time.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"
#include "common/weight_format.h"

namespace dsv41 {

// The typedefs of kernels/kernel_abi.cuh a parameter may have.
enum class ParamType : uint8_t { Rows, Int, Real, Statics, Scratch, State, Weight, WeightList, IntList, Errors };
std::string_view param_type_name(ParamType type);  // "Rows", "Int", ... as spelled in kernel_abi.cuh

struct KernelParam {
  std::string_view name;
  ParamType type;
};

struct KernelContract {
  std::string_view op;                              // = the entry's name = kernels/<op>.cuh
  std::vector<std::string_view> template_params;    // compile-time, in order
  std::vector<KernelParam> params;                  // run-time, in order
};

const std::vector<KernelContract>& kernel_contracts();
const KernelContract* find_contract(std::string_view op);
// Digest of every contract: a program records it, and a runtime built from other kernels refuses it.
uint64_t contract_digest();

// The embedded kernel sources (kernels/*.cuh by file name), as NVRTC's headers.
struct KernelSource {
  std::string_view file_name;
  std::string_view text;
};
const std::vector<KernelSource>& kernel_sources();

// The row class a template parameter named `many_rows` binds to: 1 in phases of more than this many rows
// (prefill segments: the tiled tensor-core bodies), 0 otherwise (decode windows). A kernel with paths
// for both takes it so that each phase's variant compiles one path only: a path's registers then do not
// cap the other's occupancy (docs/perf.md, the sixth session: sparse_attention's decode variants went
// from 128 to 163 registers when its prefill path grew). The launch rules that choose a many_rows path
// use it (kernel_launch_products.cpp tiled, kernel_launch_attention.cpp prefill_attention); the kernels'
// kGemvRows must equal it.
constexpr int64_t kManyRowsAbove = 16;

// The most rows a phase's experts run grouped in one launch (kernels/moe_pairs.cuh kMoeRows, which must
// equal it): the launch rule picks the grouped grid up to it (kernel_launch_moe.cpp), and the emitter
// fuses the shared expert into moe_experts up to it (compiler/emit/phase_emitter_ffn.cpp).
constexpr int64_t kMoeRows = 16;

// What a call's parameters derive from besides the call itself: the phase's rows and the
// declarations of its buffer and weight arguments.
struct CallEnv {
  int64_t rows = 0;
  std::function<const BufferDecl*(const Arg&)> buffer;               // Scratch and State arguments
  std::function<std::vector<int64_t>(const Arg&)> weight_shape;      // Weight arguments (local shape)
  // The stored format (common/weight_format.h) of the weight at a program weight index (a Weight
  // argument's ints[0], each entry of a WeightList); nullopt when unknown. Binds format_<arg>.
  std::function<std::optional<WeightFormat>(int64_t)> weight_format;
};

// One kernel variant: the op with every compile-time constant and the target arch.
struct Variant {
  std::string op;
  std::vector<Constant> template_args;  // in the entry's template parameter order
  std::string arch;                     // e.g. "sm_90a"
  std::string key;  // "linear{in_features=4096,dtype_x=bf16,format_w=fp8_tile32,dtype_out=f32}@sm_90a"
  uint64_t id = 0;                      // hash of the key
  std::string entry;                    // the cubin's extern "C" symbol, "dsv41_<id as 16 hex>"
};

// Binds a call to its kernel: every template parameter and every run-time parameter must be
// satisfiable from the call (docs/kernels.md), and every constant and argument of the call must
// be consumed. A mismatch is refused naming the op and the parameter or argument.
Result<Variant> variant_of(const Call& call, const CallEnv& env, const std::string& arch);

// The NVRTC source of a variant: the op's header plus one extern "C" instantiation.
std::string variant_source(const Variant& variant, int64_t threads_per_block);

// The run-time value of an Int parameter (a call Int argument, a run-time constant, or <arg>_rows).
Result<int64_t> int_param_value(const Call& call, const CallEnv& env, std::string_view name);

}  // namespace dsv41
