// runtime/gpu/device_layout.cpp — sizes and offsets of a rank's device memory, the weight upload, and call bindings.
#include "runtime/gpu/device_layout.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include <unordered_map>

#include "common/tensor_inventory.h"
#include "runtime/gpu/device_sink.h"
#include "runtime/gpu/synthetic_weights.h"

namespace dsv41::gpu {
namespace {

uint64_t align(uint64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// A weight's stored bytes and, for scaled formats, its scale's (plan_device_layout checked both exist).
DeviceWeight device_weight(const DeviceLayout& layout, CUdeviceptr base, int64_t index) {
  DeviceWeight w;
  w.data = base + static_cast<uint64_t>(layout.stored.offset[index]);
  if (layout.format[index] && weight_format_scaled(*layout.format[index]))
    w.scales = base + static_cast<uint64_t>(layout.stored.offset[layout.scale_of[index]]);
  return w;
}

}  // namespace

Result<DeviceLayout> plan_device_layout(const ProgramFile& file, const CallLists& calls) {
  const fb::Program& p = file.program();
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
        const uint64_t entry = arg.kind == ArgKind::WeightList ? sizeof(DeviceWeight) : 8;
        if ((arg.kind == ArgKind::WeightList || arg.kind == ArgKind::IntList) &&
            layout.table_offset.emplace(std::make_pair(arg.kind, arg.ints), layout.table_bytes).second)
          layout.table_bytes += align(std::max<size_t>(arg.ints.size(), 1) * entry);
      }
  }
  layout.state_bytes = calls.state_bytes_per_slot * static_cast<uint64_t>(p.settings()->slots());
  // Every tensor the plan names (host tables aside), as the ledger counts, not only those the calls
  // use: the release plans tensors no call reads yet (the DSpark blocks, Engram's projections), and
  // the first H200 boot of a release share measured 7.7 GiB less than its ledger when only the
  // calls' weights were loaded.
  std::vector<int64_t> planned(p.weights()->size());
  for (size_t i = 0; i < planned.size(); ++i) planned[i] = static_cast<int64_t>(i);
  layout.stored = plan_stored_layout(p, planned);
  if (p.kernels())
    for (const fb::Kernel* k : *p.kernels()) layout.module_globals += k->module_globals();

  const auto& weights = *p.weights();
  std::unordered_map<std::string, int64_t> by_name;
  for (uint32_t i = 0; i < weights.size(); ++i) by_name[weights.Get(i)->name()->str()] = i;
  layout.scale_of.assign(weights.size(), -1);
  layout.format.assign(weights.size(), std::nullopt);
  for (uint32_t i = 0; i < weights.size(); ++i) {
    const fb::PlannedTensor& t = *weights.Get(i);
    layout.format[i] = weight_format_of(static_cast<Encoding>(t.encoding()), static_cast<DType>(t.dtype()));
    if (auto it = by_name.find(scale_name(t.name()->str())); it != by_name.end()) layout.scale_of[i] = it->second;
  }
  for (int64_t index : referenced) {
    // A host table is read through the Engram step's rows, never from device memory.
    if (index >= 0 && index < static_cast<int64_t>(weights.size()) && weights.Get(index)->host_resident()) continue;
    if (index < 0 || index >= static_cast<int64_t>(weights.size()) || layout.stored.offset[index] < 0)
      return Status::errorf("{}: a call names weight {}, which the program does not plan", file.source(), index);
    const auto& format = layout.format[index];
    if (!format)
      return Status::errorf("{}: weight {} has no device format (encoding {}, dtype {})", file.source(),
                            weights.Get(index)->name()->str(), static_cast<int>(weights.Get(index)->encoding()),
                            dtype_name(static_cast<DType>(weights.Get(index)->dtype())));
    if (weight_format_scaled(*format) && (layout.scale_of[index] < 0 || layout.stored.offset[layout.scale_of[index]] < 0))
      return Status::errorf("{}: weight {} is {} but its scale {} is not planned", file.source(),
                            weights.Get(index)->name()->str(), weight_format_name(*format),
                            scale_name(weights.Get(index)->name()->str()));
  }
  return layout;
}

std::string ledger_lines(const fb::Program& p, const DeviceLayout& layout) {
  const fb::MemoryLedger* l = p.ledger();
  if (!l) return "  (the program has no memory ledger)";
  const uint64_t weights = l->weights_replicated() + l->weights_split();
  std::string out = fmt::format("  {:<24} {:>12} {:>12}\n", "rank " + std::to_string(p.rank()) + " GiB", "ledger", "allocated");
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}  (stored formats)\n", "weights", gib(weights), gib(layout.stored.total));
  out += fmt::format("  {:<24} {:>12} {:>12.3f}\n", "weight/int tables", "-", gib(layout.table_bytes));
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}\n", "state", gib(l->state()), gib(layout.state_bytes));
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}\n", "activations (+statics)", gib(l->activations()),
                     gib(layout.arena_bytes + layout.statics_bytes));
  out += fmt::format("  {:<24} {:>12} {:>12.3f}\n", "error words", "-", gib(layout.error_bytes));
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}  (kernels' __device__ variables, at module load)\n",
                     "kernel globals", gib(l->kernel_globals()), gib(layout.module_globals));
  if (layout.exchange_bytes > 0)
    out += fmt::format("  {:<24} {:>12} {:>12.3f}\n", "exchange staging", "-", gib(layout.exchange_bytes));
  if (layout.engram_bytes > 0) {
    out += fmt::format("  {:<24} {:>12.3f} {:>12}  (host, mapped: once per host)\n", "Engram tables",
                       gib(l->weights_host()), "-");
    out += fmt::format("  {:<24} {:>12} {:>12.3f}  (a step's rows; pinned host {:.3f} GiB)\n", "Engram step rows", "-",
                       gib(layout.engram_bytes), gib(layout.engram_pinned_bytes));
    out += fmt::format("  {:<24} {:>12} {:>12}  (bytes copied per phase row)\n", "Engram copy per row",
                       l->host_copy_per_row(), layout.engram_copy_per_row);
  }
  out += fmt::format("  {:<24} {:>12.3f} {:>12.3f}", "total", gib(l->total()),
                     gib(layout.total() + layout.module_globals));
  return out;
}

