// runtime/gpu/kernel_launcher.cpp — parameter marshalling in contract order, module loading, launches.
#include "runtime/gpu/kernel_launcher.h"

#include <cstring>
#include <limits>

#include "runtime/gpu/programmatic_launch.h"

namespace dsv41::gpu {
namespace {

// kernels/kernel_abi.cuh's State, as the kernel receives it by value.
struct StateParam {
  uint64_t base;
  long long slot_stride;
  long long slots;
};
static_assert(sizeof(StateParam) == 24, "State is { char* base; long long slot_stride; long long slots; }");
// kernels/kernel_abi.cuh's Weight.
struct WeightParam {
  uint64_t data;
  uint64_t scales;
};
static_assert(sizeof(WeightParam) == 16 && sizeof(DeviceWeight) == 16, "Weight is { const void* data; const unsigned char* scales; }");
static_assert(sizeof(CUdeviceptr) == sizeof(void*), "device pointers are passed as host-sized pointers");

template <class T>
Result<T> bound(const std::map<std::string, T>& map, const Call& call, const std::string& name, ParamType type) {
  auto it = map.find(name);
  if (it == map.end())
    return Status::errorf("op {}: argument {} ({}) has no device binding", call.op, name, param_type_name(type));
  return it->second;
}

}  // namespace

size_t KernelParams::value_size(size_t i) const {
  switch (types_[i]) {
    case ParamType::Real: return sizeof(float);
    case ParamType::State: return sizeof(StateParam);
    case ParamType::Weight: return sizeof(WeightParam);
    default: return 8;
  }
}

void KernelParams::add(std::string name, ParamType type, const void* bytes, size_t size) {
  DSV41_CHECK(size <= sizeof(Slot::bytes));  // a parameter type larger than a slot is a bug here
  Slot slot{};
  std::memcpy(slot.bytes, bytes, size);
  names_.push_back(std::move(name));
  types_.push_back(type);
  slots_.push_back(slot);
}

void** KernelParams::pointers() {
  pointers_.clear();
  for (Slot& slot : slots_) pointers_.push_back(slot.bytes);
  return pointers_.data();
}

Result<KernelParams> marshal_params(const Call& call, const CallEnv& env, const LaunchBindings& bindings) {
  const KernelContract* contract = find_contract(call.op);
  if (!contract) return Status::errorf("op {}: no kernel entry in kernels/{}.cuh", call.op, call.op);
  KernelParams params;
  for (const KernelParam& p : contract->params) {
    const std::string name(p.name);
    const Arg* arg = call.find_arg(name);
    switch (p.type) {
      case ParamType::Rows: {
        const long long rows = bindings.rows;
        params.add(name, p.type, &rows, sizeof(rows));
        break;
      }
      case ParamType::Int: {
        DSV41_ASSIGN_OR_RETURN(int64_t value, int_param_value(call, env, name));
        const long long v = value;
        params.add(name, p.type, &v, sizeof(v));
        break;
      }
      case ParamType::Real: {
        if (!arg || arg->kind != ArgKind::Float)
          return Status::errorf("op {}: Real parameter {} has no Float argument in the call", call.op, name);
        const float v = static_cast<float>(arg->real);
        params.add(name, p.type, &v, sizeof(v));
        break;
      }
      case ParamType::Statics: {
        const uint64_t ptr = bindings.statics;
        params.add(name, p.type, &ptr, sizeof(ptr));
        break;
      }
      case ParamType::Errors: {
        const uint64_t ptr = bindings.errors;
        params.add(name, p.type, &ptr, sizeof(ptr));
        break;
      }
      case ParamType::State: {
        StateParam s{0, 0, 0};
        if (arg) {
          DSV41_ASSIGN_OR_RETURN(DeviceState d, bound(bindings.state, call, name, p.type));
          s = {d.base, d.slot_stride, d.slots};
        }
        params.add(name, p.type, &s, sizeof(s));
        break;
      }
      case ParamType::Weight: {
        WeightParam w{0, 0};  // an absent optional weight
        if (arg) {
          DSV41_ASSIGN_OR_RETURN(DeviceWeight d, bound(bindings.weights, call, name, p.type));
          w = {d.data, d.scales};
        }
        params.add(name, p.type, &w, sizeof(w));
        break;
      }
      case ParamType::Scratch:
      case ParamType::WeightList:
      case ParamType::IntList: {
        uint64_t ptr = 0;  // an absent optional argument
        if (arg) {
          const auto& map = p.type == ParamType::Scratch      ? bindings.scratch
                            : p.type == ParamType::WeightList ? bindings.weight_lists
                                                              : bindings.int_lists;
          DSV41_ASSIGN_OR_RETURN(ptr, bound(map, call, name, p.type));
        }
        params.add(name, p.type, &ptr, sizeof(ptr));
        break;
      }
    }
  }
  return params;
}

KernelLauncher::~KernelLauncher() {
  for (Loaded& k : kernels_)
    if (k.module) (void)driver_.cuModuleUnload(k.module);
}

Result<int32_t> KernelLauncher::load(const std::vector<uint8_t>& cubin, const std::string& entry,
                                     const std::string& name_for_errors) {
  if (cubin.empty()) return Status::errorf("kernel {}: empty cubin", name_for_errors);
  Loaded k;
  k.name = name_for_errors;
  DSV41_TRY(driver_.check(driver_.cuModuleLoadData(&k.module, cubin.data()),
                          fmt::format("cuModuleLoadData(kernel {}, {} bytes)", name_for_errors, cubin.size())));
  const Status found = driver_.check(driver_.cuModuleGetFunction(&k.function, k.module, entry.c_str()),
                                     fmt::format("cuModuleGetFunction(kernel {}, entry {})", name_for_errors, entry));
  int static_shared = 0;
  const Status queried =
      found.is_ok() ? driver_.check(driver_.cuFuncGetAttribute(&static_shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k.function),
                                    fmt::format("cuFuncGetAttribute(kernel {}, SHARED_SIZE_BYTES)", name_for_errors))
                    : found;
  if (!queried.is_ok()) {
    (void)driver_.cuModuleUnload(k.module);
    return queried;
  }
  k.static_shared = static_shared;
  kernels_.push_back(std::move(k));
  return static_cast<int32_t>(kernels_.size() - 1);
}

Status KernelLauncher::launch(int32_t kernel, const Call& call, const CallEnv& env, const LaunchBindings& bindings,
                              CUstream stream) {
  if (kernel < 0 || static_cast<size_t>(kernel) >= kernels_.size())
    return Status::errorf("op {}: kernel {} is not loaded ({} kernels)", call.op, kernel, kernels_.size());
  Loaded& k = kernels_[kernel];
  const KernelLaunch& l = call.launch;
  constexpr int64_t kUint = std::numeric_limits<unsigned>::max();
  if (l.block < 1 || l.block > 1024)
    return Status::errorf("kernel {} (op {}): block of {} threads (is the call planned for a GPU target?)", k.name,
                          call.op, l.block);
  for (int i = 0; i < 3; ++i)
    if (l.grid[i] < 1 || l.grid[i] > kUint)
      return Status::errorf("kernel {} (op {}): grid[{}] is {}", k.name, call.op, i, l.grid[i]);
  if (l.dynamic_shared < 0 || l.dynamic_shared > kUint)
    return Status::errorf("kernel {} (op {}): dynamic shared memory {} bytes", k.name, call.op, l.dynamic_shared);
  constexpr int64_t kDefaultShared = 48 * 1024;  // static + dynamic without opting in
  if (k.static_shared + l.dynamic_shared > kDefaultShared && l.dynamic_shared > k.max_dynamic_shared) {
    DSV41_TRY(driver_.check(
        driver_.cuFuncSetAttribute(k.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(l.dynamic_shared)),
        fmt::format("cuFuncSetAttribute(kernel {}, MAX_DYNAMIC_SHARED_SIZE_BYTES {}; static shared {})", k.name,
                    l.dynamic_shared, k.static_shared)));
    k.max_dynamic_shared = l.dynamic_shared;
  }
  DSV41_ASSIGN_OR_RETURN(KernelParams params, marshal_params(call, env, bindings));
  if (programmatic_launch()) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(l.grid[0]);
    config.gridDimY = static_cast<unsigned>(l.grid[1]);
    config.gridDimZ = static_cast<unsigned>(l.grid[2]);
    config.blockDimX = static_cast<unsigned>(l.block);
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = static_cast<unsigned>(l.dynamic_shared);
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return driver_.check(
        driver_.cuLaunchKernelEx(&config, k.function, params.pointers(), nullptr),
        fmt::format("cuLaunchKernelEx(kernel {}, op {}, grid {}x{}x{}, block {}, dynamic shared {}, static shared {}, "
                    "programmatic stream serialization)",
                    k.name, call.op, l.grid[0], l.grid[1], l.grid[2], l.block, l.dynamic_shared, k.static_shared));
  }
  return driver_.check(
      driver_.cuLaunchKernel(k.function, static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]),
                             static_cast<unsigned>(l.grid[2]), static_cast<unsigned>(l.block), 1, 1,
                             static_cast<unsigned>(l.dynamic_shared), stream, params.pointers(), nullptr),
      fmt::format("cuLaunchKernel(kernel {}, op {}, grid {}x{}x{}, block {}, dynamic shared {}, static shared {})",
                  k.name, call.op, l.grid[0], l.grid[1], l.grid[2], l.block, l.dynamic_shared, k.static_shared));
}

}  // namespace dsv41::gpu
