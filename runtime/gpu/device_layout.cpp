// runtime/gpu/device_layout.cpp — sizes and offsets of a rank's device memory, the weight upload, and call bindings.
#include "runtime/gpu/device_layout.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/pack_index.h"

namespace dsv41::gpu {
namespace {

uint64_t align(uint64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

uint64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), uint64_t{1}, [](uint64_t a, int64_t b) { return a * b; });
}

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

Result<DeviceLayout> plan_device_layout(const ProgramFile& file, const CallLists& calls, const std::string& model_dir) {
  const fb::Program& p = file.program();
  DSV41_ASSIGN_OR_RETURN(PackIndex pack, PackIndex::open(model_dir));
  if (pack.digest() != p.pack_digest())
    return Status::errorf("{}: pack digest {:016x} differs from the program's pack_digest {:016x}: {} was planned "
                          "from another model folder (or the shards changed since); re-plan it for this folder",
                          model_dir, pack.digest(), p.pack_digest(), file.source());
  DSV41_TRY(pack.check_data_present().with_context(model_dir));

  DeviceLayout layout;
  std::vector<int64_t> referenced;
  for (const Phase& phase : calls.phases) {
    layout.arena_bytes = std::max<uint64_t>(layout.arena_bytes, phase.arena_bytes);
    layout.statics_bytes = std::max<uint64_t>(layout.statics_bytes, align(phase.rows * kStaticsFields * 4));
    layout.error_bytes = std::max<uint64_t>(layout.error_bytes, align(phase.calls.size() * 4));
    for (const Call& call : phase.calls)
      for (const Arg& arg : call.args) {
        if (arg.kind == ArgKind::Weight || arg.kind == ArgKind::WeightList)
          referenced.insert(referenced.end(), arg.ints.begin(), arg.ints.end());
        if ((arg.kind == ArgKind::WeightList || arg.kind == ArgKind::IntList) &&
            layout.table_offset.emplace(std::make_pair(arg.kind, arg.ints), layout.table_bytes).second)
          layout.table_bytes += align(std::max<size_t>(arg.ints.size(), 1) * 8);
      }
  }
  layout.state_bytes = calls.state_bytes_per_slot * static_cast<uint64_t>(p.settings()->slots());

  auto weights = cpu::WeightStore::load(p, model_dir, referenced);
  if (!weights.is_ok()) return weights.status().with_context(model_dir);
  layout.host_weights = std::move(weights).value();
  layout.weight_offset.assign(p.weights()->size(), -1);
  for (size_t i = 0; i < layout.weight_offset.size(); ++i) {
    const cpu::WeightView view = layout.host_weights.view(static_cast<int64_t>(i));
    if (!view.data) continue;
    layout.weight_offset[i] = static_cast<int64_t>(layout.weight_bytes);
    layout.weight_bytes += align(numel(view.shape) * sizeof(float));
  }
  return layout;
}

std::string ledger_lines(const fb::Program& p, const DeviceLayout& layout) {
  const fb::MemoryLedger* l = p.ledger();
  if (!l) return "  (the program has no memory ledger)";
  const uint64_t weights = l->weights_replicated() + l->weights_split();
  std::string out = fmt::format("  {:<24} {:>12} {:>12}\n", "rank " + std::to_string(p.rank()) + " GiB", "ledger", "allocated");
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}  (allocated: fp32, dequantized at load)\n", "weights", gib(weights),
                     gib(layout.weight_bytes));
  out += fmt::format("  {:<24} {:>12} {:>12.3f}\n", "weight/int tables", "-", gib(layout.table_bytes));
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}\n", "state", gib(l->state()), gib(layout.state_bytes));
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}\n", "activations (+statics)", gib(l->activations()),
                     gib(layout.arena_bytes + layout.statics_bytes));
  out += fmt::format("  {:<24} {:>12} {:>12.3f}\n", "error words", "-", gib(layout.error_bytes));
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}", "total", gib(l->total()), gib(layout.total()));
  return out;
}

