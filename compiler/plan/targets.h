// compiler/plan/targets.h — the GPU targets a program can be planned for: arch, per-block shared memory, device memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41 {

struct Target {
  std::string name;
  std::string arch;              // NVRTC --gpu-architecture, e.g. "sm_90a"; empty for "none"
  int64_t shared_memory_per_block = 0;
  int64_t device_memory = 0;     // bytes; 0 means unchecked
};

// "none" plans without cubins and without a memory limit.
Result<Target> find_target(const std::string& name);
const std::vector<Target>& known_targets();
std::string target_names();

}  // namespace dsv41
