// common/call_access.cpp — which buffers a call reads and writes, from the op set and the phase's buffer plan.
#include "common/call_access.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dsv41 {
namespace {

// The scratch arguments each op only reads (docs/ops.md); an op's outputs are never listed here.
const std::vector<std::pair<std::string_view, std::vector<std::string_view>>>& read_only_args() {
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> table = {
      {"hc_collapse_norm", {"x", "mix"}},
      {"hc_mix", {"x"}},
      {"hc_post", {"x", "sub", "mix"}},
      {"linear", {"x"}},
      {"grouped_linear", {"x"}},
      {"rmsnorm", {"x"}},
      {"rope", {"x"}},
      {"rmsnorm_rope", {"x"}},
      {"compress", {"raw", "gate"}},
      {"index_select", {"iq", "iw"}},
      {"sparse_attention", {"q", "kv", "selected"}},
      {"window_store", {"kv"}},
      {"router", {"x"}},
      {"moe_experts", {"x", "ids", "weights"}},
      {"shared_expert", {"x"}},
  };
  return table;
}

bool overlaps(const BufferUse& a, const BufferUse& b) {
  if (a.state != b.state) return false;
  if (a.state) return a.index == b.index;
  return a.begin < b.end && b.begin < a.end;
}

}  // namespace

bool reads_only(std::string_view op, std::string_view arg) {
  for (const auto& [name, args] : read_only_args())
    if (name == op) return std::find(args.begin(), args.end(), arg) != args.end();
  return false;
}

std::vector<BufferUse> call_uses(const Phase& phase, const Call& call) {
  std::vector<BufferUse> uses;
  for (const Arg& arg : call.args) {
    if (arg.ints.empty()) continue;
    if (arg.kind == ArgKind::Scratch) {
      const int64_t i = arg.ints[0];
      if (i < 0 || i >= static_cast<int64_t>(phase.buffers.size())) {
        // An index the program check refuses anyway; counted as touching the whole arena, written.
        uses.push_back({false, i, 0, UINT64_MAX, true});
        continue;
      }
      const BufferDecl& b = phase.buffers[static_cast<size_t>(i)];
      uses.push_back({false, i, b.offset, b.offset + b.bytes, !reads_only(call.op, arg.name)});
    } else if (arg.kind == ArgKind::State) {
      uses.push_back({true, arg.ints[0], 0, 0, true});
    }
  }
  return uses;
}

bool must_follow(const Call& earlier, const std::vector<BufferUse>& earlier_uses, const Call& later,
                 const std::vector<BufferUse>& later_uses) {
  if (earlier.launch.variant >= 0 && earlier.launch.variant == later.launch.variant) return true;
  for (const BufferUse& a : earlier_uses)
    for (const BufferUse& b : later_uses)
      if ((a.written || b.written) && overlaps(a, b)) return true;
  return false;
}

}  // namespace dsv41
