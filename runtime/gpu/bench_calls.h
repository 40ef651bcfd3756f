// runtime/gpu/bench_calls.h — `dsv41-rt bench --per-op`'s per-call listing: every launched call that names
// weights, with its index in the phase, its op, its first weight, the stored bytes of the weights it names
// (with their scales) and, for a moe_experts call, of the routed experts its rows selected in the same pass,
// its grid and its eager time; and the same grouped by call site (the weight's name with its layer number as `*`),
// so that each product (wq_a, wkv, wo_b, the head ...) reads against its bytes' roofline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"
#include "runtime/gpu/bench_bytes.h"
#include "runtime/gpu/device_layout.h"

namespace dsv41::gpu {

struct CallTime {
  size_t index = 0;      // in the phase's call list
  std::string op, weight;
  uint64_t bytes = 0;    // its weights as stored, scales included (moe_experts: with the selected experts')
  int64_t grid[3] = {1, 1, 1};
  double ms = 0;         // eager pass, CUDA events around the launch
};

// The calls of `phase` that name a weight and launched (call_ms[i] >= 0), in call order.
Result<std::vector<CallTime>> call_times(const fb::Program& program, const Phase& phase, const DeviceLayout& layout,
                                         const std::vector<double>& call_ms);

// Adds to each moe_experts call of `calls` its routed experts' bytes: `routed[k]` for `experts[k].call`
// (StepBytes::routed of the pass that timed the calls).
void add_routed_bytes(std::vector<CallTime>& calls, const std::vector<ExpertCall>& experts,
                      const std::vector<uint64_t>& routed);

struct SiteTime {
  std::string op, site;  // site: the first weight's name, digit runs between dots as `*`
  int64_t calls = 0;
  uint64_t bytes = 0;    // a call's (the mean over the site's calls: routed experts differ by layer)
  double ms = 0;         // Σ over its calls
  double median_ms = 0;  // a call
};

// "layers.12.attn.wq_a.weight" -> "layers.*.attn.wq_a.weight".
std::string call_site(const std::string& weight);

// Calls grouped by (op, call site), the most time first.
std::vector<SiteTime> group_call_sites(const std::vector<CallTime>& calls);

}  // namespace dsv41::gpu
