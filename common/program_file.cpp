// common/program_file.cpp — a program is untrusted input: verify the buffer, then check every number before use.
#include "common/program_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/model_config.h"
#include "common/kernel_contract.h"
#include "common/kernel_launch.h"
#include "common/program_calls.h"

namespace dsv41 {
namespace {

Status check_span(const fb::Span* span, const char* field, int64_t limit) {
  if (!span) return Status::errorf("share.{}: missing", field);
  if (span->begin() < 0 || span->end() < span->begin() || span->end() > limit)
    return Status::errorf("share.{}: [{}, {}) is not a range inside [0, {})", field, span->begin(), span->end(), limit);
  return Status::ok();
}

Status check_share(const fb::Program& p, const ModelConfig& config) {
  const fb::Share* share = p.share();
  if (!share) return Status::error("share: missing");
  if (share->world() != p.world() || share->rank() != p.rank())
    return Status::errorf("share: world {} rank {} disagree with the program's world {} rank {}", share->world(),
                          share->rank(), p.world(), p.rank());
  DSV41_TRY(check_span(share->groups(), "groups", config.o_groups));
  DSV41_TRY(check_span(share->heads(), "heads", config.num_attention_heads));
  DSV41_TRY(check_span(share->expert_cols(), "expert_cols", config.moe_intermediate_size));
  return check_span(share->vocab_rows(), "vocab_rows", config.vocab_size);
}

Status check_weights(const fb::Program& p) {
  const auto* shards = p.shards();
  const auto* weights = p.weights();
  if (!shards || !weights) return Status::error("shards or weights: missing");
  for (const fb::Shard* shard : *shards) {
    if (!shard->file_name() || shard->file_name()->size() == 0) return Status::error("shards: an entry has no file name");
    if (shard->data_bytes() > UINT64_MAX - 8 || shard->header_length() > UINT64_MAX - 8 - shard->data_bytes())
      return Status::errorf("shards.{}: header length {} and data size {} overflow a file offset",
                            shard->file_name()->str(), shard->header_length(), shard->data_bytes());
  }
  for (const fb::PlannedTensor* t : *weights) {
    if (!t->name() || !t->runs() || !t->stored_shape() || !t->local_shape())
      return Status::error("weights: an entry lacks its name, shapes or runs");
    // Enums are not checked by the verifier; readers index tables with them.
    if (t->dtype() < fb::DType::MIN || t->dtype() > fb::DType::MAX || t->rule() < fb::SplitRule::MIN ||
        t->rule() > fb::SplitRule::MAX || t->encoding() < fb::Encoding::MIN || t->encoding() > fb::Encoding::MAX)
      return Status::errorf("weights.{}: dtype {}, rule {} or encoding {} is not a known value", t->name()->str(),
                            static_cast<int>(t->dtype()), static_cast<int>(t->rule()), static_cast<int>(t->encoding()));
    for (const fb::ByteRun* run : *t->runs()) {
      const std::string where = t->name()->str();
      if (run->shard() < 0 || static_cast<uint32_t>(run->shard()) >= shards->size())
        return Status::errorf("weights.{}: shard index {} outside 0..{}", where, run->shard(),
                              static_cast<int64_t>(shards->size()) - 1);
      const fb::Shard* shard = shards->Get(run->shard());
      const uint64_t data_start = 8 + shard->header_length(), data_end = data_start + shard->data_bytes();
      if (run->count() == 0 || run->length() == 0 || (run->count() > 1 && run->stride() < run->length()))
        return Status::errorf("weights.{}: run of {} x {} bytes with stride {} is malformed", where, run->count(),
                              run->length(), run->stride());
      // Written so nothing wraps: offset + (count - 1) * stride + length <= data_end.
      const uint64_t stride = std::max<uint64_t>(run->stride(), 1);  // unused (count 1) when 0
      const bool inside = run->offset() >= data_start && run->offset() <= data_end &&
                          run->length() <= data_end - run->offset() &&
                          run->count() - 1 <= (data_end - run->offset() - run->length()) / stride;
      if (!inside)
        return Status::errorf("weights.{}: run at offset {} ({} x {} bytes, stride {}) leaves {}'s data [{}, {})", where,
                              run->offset(), run->count(), run->length(), run->stride(), shard->file_name()->str(),
                              data_start, data_end);
    }
  }
  return Status::ok();
}

// Kernels (format 3): every call's variant, grid and block within bounds; the contract must be this
// build's, or the runtime would marshal parameters for other signatures.
Status check_kernels(const fb::Program& p, const CallLists& calls) {
  const int64_t count = p.kernels() ? static_cast<int64_t>(p.kernels()->size()) : 0;
  if (count > 0 && p.contract_digest() != contract_digest())
    return Status::errorf("kernel contract {:016x}, this build has {:016x}: the program was planned with other "
                          "kernels; re-plan it with this dsv41c",
                          p.contract_digest(), contract_digest());
  for (int64_t k = 0; k < count; ++k) {
    const fb::Kernel* kernel = p.kernels()->Get(static_cast<flatbuffers::uoffset_t>(k));
    if (!kernel->key() || !kernel->entry() || !kernel->arch())
      return Status::errorf("kernels[{}]: key, entry or arch missing", k);
    if (kernel->threads() < 1 || kernel->threads() > kMaxBlockThreads)
      return Status::errorf("kernel {}: {} threads, outside 1..{}", kernel->key()->str(), kernel->threads(), kMaxBlockThreads);
  }
  for (const Phase& phase : calls.phases)
    for (const Call& call : phase.calls) {
      const KernelLaunch& l = call.launch;
      // Unbound (-1): every call of a program planned without kernels, or a call whose op has none yet
      // (the CPU backend runs it; docs/ops.md "DSpark").
      if (l.variant < -1 || l.variant >= count || (count > 0 && l.variant < 0 && find_contract(call.op)))
        return Status::errorf("phase {}: op {}: kernel index {} outside 0..{}", phase.name, call.op, l.variant, count - 1);
      if (l.variant < 0) continue;
      const fb::Kernel* kernel = p.kernels()->Get(static_cast<flatbuffers::uoffset_t>(l.variant));
      const bool grid_ok = l.grid[0] >= 1 && l.grid[0] <= kMaxGridX && l.grid[1] >= 1 && l.grid[1] <= kMaxGridYZ &&
                           l.grid[2] >= 1 && l.grid[2] <= kMaxGridYZ;
      if (!grid_ok || l.block != kernel->threads() || l.dynamic_shared < 0)
        return Status::errorf("phase {}: op {}: launch grid [{}, {}, {}] x {} threads ({} shared bytes) is malformed for "
                              "kernel {}",
                              phase.name, call.op, l.grid[0], l.grid[1], l.grid[2], l.block, l.dynamic_shared,
                              kernel->key()->str());
    }
  return Status::ok();
}

Status check_program(const fb::Program& p) {
  if (p.format_version() != kProgramFormatVersion)
    return Status::errorf("program format version {}, this build reads version {}; re-plan it with this dsv41c",
                          p.format_version(), kProgramFormatVersion);
  if (!p.config_json() || !p.settings() || !p.ledger() || !p.target())
    return Status::error("config, settings, ledger or target: missing");
  if (!p.settings()->decode_rows() || !p.settings()->prefill_rows())
    return Status::error("settings.decode_rows or settings.prefill_rows: missing");
  if (p.settings()->activations() != fb::DType::BF16 && p.settings()->activations() != fb::DType::F32)
    return Status::errorf("settings.activations: dtype {}, expected BF16 or F32",
                          static_cast<int>(p.settings()->activations()));
  if (p.world() < 1 || p.rank() < 0 || p.rank() >= p.world())
    return Status::errorf("rank {} of world {}: not a valid rank", p.rank(), p.world());
  auto config = parse_model_config(p.config_json()->str(), "embedded config.json");
  if (!config.is_ok()) return config.status();
  if (config_digest(*config) != p.config_digest())
    return Status::error("embedded config.json does not match the program's config digest");
  DSV41_TRY(check_share(p, *config));
  DSV41_TRY(check_weights(p));
  auto calls = read_call_lists(p);  // checks every call against the op set and its bounds
  if (!calls.is_ok()) return calls.status();
  return check_kernels(p, *calls);
}

}  // namespace

Result<ProgramFile> ProgramFile::from_bytes(std::vector<uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8 || !flatbuffers::BufferHasIdentifier(bytes.data(), kProgramFileIdentifier))
    return Status::errorf("{}: not a dsv41 program (file identifier \"{}\" missing)", source, kProgramFileIdentifier);
  // A release program holds ~100k tensors; the default table limit (1M) is close, so allow more.
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), /*max_depth=*/64, /*max_tables=*/50'000'000);
  if (!fb::VerifyProgramBuffer(verifier))
    return Status::errorf("{}: corrupt program (the flatbuffers verifier refused it)", source);
  ProgramFile file;
  file.bytes_ = std::move(bytes);
  file.source_ = source;
  DSV41_TRY(check_program(file.program()).with_context(source));
  return file;
}

Result<ProgramFile> ProgramFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::errorf("{}: cannot open", path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return from_bytes(std::move(bytes), path);
}

Status write_file_atomic(const std::string& path, const void* data, size_t size) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::errorf("{}: cannot create", temp);
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out.flush()) return Status::errorf("{}: write failed", temp);
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) return Status::errorf("{}: cannot rename into place: {}", path, ec.message());
  return Status::ok();
}

}  // namespace dsv41
