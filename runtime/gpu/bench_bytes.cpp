// runtime/gpu/bench_bytes.cpp — a phase's weights by kind (dense, embedding rows, routed experts) and one step's bytes.
#include "runtime/gpu/bench_bytes.h"

#include <algorithm>
#include <map>
#include <set>

namespace dsv41::gpu {

Result<uint64_t> stored_bytes(const DeviceLayout& layout, int64_t index, const Phase& phase, size_t call) {
  if (index < 0 || index >= static_cast<int64_t>(layout.stored.bytes.size()) || layout.stored.offset[index] < 0)
    return Status::errorf("phase {} call #{} ({}): weight {} is not in the device layout ({} tensors)", phase.name, call,
                          phase.calls[call].op, index, layout.stored.bytes.size());
  uint64_t bytes = layout.stored.bytes[index];
  const int64_t scale = layout.scale_of[index];
  if (scale >= 0 && layout.stored.offset[scale] >= 0) bytes += layout.stored.bytes[scale];
  return bytes;
}

Result<PhaseWeightBytes> phase_weight_bytes(const fb::Program& program, const Phase& phase, const DeviceLayout& layout) {
  PhaseWeightBytes out;
  std::map<int64_t, size_t> dense;  // weight -> the first call naming it (for messages)
  for (size_t i = 0; i < phase.calls.size(); ++i) {
    const Call& call = phase.calls[i];
    if (call.op == "embed") {
      const int64_t index = call.arg("table").ints.at(0);
      DSV41_ASSIGN_OR_RETURN(const uint64_t whole, stored_bytes(layout, index, phase, i));
      const auto* shape = program.weights()->Get(static_cast<uint32_t>(index))->local_shape();
      if (!shape || shape->size() != 2 || shape->Get(0) < 1)
        return Status::errorf("phase {} call #{} (embed): the table is not a [rows, hidden] tensor", phase.name, i);
      out.embed_rows = shape->Get(0);
      out.embed_row = whole / static_cast<uint64_t>(out.embed_rows);
      continue;
    }
    if (call.op == "moe_experts") {
      ExpertCall e;
      e.call = i;
      e.topk = call.constant("topk");
      const Arg& ids = call.arg("ids");
      const int64_t b = ids.ints.empty() ? -1 : ids.ints[0];
      if (ids.kind != ArgKind::Scratch || b < 0 || b >= static_cast<int64_t>(phase.buffers.size()) ||
          phase.buffers[b].dtype != DType::I32 || phase.buffers[b].bytes < static_cast<uint64_t>(phase.rows * e.topk * 4))
        return Status::errorf("phase {} call #{} (moe_experts): ids is not an I32 [{}, {}] scratch buffer", phase.name, i,
                              phase.rows, e.topk);
      e.ids_buffer = phase.buffers[b].name;
      const std::vector<int64_t>& w1 = call.arg("w1").ints;
      const std::vector<int64_t>& w3 = call.arg("w3").ints;
      const std::vector<int64_t>& w2 = call.arg("w2").ints;
      if (w1.size() != w3.size() || w1.size() != w2.size())
        return Status::errorf("phase {} call #{} (moe_experts): expert lists of {}, {} and {} entries", phase.name, i,
                              w1.size(), w3.size(), w2.size());
      for (size_t x = 0; x < w1.size(); ++x) {
        uint64_t bytes = 0;
        for (int64_t index : {w1[x], w3[x], w2[x]}) {
          DSV41_ASSIGN_OR_RETURN(const uint64_t part, stored_bytes(layout, index, phase, i));
          bytes += part;
        }
        e.expert_bytes.push_back(bytes);
      }
      out.experts.push_back(std::move(e));
      for (const char* name : {"shared_w1", "shared_w3", "shared_w2"})  // the shared expert: read every step
        if (const Arg* a = call.find_arg(name)) dense.emplace(a->ints.at(0), i);
      continue;
    }
    if (call.op == "engram_gather") continue;  // its table is on the host: a step's rows are copied, not read
    for (const Arg& a : call.args) {
      if (a.kind == ArgKind::Weight || a.kind == ArgKind::WeightList)
        for (int64_t index : a.ints) dense.emplace(index, i);
    }
  }
  for (const auto& [index, call] : dense) {
    DSV41_ASSIGN_OR_RETURN(const uint64_t bytes, stored_bytes(layout, index, phase, call));
    out.dense += bytes;
  }
  return out;
}

Result<StepBytes> step_bytes(const PhaseWeightBytes& weights, int64_t distinct_tokens,
                             const std::vector<std::vector<int32_t>>& ids) {
  if (ids.size() != weights.experts.size())
    return Status::errorf("routing of {} moe_experts calls, but the phase has {}", ids.size(), weights.experts.size());
  StepBytes s;
  s.dense = weights.dense;
  s.embed = static_cast<uint64_t>(std::min(distinct_tokens, weights.embed_rows)) * weights.embed_row;
  for (size_t k = 0; k < ids.size(); ++k) {
    const ExpertCall& e = weights.experts[k];
    const std::set<int32_t> chosen(ids[k].begin(), ids[k].end());
    s.routed.push_back(0);
    for (int32_t id : chosen) {
      if (id < 0 || id >= static_cast<int32_t>(e.expert_bytes.size()))
        return Status::errorf("moe_experts call #{}: routed expert id {} outside 0..{}", e.call, id,
                              e.expert_bytes.size() - 1);
      s.routed.back() += e.expert_bytes[id];
    }
    s.experts += s.routed.back();
    s.experts_read += static_cast<int64_t>(chosen.size());
  }
  return s;
}

}  // namespace dsv41::gpu
