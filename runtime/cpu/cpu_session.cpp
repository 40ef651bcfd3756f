// runtime/cpu/cpu_session.cpp — session creation (config, pack, weights, state, arenas) and the call loop with its OpContext.
#include "runtime/cpu/cpu_session.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>

#include <fmt/ranges.h>

#include "common/pack_index.h"
#include "runtime/phase_checks.h"
#include "runtime/exchange.h"

namespace dsv41::cpu {

// What an op sees of the session for one call. Arguments were checked against the op set when the
// program loaded; a missing or mistyped one gives an empty view, which the op's checks refuse.
class SessionCallContext final : public OpContext {
 public:
  SessionCallContext(CpuSession& session, const Phase& phase, uint8_t* arena, const Call& call, const StaticsView& statics)
      : session_(session), phase_(phase), arena_(arena), call_(call), statics_(statics) {}

  const Call& call() const override { return call_; }
  const StaticsView& statics() const override { return statics_; }
  Exchange& exchange() const override { return session_.exchange_; }
  int rank() const override { return session_.rank_; }
  int world() const override { return session_.world_; }

  TensorView scratch(const std::string& name) const override {
    const Arg* arg = find(name, ArgKind::Scratch);
    if (!arg || !in_range(arg->ints[0], phase_.buffers.size())) return {};
    const BufferDecl& b = phase_.buffers[arg->ints[0]];
    return {arena_ + b.offset, b.dtype, b.shape};
  }

  TensorView state(const std::string& name, int slot) const override {
    const Arg* arg = find(name, ArgKind::State);
    const auto& buffers = session_.calls_.state_buffers;
    if (!arg || !in_range(arg->ints[0], buffers.size())) return {};
    const BufferDecl& b = buffers[arg->ints[0]];
    if (slot < 0 || slot >= session_.slots_) return {nullptr, b.dtype, b.shape};  // the op refuses: no storage
    return {session_.state_.data() + slot * session_.calls_.state_bytes_per_slot + b.offset, b.dtype, b.shape};
  }

  WeightView weight(const std::string& name) const override {
    const Arg* arg = find(name, ArgKind::Weight);
    return arg ? session_.weights_.view(arg->ints[0]) : WeightView{};
  }

  HostTableView host_table(const std::string& name) const override {
    const Arg* arg = find(name, ArgKind::Weight);
    return arg ? session_.host_tables_.view(arg->ints[0]) : HostTableView{};
  }

  std::vector<WeightView> weights(const std::string& name) const override {
    std::vector<WeightView> out;
    if (const Arg* arg = call_.find_arg(name); arg && arg->kind == ArgKind::WeightList)
      for (int64_t index : arg->ints) out.push_back(session_.weights_.view(index));
    return out;
  }

 private:
  const Arg* find(const std::string& name, ArgKind kind) const {
    const Arg* arg = call_.find_arg(name);
    return arg && arg->kind == kind && !arg->ints.empty() ? arg : nullptr;
  }
  static bool in_range(int64_t index, size_t size) { return index >= 0 && static_cast<size_t>(index) < size; }

