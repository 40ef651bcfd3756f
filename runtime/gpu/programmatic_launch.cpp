// runtime/gpu/programmatic_launch.cpp — the switch and the lookup of cuLaunchKernelEx.
#include "runtime/gpu/programmatic_launch.h"

#include <dlfcn.h>

#include <atomic>

namespace dsv41::gpu {
namespace {

std::atomic<bool> g_on{true};

// The driver CudaDriver::load opened (RTLD_NOLOAD: never loads it here); null where it is absent or old.
LaunchKernelEx resolve() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (!library) return nullptr;
  auto fn = reinterpret_cast<LaunchKernelEx>(dlsym(library, "cuLaunchKernelEx"));
  dlclose(library);  // drops only the reference NOLOAD added
  return fn;
}

}  // namespace

void set_programmatic_launch(bool on) { g_on.store(on); }

LaunchKernelEx programmatic_launch() {
  if (!g_on.load()) return nullptr;
  static const LaunchKernelEx fn = resolve();
  return fn;
}

}  // namespace dsv41::gpu
