// runtime/gpu/phase_lanes.cpp — the two-lane plan of a graph segment from the calls' buffer uses.
#include "runtime/gpu/phase_lanes.h"

#include <algorithm>
#include <array>

#include "common/call_access.h"

namespace dsv41::gpu {

LanePlan plan_lanes(const Phase& phase, const std::vector<LaneCall>& calls) {
  const size_t n = calls.size();
  LanePlan plan;
  plan.lane.assign(n, -1);
  plan.wait_for.assign(n, -1);
  std::vector<std::vector<BufferUse>> uses(n);
  for (size_t i = 0; i < n; ++i)
    if (calls[i].launches) uses[i] = call_uses(phase, *calls[i].call);
  // Per lane: its latest call, and the latest call of each lane known finished when that one starts, or
  // (its own entry) the latest call issued on it. `after[i]`: what is known finished once call i is.
  long tail[2] = {-1, -1};
  std::array<long, 2> known[2] = {{-1, -1}, {-1, -1}};
  std::vector<std::array<long, 2>> after(n, {-1, -1});
  auto place = [&](size_t i, int lane, long dep_other) {
    const int other = 1 - lane;
    if (dep_other > known[lane][other]) {  // not yet ordered by an earlier wait: wait for it
      plan.wait_for[i] = dep_other;
      for (int k = 0; k < 2; ++k) known[lane][k] = std::max(known[lane][k], after[dep_other][k]);
    }
    plan.lane[i] = lane;
    known[lane][lane] = tail[lane] = static_cast<long>(i);
    after[i] = known[lane];
  };
  for (size_t i = 0; i < n; ++i) {
    const LaneCall& c = calls[i];
    if (c.barrier) {  // on the main lane, after the side lane's work; every later call waits for it
      place(i, 0, tail[1]);
      continue;
    }
    if (!c.launches) continue;
    // The latest earlier call of each lane this one must follow (a barrier: everything before it).
    long dep[2] = {-1, -1};
    for (size_t j = 0; j < i; ++j) {
      if (plan.lane[j] < 0) continue;  // launched nothing
      if (calls[j].barrier || must_follow(*calls[j].call, uses[j], *c.call, uses[i]))
        dep[plan.lane[j]] = static_cast<long>(j);
    }
    // Follow the lane whose latest call this one needs (the later one when it needs both); needing
    // neither, take the lane with the older latest call, to overlap the newer one.
    const bool needs0 = tail[0] >= 0 && dep[0] == tail[0], needs1 = tail[1] >= 0 && dep[1] == tail[1];
    int lane = 0;
    if (needs0 != needs1) lane = needs1 ? 1 : 0;
    else if (needs0) lane = tail[1] > tail[0] ? 1 : 0;
    else lane = tail[1] < tail[0] ? 1 : 0;
    place(i, lane, dep[1 - lane]);
  }
  return plan;
}

}  // namespace dsv41::gpu
