// runtime/gpu/programmatic_launch.cpp — the process-wide launch switches: programmatic dependent launch, graph lanes.
#include "runtime/gpu/programmatic_launch.h"

#include <atomic>

namespace dsv41::gpu {
namespace {
std::atomic<bool> g_on{true}, g_lanes{true};
}  // namespace

void set_programmatic_launch(bool on) { g_on.store(on); }
bool programmatic_launch() { return g_on.load(); }
void set_graph_lanes(bool on) { g_lanes.store(on); }
bool graph_lanes() { return g_lanes.load(); }

}  // namespace dsv41::gpu
