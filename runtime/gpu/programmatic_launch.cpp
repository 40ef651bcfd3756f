// runtime/gpu/programmatic_launch.cpp — the programmatic-dependent-launch switch.
#include "runtime/gpu/programmatic_launch.h"

#include <atomic>

namespace dsv41::gpu {
namespace {
std::atomic<bool> g_on{true};
}  // namespace

void set_programmatic_launch(bool on) { g_on.store(on); }
bool programmatic_launch() { return g_on.load(); }

}  // namespace dsv41::gpu