Status upload_weights(CudaDriver& d, const DeviceLayout& layout, DeviceBuffer& weights, DeviceBuffer& tables,
                      CUstream stream) {
  auto copy = [&](CUdeviceptr to, const void* from, size_t bytes, const std::string& what) {
    return d.check(d.cuMemcpyHtoDAsync(to, from, bytes, stream), fmt::format("cuMemcpyHtoDAsync_v2({}, {} bytes)", what, bytes));
  };
  for (size_t i = 0; i < layout.weight_offset.size(); ++i) {
    if (layout.weight_offset[i] < 0) continue;
    const cpu::WeightView view = layout.host_weights.view(static_cast<int64_t>(i));
    DSV41_TRY(copy(weights.ptr() + layout.weight_offset[i], view.data, numel(view.shape) * sizeof(float), view.name));
  }
  std::vector<uint8_t> image(layout.table_bytes, 0);
  for (const auto& [key, offset] : layout.table_offset) {
    const auto& [kind, ints] = key;
    for (size_t k = 0; k < ints.size(); ++k) {
      uint64_t value = static_cast<uint64_t>(ints[k]);
      if (kind == ArgKind::WeightList) {
        if (ints[k] < 0 || static_cast<size_t>(ints[k]) >= layout.weight_offset.size() || layout.weight_offset[ints[k]] < 0)
          return Status::errorf("weight list: weight {} is not loaded", ints[k]);
        value = weights.ptr() + static_cast<uint64_t>(layout.weight_offset[ints[k]]);
      }
      std::memcpy(image.data() + offset + k * 8, &value, 8);
    }
  }
  if (image.empty()) return Status::ok();
  DSV41_TRY(copy(tables.ptr(), image.data(), image.size(), "weight and int tables"));
  // The image is a local: wait for the copy before it goes.
  return d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize (after the table upload)");
}

Result<PhaseGraphs> bind_phase(CudaDriver& driver, KernelLauncher& launcher, const fb::Program& program,
                               const CallLists& calls, const Phase& phase, const DeviceLayout& layout,
                               const DeviceAddresses& at, bool host_exchanges) {
  CallEnv env;
  env.rows = phase.rows;
  const CallLists* lists = &calls;
  const Phase* ph = &phase;
  env.buffer = [lists, ph](const Arg& a) -> const BufferDecl* {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (a.kind == ArgKind::Scratch && i >= 0 && i < static_cast<int64_t>(ph->buffers.size())) return &ph->buffers[i];
    if (a.kind == ArgKind::State && i >= 0 && i < static_cast<int64_t>(lists->state_buffers.size()))
      return &lists->state_buffers[i];
    return nullptr;
  };
  const fb::Program* p = &program;
  env.weight_shape = [p](const Arg& a) -> std::vector<int64_t> {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (i < 0 || i >= static_cast<int64_t>(p->weights()->size())) return {};
    const auto* shape = p->weights()->Get(i)->local_shape();
    return shape ? std::vector<int64_t>(shape->begin(), shape->end()) : std::vector<int64_t>{};
  };
  PhaseGraphs graphs(driver, launcher, phase, env, program.rank());
  const int64_t slots = program.settings()->slots();
  for (size_t i = 0; i < phase.calls.size(); ++i) {
    const Call& call = phase.calls[i];
    BoundCall b;
    b.call = &call;
    b.bindings.rows = phase.rows;
    b.bindings.statics = at.statics;
    b.bindings.errors = at.errors + i * 4;
    for (const Arg& a : call.args) {
      switch (a.kind) {
        case ArgKind::Scratch: b.bindings.scratch[a.name] = at.arena + phase.buffers[a.ints[0]].offset; break;
        case ArgKind::State:
          b.bindings.state[a.name] = {at.state + calls.state_buffers[a.ints[0]].offset,
                                      static_cast<int64_t>(calls.state_bytes_per_slot), slots};
          break;
        case ArgKind::Weight:
          if (layout.weight_offset[a.ints[0]] < 0) return Status::errorf("phase {} call #{}: weight {} not loaded", phase.name, i, a.ints[0]);
          b.bindings.weights[a.name] = at.weights + layout.weight_offset[a.ints[0]];
          break;
        case ArgKind::WeightList:
        case ArgKind::IntList:
          b.bindings.weight_lists[a.name] = at.tables + layout.table_offset.at({a.kind, a.ints});
          if (a.kind == ArgKind::IntList) b.bindings.int_lists[a.name] = b.bindings.weight_lists[a.name];
          if (a.kind == ArgKind::IntList) b.bindings.weight_lists.erase(a.name);
          break;
        default: break;
      }
    }
    if (host_exchanges && (call.op == "exchange_sum" || call.op == "exchange_gather")) {
      b.x = b.bindings.scratch.at("x");
      b.out = b.bindings.scratch.at("out");
      b.width = call.constant("width");
      if (call.op == "exchange_sum") {
        b.host = BoundCall::Host::Sum;
      } else {
        b.host = BoundCall::Host::Gather;
        b.widths = call.arg("widths").ints;
        b.launches = false;
      }
    }
    graphs.add(std::move(b));
  }
  return graphs;
}

}  // namespace dsv41::gpu
