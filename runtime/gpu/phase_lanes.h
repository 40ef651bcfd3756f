// runtime/gpu/phase_lanes.h — which calls of a graph segment run side by side: two lanes (streams) in the
// captured graph, a call on the side lane whenever it need not follow the main lane's latest call, so that
// independent latency-bound kernels (a layer's kv projection beside its query norm and projection) overlap.
// The switch that turns it off: graph_lanes() in runtime/gpu/programmatic_launch.h.
#pragma once

#include <cstddef>
#include <vector>

#include "common/call_list.h"

namespace dsv41::gpu {

// A call of the segment as the planner sees it: the call, whether it launches a kernel, and whether it is
// a barrier (an exchange enqueued before it: everything earlier must be done, everything later waits).
struct LaneCall {
  const Call* call = nullptr;
  bool launches = true;
  bool barrier = false;
};

// Per call: its lane (0: the capture stream, 1: the side stream) and the call of the other lane whose
// completion it waits for first (-1: none; stream order covers its own lane). The side lane joins the
// main lane at every barrier; the capture joins it at the end.
struct LanePlan {
  std::vector<int> lane;
  std::vector<long> wait_for;
};

// Plans the calls of one segment (in phase order) of `phase`. Every pair of calls that must_follow
// (common/call_access.h) is ordered by a stream or a wait. Barriers take the main lane; other calls that
// launch nothing take no lane (-1). With graph_lanes() off the capture does not plan (one stream).
LanePlan plan_lanes(const Phase& phase, const std::vector<LaneCall>& calls);

}  // namespace dsv41::gpu
