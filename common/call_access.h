// common/call_access.h — the buffers a call reads and writes, and so which earlier calls of its phase it must
// follow: the order a backend keeps when it runs a phase's calls side by side (runtime/gpu/phase_lanes.h).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/call_list.h"

namespace dsv41 {

// One buffer a call names: bytes [begin, end) of the phase's scratch arena, or a whole state buffer
// (`state`, by index: every slot's block), and whether the call may write it.
struct BufferUse {
  bool state = false;
  int64_t index = -1;  // the phase's buffer or the program's state buffer
  uint64_t begin = 0, end = 0;
  bool written = true;
};

// Whether `op` only reads its scratch argument `arg`. Unlisted arguments count as written, and every
// state argument too: a call the table does not know is ordered after everything it touches.
bool reads_only(std::string_view op, std::string_view arg);

// The scratch and state buffers `call` (a call of `phase`) names.
std::vector<BufferUse> call_uses(const Phase& phase, const Call& call);

// Whether `later` must wait for `earlier` (an earlier call of the same phase): one writes bytes the
// other reads or writes, or both launch the same kernel variant (a module's __device__ tables and
// counters serve one launch at a time: kernels/gemv_kparts.cuh, kernels/moe_grouped.cuh).
bool must_follow(const Call& earlier, const std::vector<BufferUse>& earlier_uses, const Call& later,
                 const std::vector<BufferUse>& later_uses);

}  // namespace dsv41
