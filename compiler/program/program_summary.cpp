// compiler/program/program_summary.cpp — one reading of a program for people (text) and for tools (JSON).
#include "compiler/program/program_summary.h"

#include <fmt/format.h>

#include "common/cache_format.h"
#include "common/dtype.h"
#include "common/hashing.h"
#include "compiler/plan/memory_ledger.h"

namespace dsv41 {
namespace {

nlohmann::json span_json(const fb::Span* s) { return nlohmann::json::array({s->begin(), s->end()}); }

// The program's cache format: official exactly when its caches are packed (U8 state buffers, the
// only ones: compiler/plan/state_layout.h), which is how the program holds the setting.
CacheFormat program_cache_format(const fb::Program& p) {
  if (p.state_buffers())
    for (const fb::Buffer* b : *p.state_buffers())
      if (static_cast<DType>(b->dtype()) == kPackedCacheDType) return CacheFormat::Official;
  return CacheFormat::BF16;
}

std::string span_text(const fb::Span* s) { return fmt::format("[{}, {})", s->begin(), s->end()); }

// Bytes the rank reads, by rule (the ledger's weight lines are the device's: each tensor aligned).
struct WeightTotals {
  uint64_t bytes = 0, ranges = 0, replicated = 0, split = 0, host = 0;
};

WeightTotals weight_totals(const fb::Program& p) {
  WeightTotals totals;
  for (const fb::PlannedTensor* t : *p.weights()) {
    uint64_t bytes = 0;
    for (const fb::ByteRun* run : *t->runs()) {
      bytes += run->length() * run->count();
      ++totals.ranges;
    }
    totals.bytes += bytes;
    (t->host_resident() ? totals.host : t->rule() == fb::SplitRule::Replicated ? totals.replicated : totals.split) +=
        bytes;
  }
  return totals;
}

}  // namespace

namespace {

// One entry per kernel variant: what plan compiled and what ptxas reported.
nlohmann::json kernels_json(const fb::Program& p) {
  nlohmann::json list = nlohmann::json::array();
  if (!p.kernels()) return list;
  for (const fb::Kernel* k : *p.kernels())
    list.push_back({{"key", k->key()->str()},
                    {"entry", k->entry()->str()},
                    {"threads", k->threads()},
                    {"registers", k->registers()},
                    {"static_shared", k->static_shared()},
                    {"local_bytes", k->local_bytes()},
                    {"module_globals", k->module_globals()},
                    {"launches", k->launches()},
                    {"cubin_bytes", k->cubin() ? k->cubin()->size() : 0}});
  return list;
}

}  // namespace

nlohmann::json program_json(const fb::Program& p) {
  const fb::Share* s = p.share();
  const fb::MemoryLedger* m = p.ledger();
  const WeightTotals totals = weight_totals(p);
  nlohmann::json decode_rows = nlohmann::json::array();
  for (int64_t rows : *p.settings()->decode_rows()) decode_rows.push_back(rows);
  return {
      {"format_version", p.format_version()},
      {"world", p.world()},
      {"rank", p.rank()},
      {"target", p.target()->str()},
      {"share",
       {{"groups", span_json(s->groups())},
        {"heads", span_json(s->heads())},
        {"expert_cols", span_json(s->expert_cols())},
        {"vocab_rows", span_json(s->vocab_rows())}}},
      {"weights",
       {{"bytes", totals.bytes},
        {"tensors", p.weights()->size()},
        {"ranges", totals.ranges},
        {"replicated", totals.replicated},
        {"split", totals.split},
        {"host", totals.host}}},
      {"memory",
       {{"weights", m->weights_replicated() + m->weights_split()},
        {"state", m->state()},
        {"state_per_slot", m->state_per_slot()},
        {"activations", m->activations()},
        {"kernel_globals", m->kernel_globals()},
        {"total", m->total()},
        {"limit", m->limit()},
        {"host", m->weights_host()}}},
      {"settings",
       {{"context", p.settings()->context()},
        {"slots", p.settings()->slots()},
        {"prefill_rows", std::vector<int64_t>(p.settings()->prefill_rows()->begin(), p.settings()->prefill_rows()->end())},
        {"decode_rows", decode_rows},
        {"activations", dtype_name(static_cast<DType>(p.settings()->activations()))},
        {"draft_tokens", p.settings()->draft_tokens()},
        {"cache_format", cache_format_name(program_cache_format(p))}}},
      {"digests",
       {{"config", hex64(p.config_digest())},
        {"pack", hex64(p.pack_digest())},
        {"agreement", hex64(p.agreement_digest())},
        {"contract", hex64(p.contract_digest())}}},
      {"kernels", kernels_json(p)},
  };
}

namespace {

// "kernels: 28 variants, 1.0 MiB of cubins for sm_90a" (or "none compiled" with --target none).
std::string kernels_text(const fb::Program& p) {
  const size_t count = p.kernels() ? p.kernels()->size() : 0;
  uint64_t cubin_bytes = 0;
  std::string arch;
  for (size_t i = 0; i < count; ++i) {
    const fb::Kernel* k = p.kernels()->Get(static_cast<flatbuffers::uoffset_t>(i));
    cubin_bytes += k->cubin() ? k->cubin()->size() : 0;
    if (k->arch()) arch = k->arch()->str();
  }
  if (cubin_bytes == 0) return fmt::format("  kernels: {} variants, none compiled (target none)\n", count);
  return fmt::format("  kernels: {} variants, {:.1f} MiB of cubins for {}\n", count, cubin_bytes / 1048576.0, arch);
}

}  // namespace

std::string program_text(const fb::Program& p) {
  const fb::Share* s = p.share();
  const fb::MemoryLedger* m = p.ledger();
  const WeightTotals totals = weight_totals(p);
  std::string text = fmt::format("rank {} of world {} (target {})\n", p.rank(), p.world(), p.target()->str());
  text += fmt::format("  share: groups {}  heads {}  expert cols {}  vocab rows {}\n", span_text(s->groups()),
                      span_text(s->heads()), span_text(s->expert_cols()), span_text(s->vocab_rows()));
  text += fmt::format("  reads: {} in {} tensors, {} byte runs\n", gib_text(totals.bytes), p.weights()->size(),
                      totals.ranges);
  text += kernels_text(p);
  const CacheFormat cache_format = program_cache_format(p);
  text += fmt::format("  memory at context {} x {} slots{}:\n", p.settings()->context(), p.settings()->slots(),
                      cache_format == CacheFormat::BF16 ? "" : ", official cache format");
  MemoryLedger ledger{m->weights_replicated(), m->weights_split(), m->weights_host(), m->host_copy_per_row(),
                      m->state_per_slot(), m->state(),
                      m->activations(), m->total(), m->limit()};
  ledger.kernel_globals = m->kernel_globals();
  ledger.kernel_globals_known = p.target()->str() != "none";  // a GPU target compiles every kernel
  return text + ledger_text(ledger);
}

}  // namespace dsv41