Result<LoadStats> load_weights(CudaDriver& driver, const fb::Program& program, const DeviceLayout& layout,
                               DeviceBuffer& weights, const std::string& model_dir,
                               std::optional<uint64_t> synthetic_seed, const LoadOptions& options) {
  DeviceSink sink(driver, weights.ptr(), weights.bytes());
  if (synthetic_seed) return fill_synthetic_weights(program, layout.stored, *synthetic_seed, sink, options);
  return load_stored_weights(program, model_dir, layout.stored, sink, options);
}

Status upload_tables(CudaDriver& d, const DeviceLayout& layout, const DeviceBuffer& weights, DeviceBuffer& tables,
                     CUstream stream) {
  std::vector<uint8_t> image(layout.table_bytes, 0);
  for (const auto& [key, offset] : layout.table_offset) {
    const auto& [kind, ints] = key;
    for (size_t k = 0; k < ints.size(); ++k) {
      if (kind == ArgKind::IntList) {
        const long long value = ints[k];
        std::memcpy(image.data() + offset + k * 8, &value, 8);
        continue;
      }
      const DeviceWeight w = device_weight(layout, weights.ptr(), ints[k]);
      std::memcpy(image.data() + offset + k * sizeof(DeviceWeight), &w, sizeof(DeviceWeight));
    }
  }
  if (image.empty()) return Status::ok();
  DSV41_TRY(d.check(d.cuMemcpyHtoDAsync(tables.ptr(), image.data(), image.size(), stream),
                    fmt::format("cuMemcpyHtoDAsync_v2(weight and int tables, {} bytes)", image.size())));
  // The image is a local: wait for the copy before it goes.
  return d.check(d.cuStreamSynchronize(stream), "cuStreamSynchronize (after the table upload)");
}

uint64_t exchange_staging_bytes(const CallLists& calls, int world) {
  uint64_t largest = 0;
  for (const Phase& phase : calls.phases)
    for (const Call& call : phase.calls) {
      uint64_t floats = 0;
      if (call.op == "exchange_sum") floats = static_cast<uint64_t>(world * phase.rows * call.constant("width"));
      if (call.op == "exchange_gather")
        for (int64_t w : call.arg("widths").ints) floats += static_cast<uint64_t>(phase.rows * w);
      largest = std::max(largest, floats * sizeof(float));
    }
  return largest;
}

Result<PhaseGraphs> bind_phase(CudaDriver& driver, KernelLauncher& launcher, const fb::Program& program,
                               const CallLists& calls, const Phase& phase, const DeviceLayout& layout,
                               const DeviceAddresses& at, ExchangeBinding exchanges) {
  CallEnv env;
  env.rows = phase.rows;
  const CallLists* lists = &calls;
  const Phase* ph = &phase;
  env.buffer = [lists, ph](const Arg& a) { return buffer_of(*lists, *ph, a); };
  const fb::Program* p = &program;
  const int64_t engram_rows = at.engram.rows;
  env.weight_shape = [p, engram_rows](const Arg& a) -> std::vector<int64_t> {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (i < 0 || i >= static_cast<int64_t>(p->weights()->size())) return {};
    const auto* shape = p->weights()->Get(i)->local_shape();
    // A host table's gather reads the step's rows (bind below): their count bounds its row ids.
    if (p->weights()->Get(i)->host_resident() && engram_rows > 0 && shape && shape->size() == 2)
      return {engram_rows, shape->Get(1)};
    return shape ? std::vector<int64_t>(shape->begin(), shape->end()) : std::vector<int64_t>{};
  };
  const DeviceLayout* l = &layout;
  env.weight_format = [l](int64_t i) -> std::optional<WeightFormat> {
    if (i < 0 || i >= static_cast<int64_t>(l->format.size())) return std::nullopt;
    return l->format[i];
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
          if (layout.stored.offset[a.ints[0]] >= 0) b.bindings.weights[a.name] = device_weight(layout, at.weights, a.ints[0]);
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
    if (call.op == "engram_gather" && at.engram.rows > 0) {
      b.bindings.scratch["ids"] = at.engram.ids;
      b.bindings.weights["table"] = {at.engram.codes, at.engram.scales};
    }
    if (exchanges != ExchangeBinding::None && (call.op == "exchange_sum" || call.op == "exchange_gather")) {
      b.x = b.bindings.scratch.at("x");
      b.out = b.bindings.scratch.at("out");
      b.width = call.constant("width");
      const BoundCall::Host kind = call.op == "exchange_sum" ? BoundCall::Host::Sum : BoundCall::Host::Gather;
      if (kind == BoundCall::Host::Gather) b.widths = call.arg("widths").ints;
      if (exchanges == ExchangeBinding::Host) {
        b.host = kind;
        b.launches = kind == BoundCall::Host::Sum;
      } else {
        b.captured = kind;
        b.staging = at.exchange;
        if (kind == BoundCall::Host::Gather) b.bindings.scratch["x"] = at.exchange;  // the kernel permutes the staging
      }
    }
    graphs.add(std::move(b));
  }
  return graphs;
}

}  // namespace dsv41::gpu
