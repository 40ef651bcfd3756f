// compiler/program/program_writer.cpp — flatbuffer building; field order here is the file's byte order, so keep it fixed.
#include "compiler/program/program_writer.h"

#include "common/program_calls.h"
#include "common/program_file.h"

namespace dsv41 {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fb::Span> span(FlatBufferBuilder& b, const Span& s) { return fb::CreateSpan(b, s.begin, s.end); }

Offset<fb::Share> share_table(FlatBufferBuilder& b, const RankShare& s) {
  return fb::CreateShare(b, s.world, s.rank, span(b, s.groups), span(b, s.heads), span(b, s.expert_cols),
                         span(b, s.vocab_rows));
}

Offset<fb::PlannedTensor> tensor_table(FlatBufferBuilder& b, const PlannedTensor& t) {
  std::vector<fb::ByteRun> runs;
  runs.reserve(t.runs.size());
  for (const ByteRun& r : t.runs) runs.emplace_back(r.offset, r.length, r.stride, r.count, r.shard);
  return fb::CreatePlannedTensor(b, b.CreateString(t.name), static_cast<fb::DType>(t.dtype),
                                 b.CreateVector(t.stored_shape), b.CreateVector(t.local_shape),
                                 static_cast<fb::SplitRule>(t.rule), static_cast<fb::Encoding>(t.encoding),
                                 t.host_resident, b.CreateVectorOfStructs(runs));
}

}  // namespace

std::vector<uint8_t> build_program(const ModelInputs& inputs, const PlanOptions& options, const RankPlan& plan) {
  FlatBufferBuilder b(1 << 20);
  b.ForceDefaults(true);  // explicit zeros keep every program the same shape
  const auto config_json = b.CreateString(inputs.config_json);
  std::vector<Offset<fb::Shard>> shards;
  for (const ShardInfo& s : inputs.pack.shards())
    shards.push_back(fb::CreateShard(b, b.CreateString(s.file_name), s.header_length, s.data_bytes, s.header_digest));
  const auto shards_vec = b.CreateVector(shards);
  const auto target = b.CreateString(options.target.name);
  const auto share = share_table(b, plan.share);
  const ServingSettings& st = options.settings;
  const auto settings = fb::CreateSettings(b, st.context, st.slots, b.CreateVector(st.prefill_rows),
                                           b.CreateVector(st.decode_rows), static_cast<fb::DType>(st.activations),
                                           st.draft_tokens);
  std::vector<Offset<fb::PlannedTensor>> tensors;
  tensors.reserve(plan.weights.tensors.size());
  for (const PlannedTensor& t : plan.weights.tensors) tensors.push_back(tensor_table(b, t));
  const auto weights = b.CreateVector(tensors);
  const auto state_buffers = write_buffers(b, plan.calls.state_buffers);
  const auto phases = write_phases(b, plan.calls.phases);
  std::vector<Offset<fb::Kernel>> kernels;
  for (size_t i = 0; i < plan.kernels.variants.size(); ++i) {
    const PlannedVariant& v = plan.kernels.variants[i];
    const CompiledKernel* compiled = i < plan.compiled.size() ? &plan.compiled[i] : nullptr;
    const KernelResources r = compiled ? compiled->resources : KernelResources{};
    kernels.push_back(fb::CreateKernel(b, b.CreateString(v.variant.key), b.CreateString(v.variant.entry),
                                       b.CreateString(v.variant.arch), v.threads, r.registers, r.static_shared,
                                       r.local_bytes, v.launches,
                                       b.CreateVector(compiled ? compiled->cubin : std::vector<uint8_t>{}),
                                       r.module_globals));
  }
  const auto kernels_vec = b.CreateVector(kernels);
  const MemoryLedger& m = plan.ledger;
  const auto ledger = fb::CreateMemoryLedger(b, m.weights_replicated, m.weights_split, m.weights_host,
                                             m.state_per_slot, m.state, m.activations, m.total, m.limit,
                                             m.host_copy_per_row, m.kernel_globals);
  fb::ProgramBuilder program(b);
  program.add_format_version(kProgramFormatVersion);
  program.add_config_json(config_json);
  program.add_config_digest(config_digest(inputs.config));
  program.add_pack_digest(inputs.pack.digest());
  program.add_shards(shards_vec);
  program.add_target(target);
  program.add_world(plan.share.world);
  program.add_rank(plan.share.rank);
  program.add_share(share);
  program.add_settings(settings);
  program.add_weights(weights);
  program.add_ledger(ledger);
  program.add_agreement_digest(agreement_digest(inputs, options));
  program.add_state_buffers(state_buffers);
  program.add_state_bytes_per_slot(plan.calls.state_bytes_per_slot);
  program.add_phases(phases);
  program.add_kernels(kernels_vec);
  program.add_contract_digest(contract_digest());
  b.Finish(program.Finish(), kProgramFileIdentifier);
  return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

}  // namespace dsv41