  CpuSession& session_;
  const Phase& phase_;
  uint8_t* arena_;
  const Call& call_;
  const StaticsView& statics_;
};

namespace {

// Every weight a call names, in first-use order (never a scale: calls name weights only).
std::vector<int64_t> referenced_weights(const CallLists& calls) {
  std::vector<int64_t> out;
  for (const Phase& phase : calls.phases)
    for (const Call& call : phase.calls)
      for (const Arg& arg : call.args)
        if (arg.kind == ArgKind::Weight || arg.kind == ArgKind::WeightList) out.insert(out.end(), arg.ints.begin(), arg.ints.end());
  return out;
}

std::vector<uint8_t> zeroed_bytes(uint64_t bytes) { return std::vector<uint8_t>(static_cast<size_t>(bytes), 0); }

}  // namespace

Result<std::unique_ptr<CpuSession>> CpuSession::create(const ProgramFile& program, const std::string& model_dir,
                                                       Exchange& exchange) {
  auto calls = read_call_lists(program.program());
  if (!calls.is_ok()) return calls.status().with_context(program.source());
  return create(program, std::move(calls).value(), model_dir, exchange);
}

Result<std::unique_ptr<CpuSession>> CpuSession::create(const ProgramFile& file, CallLists calls,
                                                       const std::string& model_dir, Exchange& exchange) {
  const fb::Program& p = file.program();
  std::unique_ptr<CpuSession> s(new CpuSession(exchange));
  auto config = parse_model_config(p.config_json()->str(), file.source() + ": embedded config.json");
  if (!config.is_ok()) return config.status();
  s->config_ = std::move(config).value();
  s->rank_ = p.rank();
  s->world_ = p.world();
  s->slots_ = p.settings()->slots();
  s->context_ = p.settings()->context();
  if (s->slots_ < 1 || s->context_ < 1)
    return Status::errorf("{}: settings slots {} and context {} must both be at least 1", file.source(), s->slots_,
                          s->context_);

  auto pack = PackIndex::open(model_dir);
  if (!pack.is_ok()) return pack.status();
  if (pack->digest() != p.pack_digest())
    return Status::errorf("{}: pack digest {:016x} differs from the program's pack_digest {:016x}: {} was planned "
                          "from another model folder (or the shards changed since); re-plan it for this folder",
                          model_dir, pack->digest(), p.pack_digest(), file.source());
  DSV41_TRY(pack->check_data_present().with_context(model_dir));

  s->calls_ = std::move(calls);
  // Host-resident tables are mapped, never loaded (nor dequantized): their rows are read per step.
  std::vector<int64_t> loaded, mapped;
  for (int64_t index : referenced_weights(s->calls_)) {
    const bool host = index >= 0 && p.weights() && index < static_cast<int64_t>(p.weights()->size()) &&
                      p.weights()->Get(static_cast<uint32_t>(index))->host_resident();
    (host ? mapped : loaded).push_back(index);
  }
  auto weights = WeightStore::load(p, model_dir, loaded);
  if (!weights.is_ok()) return weights.status().with_context(model_dir);
  s->weights_ = std::move(weights).value();
  auto tables = HostTables::map(p, model_dir, mapped);
  if (!tables.is_ok()) return tables.status().with_context(model_dir);
  s->host_tables_ = std::move(tables).value();

  const uint64_t per_slot = s->calls_.state_bytes_per_slot;
  try {
    s->state_ = zeroed_bytes(per_slot * static_cast<uint64_t>(s->slots_));
    for (const Phase& phase : s->calls_.phases) s->arenas_.push_back(zeroed_bytes(phase.arena_bytes));
  } catch (const std::bad_alloc&) {
    uint64_t arenas = 0;
    for (const Phase& phase : s->calls_.phases) arenas += phase.arena_bytes;
    return Status::errorf("{}: cannot allocate {} slots x {} state bytes and {} arena bytes on the host",
                          file.source(), s->slots_, per_slot, arenas);
  }
  return s;
}

const Phase* CpuSession::find_phase(const std::string& name) const { return find_phase_in(calls_.phases, name); }

Result<size_t> CpuSession::phase_index(const Phase& phase) const { return index_of_phase(calls_.phases, phase); }

Status CpuSession::check_statics(const Phase& phase, const std::vector<int32_t>& statics) const {
  return check_phase_statics(phase, statics, slots_, context_, config_.vocab_size);
}

Status CpuSession::run(const Phase& phase, const std::vector<int32_t>& statics) {
  DSV41_ASSIGN_OR_RETURN(const size_t index, phase_index(phase));
  DSV41_TRY(check_statics(phase, statics));
  const StaticsView view{statics.data(), phase.rows};
  uint8_t* arena = arenas_[index].data();
  for (size_t i = 0; i < phase.calls.size(); ++i) {
    const Call& call = phase.calls[i];
    const std::string where = fmt::format("phase {} call #{} ({})", phase.name, i, call.op);
    const OpFunction op = find_cpu_op(call.op);
    if (!op) return Status::errorf("{}: the CPU backend has no implementation of op {}", where, call.op);
    const SessionCallContext context(*this, phase, arena, call, view);
    Status status;
    try {
      status = op(context);
    } catch (const ExchangeAborted& e) {
      status = Status::errorf("exchange aborted: {}", e.what());
    } catch (const std::exception& e) {  // an op threw (allocation, a bad argument index): still one message
      status = Status::errorf("threw: {}", e.what());
    }
    if (!status.is_ok()) return status.with_context(where);
  }
  return Status::ok();
}

Result<TensorView> CpuSession::output(const Phase& phase, const std::string& buffer_name) {
  DSV41_ASSIGN_OR_RETURN(const size_t index, phase_index(phase));
  for (const BufferDecl& b : phase.buffers)
    if (b.name == buffer_name) return TensorView{arenas_[index].data() + b.offset, b.dtype, b.shape};
  std::vector<std::string> names;
  for (const BufferDecl& b : phase.buffers) names.push_back(b.name);
  return Status::errorf("phase {}: no buffer named \"{}\" (buffers: {})", phase.name, buffer_name,
                        names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
}

Status CpuSession::read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) {
  DSV41_ASSIGN_OR_RETURN(TensorView view, output(phase, "logits"));
  const int64_t vocab = config_.vocab_size;
  if (view.dtype != DType::F32 || view.numel() != phase.rows * vocab)
    return Status::errorf("phase {}: logits buffer is {} [{}], expected F32 [{}, {}]", phase.name,
                          dtype_name(view.dtype), fmt::join(view.shape, ", "), phase.rows, vocab);
  if (first_row < 0 || rows < 0 || first_row + rows > phase.rows)
    return Status::errorf("phase {}: logits rows [{}, {}) outside the phase's {} rows", phase.name, first_row,
                          first_row + rows, phase.rows);
  std::memcpy(out, view.data + first_row * vocab * 4, static_cast<size_t>(rows * vocab) * 4);
  return Status::ok();
}

void CpuSession::reset_slot(int slot) {
  DSV41_CHECK(slot >= 0 && slot < slots_);
  const uint64_t per_slot = calls_.state_bytes_per_slot;
  if (per_slot > 0) std::memset(state_.data() + slot * per_slot, 0, per_slot);
}

}  // namespace dsv41::cpu
