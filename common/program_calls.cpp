// common/program_calls.cpp — call lists in and out of flatbuffers, with the load-time checks backends rely on.
#include "common/program_calls.h"

#include "common/cache_format.h"
#include "common/op_set.h"

namespace dsv41 {

const BufferDecl* buffer_of(const CallLists& lists, const Phase& phase, const Arg& a) {
  const int64_t i = a.ints.empty() ? -1 : a.ints[0];
  if (a.kind == ArgKind::Scratch && i >= 0 && i < static_cast<int64_t>(phase.buffers.size())) return &phase.buffers[i];
  if (a.kind == ArgKind::State && i >= 0 && i < static_cast<int64_t>(lists.state_buffers.size()))
    return &lists.state_buffers[i];
  return nullptr;
}
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

std::vector<int64_t> longs(const flatbuffers::Vector<int64_t>* v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>{};
}

Result<BufferDecl> read_buffer(const fb::Buffer* b, uint64_t region_bytes, const char* region) {
  if (!b->name()) return Status::errorf("{} buffer without a name", region);
  BufferDecl d{b->name()->str(), static_cast<DType>(b->dtype()), longs(b->shape()), b->offset(), b->bytes()};
  const int raw_dtype = static_cast<int>(b->dtype());
  // U8: a cache packed in the official format (common/cache_format.h), per-slot state only.
  const bool packed = d.dtype == kPackedCacheDType && std::string_view(region) == "state";
  if (d.dtype != DType::BF16 && d.dtype != DType::F32 && d.dtype != DType::I32 && !packed)
    return Status::errorf("{} buffer {}: dtype {} is not BF16, F32 or I32 (or U8, a packed cache, in the state)",
                          region, d.name, raw_dtype);
  uint64_t elements = 1;
  for (int64_t extent : d.shape) {
    if (extent < 0 || extent > (1ll << 40)) return Status::errorf("{} buffer {}: extent {} out of range", region, d.name, extent);
    elements *= static_cast<uint64_t>(extent);
  }
  if (elements * dtype_bytes(d.dtype) != d.bytes)
    return Status::errorf("{} buffer {}: {} bytes, its shape needs {}", region, d.name, d.bytes,
                          elements * dtype_bytes(d.dtype));
  if (d.offset > region_bytes || d.bytes > region_bytes - d.offset)
    return Status::errorf("{} buffer {}: [{}, {}) leaves the {}-byte region", region, d.name, d.offset,
                          d.offset + d.bytes, region_bytes);
  return d;
}

Result<std::vector<BufferDecl>> read_buffers(const flatbuffers::Vector<Offset<fb::Buffer>>* list, uint64_t region_bytes,
                                             const char* region) {
  std::vector<BufferDecl> out;
  if (!list) return out;
  for (const fb::Buffer* b : *list) {
    DSV41_ASSIGN_OR_RETURN(BufferDecl d, read_buffer(b, region_bytes, region));
    out.push_back(std::move(d));
  }
  return out;
}

Status check_indices(const Call& call, const Phase& phase, size_t state_count, size_t weight_count) {
  for (const Arg& arg : call.args) {
    size_t limit = 0;
    switch (arg.kind) {
      case ArgKind::Scratch: limit = phase.buffers.size(); break;
      case ArgKind::State: limit = state_count; break;
      case ArgKind::Weight:
      case ArgKind::WeightList: limit = weight_count; break;
      default: continue;
    }
    for (int64_t index : arg.ints)
      if (index < 0 || static_cast<size_t>(index) >= limit)
        return Status::errorf("phase {}: op {}: argument {} index {} outside 0..{}", phase.name, call.op, arg.name,
                              index, static_cast<int64_t>(limit) - 1);
  }
  return Status::ok();
}

Result<Call> read_call(const fb::Call* c) {
  if (!c->op()) return Status::error("call without an op");
  Call call;
  call.op = c->op()->str();
  if (c->constants())
    for (const fb::Constant* k : *c->constants())
      call.constants.push_back({k->name() ? k->name()->str() : std::string(), k->value()});
  if (c->args())
    for (const fb::Arg* a : *c->args())
      call.args.push_back({a->name() ? a->name()->str() : std::string(), static_cast<ArgKind>(a->kind()),
                           longs(a->ints()), a->real()});
  call.launch.variant = c->variant();
  const std::vector<int64_t> grid = longs(c->grid());
  if (!grid.empty()) {
    if (grid.size() != 3) return Status::errorf("op {}: grid has {} dimensions, expected 3", call.op, grid.size());
    for (int i = 0; i < 3; ++i) call.launch.grid[i] = grid[i];
  }
  call.launch.block = c->block();
  call.launch.dynamic_shared = c->dynamic_shared();
  DSV41_TRY(check_call_shape(call));
  return call;
}

}  // namespace

