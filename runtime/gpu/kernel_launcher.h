// runtime/gpu/kernel_launcher.h — loads kernel cubins and launches one call: the kernel's parameters are
// marshalled in the order of its contract (common/kernel_contract.h, docs/kernels.md) from device
// addresses the caller binds by argument name, and grid, block and dynamic shared memory come from
// the call's KernelLaunch (set at plan time by compiler/kernels/kernel_plan.h).
//
// Weights are bound in their stored formats (docs/kernels.md "Weights"; no fp32 copy exists on the
// device). Per Weight argument name, `LaunchBindings::weights` holds a DeviceWeight {data, scales}:
//   data   — the rank's local share of the stored tensor, exactly the bytes of the weight plan's byte
//            runs for that tensor concatenated in run order (a strided input-column slice becomes a
//            dense row-major [rows, local stored cols]); the program's local_shape and dtype describe it.
//   scales — the same for its scale tensor (NAME.scale, F8_E8M0, local_shape [⌈rows/32⌉, ⌈cols/32⌉]
//            for fp8_tile32, [rows, cols/32] for fp4_row32 / fp8_row32); 0 for F32 / BF16 weights.
// Each is its own allocation, aligned to kDeviceTensorAlignment (common/weight_format.h): what the
// memory ledger counts. A WeightList argument binds the device address of an array of DeviceWeight
// (16 bytes each: data then scales, kernels/kernel_abi.cuh's Weight), one per listed weight in the
// call's order. The format itself is a template constant of the variant (format_<arg> in its key),
// so a rank's kernels follow its pack; CallEnv::weight_format must report it for planning/launching.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/kernel_contract.h"
#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::gpu {

// A State parameter: slot 0's copy of the buffer, the distance between two slots' copies and their count
// (kernels/kernel_abi.cuh's State, passed by value).
struct DeviceState {
  CUdeviceptr base = 0;
  int64_t slot_stride = 0;
  int64_t slots = 0;  // copies allocated; kernels refuse a statics slot at or above it
};

// A Weight parameter (kernels/kernel_abi.cuh's Weight, passed by value): the stored bytes of the
// rank's local share and, for scaled formats, of its scale tensor (0 otherwise).
struct DeviceWeight {
  CUdeviceptr data = 0;
  CUdeviceptr scales = 0;
};

// What a call's arguments are bound to on the device, by argument name. An optional argument the
// call does not have is passed as a null pointer; an argument the call has must be bound here.
struct LaunchBindings {
  int64_t rows = 0;        // the phase's R (Rows)
  CUdeviceptr statics = 0; // int32 [R, 4] (Statics)
  CUdeviceptr errors = 0;  // the call's int32 error word (Errors; 0 passes a null pointer: no reports)
  std::map<std::string, CUdeviceptr> scratch;       // Scratch arguments
  std::map<std::string, DeviceState> state;         // State arguments
  std::map<std::string, DeviceWeight> weights;      // Weight arguments, stored format (see the top)
  std::map<std::string, CUdeviceptr> weight_lists;  // WeightList: a device array of DeviceWeight
  std::map<std::string, CUdeviceptr> int_lists;     // IntList: a device array of long long
};

// The marshalled parameters of one launch: one value per contract parameter, and the pointer array
// cuLaunchKernel takes (kernelParams).
class KernelParams {
 public:
  KernelParams() = default;
  KernelParams(const KernelParams&) = delete;  // pointers() points into this object's storage
  KernelParams& operator=(const KernelParams&) = delete;
  KernelParams(KernelParams&&) = default;
  KernelParams& operator=(KernelParams&&) = default;

  size_t size() const { return names_.size(); }
  const std::string& name(size_t i) const { return names_[i]; }
  ParamType type(size_t i) const { return types_[i]; }
  // The bytes of parameter i as the kernel receives them (8 bytes, 4 for Real, 16 for Weight, 24 for State).
  const void* value(size_t i) const { return slots_[i].bytes; }
  size_t value_size(size_t i) const;
  void** pointers();

  void add(std::string name, ParamType type, const void* bytes, size_t size);

 private:
  struct alignas(16) Slot {
    unsigned char bytes[32];  // the largest parameter, State, is 24 bytes
  };
  std::vector<std::string> names_;
  std::vector<ParamType> types_;
  std::vector<Slot> slots_;
  std::vector<void*> pointers_;
};

// The parameters of `call`'s kernel in contract order: Rows → bindings.rows; Statics, Errors →
// their pointers; Scratch / Weight / WeightList / IntList → the bound pointer (null when an
// optional argument is absent); Weight → {data, scales}; State → {base, slot_stride, slots}; Int → int_param_value(call, env, name);
// Real → the call's Float argument as float. Refuses an op without a contract, or an argument the
// call has but `bindings` lacks, naming the op and the argument.
Result<KernelParams> marshal_params(const Call& call, const CallEnv& env, const LaunchBindings& bindings);

class KernelLauncher {
 public:
  explicit KernelLauncher(CudaDriver& driver) : driver_(driver) {}
  ~KernelLauncher();
  KernelLauncher(const KernelLauncher&) = delete;
  KernelLauncher& operator=(const KernelLauncher&) = delete;

  // Loads a cubin (cuModuleLoadData) and finds its extern "C" entry. Kernels are numbered in load
  // order: load a program's kernels in its order and call.launch.variant indexes them.
  // `name_for_errors` (the variant key) names the kernel in failures.
  Result<int32_t> load(const std::vector<uint8_t>& cubin, const std::string& entry, const std::string& name_for_errors);
  size_t size() const { return kernels_.size(); }

  // Launches `call` with kernel `kernel` on `stream` (null: the context's default stream), grid,
  // block and dynamic shared memory from call.launch. When the kernel's static shared memory plus
  // the launch's dynamic shared memory exceed the default 48 KiB, the kernel's dynamic shared
  // memory limit (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) is raised first. With programmatic
  // dependent launch on (runtime/gpu/programmatic_launch.h) it launches through cuLaunchKernelEx with
  // programmatic stream serialization. Does not synchronise.
  Status launch(int32_t kernel, const Call& call, const CallEnv& env, const LaunchBindings& bindings,
                CUstream stream = nullptr);
  Status launch(const Call& call, const CallEnv& env, const LaunchBindings& bindings, CUstream stream = nullptr) {
    return launch(call.launch.variant, call, env, bindings, stream);
  }

 private:
  struct Loaded {
    CUmodule module = nullptr;
    CUfunction function = nullptr;
    std::string name;
    int64_t static_shared = 0;        // bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
    int64_t max_dynamic_shared = -1;  // the limit set on the function; -1: the default (48 KiB with static)
  };
  CudaDriver& driver_;
  std::vector<Loaded> kernels_;
};

}  // namespace dsv41::gpu
