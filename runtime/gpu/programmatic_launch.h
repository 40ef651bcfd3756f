// runtime/gpu/programmatic_launch.h — the process-wide launch switches (on by default, measurement knobs):
// programmatic dependent launch of the program's kernels, and graphs captured on two lanes.
#pragma once

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

// Graphs on two lanes (runtime/gpu/phase_lanes.h): off captures every call on one stream in phase order, as
// the eager path launches them (dsv41-rt bench --one-lane).
void set_graph_lanes(bool on);
bool graph_lanes();

}  // namespace dsv41::gpu