Result<CallLists> read_call_lists(const fb::Program& program) {
  CallLists lists;
  lists.state_bytes_per_slot = program.state_bytes_per_slot();
  DSV41_ASSIGN_OR_RETURN(lists.state_buffers, read_buffers(program.state_buffers(), lists.state_bytes_per_slot, "state"));
  const size_t weight_count = program.weights() ? program.weights()->size() : 0;
  if (!program.phases()) return lists;
  for (const fb::Phase* p : *program.phases()) {
    Phase phase;
    if (!p->name()) return Status::error("phase without a name");
    phase.name = p->name()->str();
    phase.kind = static_cast<PhaseKind>(p->kind());
    phase.rows = p->rows();
    phase.arena_bytes = p->arena_bytes();
    if (phase.rows < 1 || phase.rows > (1 << 20)) return Status::errorf("phase {}: {} rows out of range", phase.name, phase.rows);
    DSV41_ASSIGN_OR_RETURN(phase.buffers, read_buffers(p->buffers(), phase.arena_bytes, "scratch"));
    if (p->calls())
      for (const fb::Call* c : *p->calls()) {
        auto call = read_call(c);
        if (!call.is_ok()) return call.status().with_context("phase " + phase.name);
        DSV41_TRY(check_indices(*call, phase, lists.state_buffers.size(), weight_count));
        phase.calls.push_back(std::move(call).value());
      }
    lists.phases.push_back(std::move(phase));
  }
  return lists;
}

Offset<flatbuffers::Vector<Offset<fb::Buffer>>> write_buffers(FlatBufferBuilder& b, const std::vector<BufferDecl>& buffers) {
  std::vector<Offset<fb::Buffer>> out;
  for (const BufferDecl& d : buffers)
    out.push_back(fb::CreateBuffer(b, b.CreateSharedString(d.name), static_cast<fb::DType>(d.dtype), b.CreateVector(d.shape),
                                   d.offset, d.bytes));
  return b.CreateVector(out);
}

Offset<flatbuffers::Vector<Offset<fb::Phase>>> write_phases(FlatBufferBuilder& b, const std::vector<Phase>& phases) {
  std::vector<Offset<fb::Phase>> out;
  for (const Phase& phase : phases) {
    std::vector<Offset<fb::Call>> calls;
    for (const Call& call : phase.calls) {
      std::vector<Offset<fb::Constant>> constants;
      for (const Constant& k : call.constants) constants.push_back(fb::CreateConstant(b, b.CreateSharedString(k.name), k.value));
      std::vector<Offset<fb::Arg>> args;
      for (const Arg& a : call.args)
        args.push_back(fb::CreateArg(b, b.CreateSharedString(a.name), static_cast<fb::ArgKind>(a.kind), b.CreateVector(a.ints), a.real));
      const KernelLaunch& l = call.launch;
      calls.push_back(fb::CreateCall(b, b.CreateSharedString(call.op), b.CreateVector(constants), b.CreateVector(args),
                                     l.variant, b.CreateVector(std::vector<int64_t>(l.grid, l.grid + 3)), l.block,
                                     l.dynamic_shared));
    }
    const auto buffers = write_buffers(b, phase.buffers);
    out.push_back(fb::CreatePhase(b, b.CreateSharedString(phase.name), static_cast<fb::PhaseKind>(phase.kind), phase.rows,
                                  phase.arena_bytes, buffers, b.CreateVector(calls)));
  }
  return b.CreateVector(out);
}

}  // namespace dsv41
