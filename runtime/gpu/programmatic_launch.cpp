// runtime/gpu/programmatic_launch.cpp — the programmatic-dependent-launch switch and the modules' launch mode.
#include "runtime/gpu/programmatic_launch.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace dsv41::gpu {
namespace {
std::atomic<bool> g_on{true};

// kernels/weight_prefetch.cuh's dsv41k::pdl codes.
constexpr int kTriggerEntry = 1, kTriggerAfterWait = 2, kNoPrefetch = 4;

// cuModuleGetGlobal from the libcuda that CudaDriver has loaded (RTLD_NOLOAD: never a second copy). Kept
// here rather than among CudaDriver's entry points so that this one consumer's need does not rebuild
// every file that includes cuda_driver.h; null if not found.
decltype(&::cuModuleGetGlobal) module_get_global() {
  static const auto fn = []() -> decltype(&::cuModuleGetGlobal) {
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    return library ? reinterpret_cast<decltype(&::cuModuleGetGlobal)>(dlsym(library, "cuModuleGetGlobal_v2")) : nullptr;
  }();
  return fn;
}
}  // namespace

Result<int> parse_launch_mode(const char* trigger, const char* prefetch) {
  const std::string t = trigger ? trigger : "off", p = prefetch ? prefetch : "1";
  int mode = 0;
  if (t == "entry") mode = kTriggerEntry;
  else if (t == "wait") mode = kTriggerAfterWait;
  else if (t != "off")
    return Status::errorf("DSV41_PDL_TRIGGER={}: expected off, entry or wait", t);
  if (p == "0") mode |= kNoPrefetch;
  else if (p != "1")
    return Status::errorf("DSV41_PDL_PREFETCH={}: expected 0 or 1", p);
  return mode;
}

void set_programmatic_launch(bool on) { g_on.store(on); }
bool programmatic_launch() { return g_on.load(); }

Result<int> launch_mode() {
  static const Result<int> mode = parse_launch_mode(std::getenv("DSV41_PDL_TRIGGER"), std::getenv("DSV41_PDL_PREFETCH"));
  return mode;
}

Status write_launch_mode(CudaDriver& driver, CUmodule module, const std::string& name_for_errors) {
  DSV41_ASSIGN_OR_RETURN(const int mode, launch_mode());
  const auto get_global = module_get_global();
  if (!get_global) return Status::errorf("kernel {}: cuModuleGetGlobal_v2 not found in libcuda.so.1", name_for_errors);
  CUdeviceptr global = 0;
  size_t bytes = 0;
  const CUresult found = get_global(&global, &bytes, module, "dsv41_launch_mode");
  if (found == CUDA_ERROR_NOT_FOUND) return Status::ok();
  DSV41_TRY(driver.check(found, fmt::format("cuModuleGetGlobal(kernel {}, dsv41_launch_mode)", name_for_errors)));
  if (bytes != sizeof(mode))
    return Status::errorf("kernel {}: dsv41_launch_mode is {} bytes, expected {}", name_for_errors, bytes, sizeof(mode));
  return driver.check(driver.cuMemcpyHtoD(global, &mode, sizeof(mode)),
                      fmt::format("cuMemcpyHtoD(kernel {}, dsv41_launch_mode = {})", name_for_errors, mode));
}

}  // namespace dsv41::gpu
