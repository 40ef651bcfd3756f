// common/kernel_launch.h — how each op's kernel is launched (grid, block, dynamic shared memory) and
// the op-specific bounds its launch must respect; computed at plan time and stored with the call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/kernel_contract.h"
#include "common/status.h"

namespace dsv41 {

// A limit a launch depends on, checked against the target at plan time.
struct LaunchBound {
  std::string what;   // "shared memory", "index entries", ...
  int64_t value = 0;  // what this call needs
  int64_t limit = 0;  // what the kernel allows (0: the target's shared memory per block decides)
};

struct LaunchDims {
  int64_t grid[3] = {1, 1, 1};
  int64_t block = 0;           // threads; depends only on the variant's compile-time constants
  int64_t dynamic_shared = 0;  // bytes of extern __shared__
  std::vector<LaunchBound> bounds;  // op-specific bounds beyond grid/block/shared memory
};

// The launch of one call of an op (the table in kernel_launch.cpp; one function per op in
// kernel_launch_*.cpp, each next to the kernel's own comment describing its grid).
Result<LaunchDims> launch_dims(const Call& call, const CallEnv& env);

// Hardware limits every launch is checked against.
constexpr int64_t kMaxGridX = (1ll << 31) - 1, kMaxGridYZ = 65535, kMaxBlockThreads = 1024;

}  // namespace dsv41
