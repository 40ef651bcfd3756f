// runtime/gpu/programmatic_launch.h — the switch (process-wide, on by default) for programmatic dependent
// launch of the program's kernels.
#pragma once

#include <string>

#include "common/status.h"
#include "runtime/gpu/cuda_driver.h"

namespace dsv41::gpu {

// When on, each launch of a program kernel (KernelLauncher::launch) goes through the driver's
// cuLaunchKernelEx (CudaDriver) with
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: a kernel may be launched before the previous one
// on its stream has completed, inside captured graphs too (a programmatic edge). It is safe because every
// program kernel waits for its predecessor's completion and memory first (griddepcontrol.wait in the
// wrapper that common/kernel_contract.cpp variant_source writes); what it can save is the gap between
// kernels. Off: plain cuLaunchKernel (dsv41-rt bench --no-pdl; the kernel speed tests). A process-wide
// switch, not a session option: it is a measurement knob, and the sessions of one process share a driver.
void set_programmatic_launch(bool on);
bool programmatic_launch();

// The launch mode written into each program module as it loads (kernels/weight_prefetch.cuh
// dsv41_launch_mode): where a kernel triggers its dependents early and whether it prefetches its weights
// before its wait. Read once from the environment, so one process (dsv41-rt bench) measures one mode and
// one call of the GPU machine can compare them: DSV41_PDL_TRIGGER = off (the default: dependents launch as
// the blocks exit) | entry | wait (right after the kernel's own wait); DSV41_PDL_PREFETCH = 1 (default) |
// 0. The kernels' code and results are the same in every mode. An unknown value is an error naming it.
Result<int> launch_mode();
// The mode of those two values (null: the default), as kernels/weight_prefetch.cuh codes it.
Result<int> parse_launch_mode(const char* trigger, const char* prefetch);
// Writes launch_mode() into a loaded module's dsv41_launch_mode. A module without one (a cubin built
// before the prefetch hooks) keeps its fixed behaviour.
Status write_launch_mode(CudaDriver& driver, CUmodule module, const std::string& name_for_errors);

}  // namespace dsv41::gpu
