// runtime/gpu/gpu_session.cpp — boot of one CUDA rank (arch, kernels, memory check, weights, state, graphs) and its phase runs.
#include "runtime/gpu/gpu_session.h"

#include <algorithm>
#include <chrono>

#include "common/model_config.h"
#include "runtime/phase_checks.h"
#include "runtime/gpu/device_exchange_group.h"
#include "runtime/gpu/device_layout.h"

namespace dsv41::gpu {
namespace {

const char* error_code_name(int32_t code) {
  switch (code) {  // kernels/kernel_abi.cuh's error codes
    case 1: return "ERR_TOKEN (a token outside the embedding table)";
    case 2: return "ERR_EXPERT (an expert id outside the experts)";
    case 3: return "ERR_CAPACITY (a cache entry beyond the state buffer)";
    case 4: return "ERR_SELECTION (a selected entry or candidate block out of range)";
    case 5: return "ERR_STATICS (inconsistent statics)";
    default: return "an unknown error code";
  }
}

double gib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

// "sm_90a" cubins load on compute capability 9.0: the arch without its feature suffix.
std::string base_arch(std::string arch) {
  if (!arch.empty() && arch.back() == 'a') arch.pop_back();
  return arch;
}

}  // namespace

GpuSession::~GpuSession() {
  graphs_.clear();  // graphs before the stream and the memory they name
  if (stream_) (void)driver_.cuStreamDestroy(stream_);
}

Result<std::unique_ptr<GpuSession>> GpuSession::create(const ProgramFile& file, const GpuSessionOptions& options,
                                                       CudaDriver& driver, DeviceExchange& exchange) {
  const fb::Program& p = file.program();
  std::unique_ptr<GpuSession> s(new GpuSession(driver, exchange));
  DSV41_ASSIGN_OR_RETURN(ModelConfig config,
                         parse_model_config(p.config_json()->str(), file.source() + ": embedded config.json"));
  s->rank_ = p.rank();
  s->world_ = p.world();
  s->slots_ = p.settings()->slots();
  s->context_ = p.settings()->context();
  s->vocab_ = config.vocab_size;
  s->eager_ = options.eager;
  auto calls = read_call_lists(p);
  if (!calls.is_ok()) return calls.status().with_context(file.source());
  s->calls_ = std::move(calls).value();

  // The device must be the one the kernels were compiled for, before anything is loaded.
  DSV41_ASSIGN_OR_RETURN(const std::string device_arch, driver.device_arch());
  const auto* kernels = p.kernels();
  if (!kernels || kernels->size() == 0)
    return Status::errorf("{}: no kernels (planned with --target none); plan it with --target h200 for the CUDA backend",
                          file.source());
  for (const fb::Kernel* k : *kernels)
    if (base_arch(k->arch()->str()) != device_arch)
      return Status::errorf("{}: kernel {} is compiled for {} (target {}), but this device is {}", file.source(),
                            k->key()->str(), k->arch()->str(), p.target()->str(), driver.describe_device());

  DSV41_TRY(driver.check(driver.cuStreamCreate(&s->stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  s->launcher_ = std::make_unique<KernelLauncher>(driver);
  for (const fb::Kernel* k : *kernels) {
    if (!k->cubin() || k->cubin()->size() == 0)
      return Status::errorf("{}: kernel {} has no cubin", file.source(), k->key()->str());
    const std::vector<uint8_t> cubin(k->cubin()->begin(), k->cubin()->end());
    DSV41_TRY(s->launcher_->load(cubin, k->entry()->str(), k->key()->str()).status());
  }

  // Sizes first, then the memory check, then allocations: a plan that cannot fit fails before any.
  DSV41_ASSIGN_OR_RETURN(s->layout_, plan_device_layout(file, s->calls_));
  auto engram = plan_engram_step(p, s->calls_);
  if (!engram.is_ok()) return engram.status().with_context(file.source());
  s->layout_.engram_bytes = engram->device_bytes();
  s->layout_.engram_pinned_bytes = engram->active() ? engram->pinned_bytes() : 0;
  s->layout_.engram_copy_per_row = engram->active() ? engram->copy_per_row() : 0;
  // A rank run alone (no peers: bench) makes no exchange either.
  const ExchangeBinding binding = s->world_ == 1 || options.alone ? ExchangeBinding::None
                                  : exchange.host_side() ? ExchangeBinding::Host
                                                         : ExchangeBinding::Captured;
  if (binding == ExchangeBinding::Captured) s->layout_.exchange_bytes = exchange_staging_bytes(s->calls_, s->world_);
  const DeviceLayout& layout = s->layout_;
  DSV41_ASSIGN_OR_RETURN(const auto before, driver.memory_info());
  const std::string ledger = ledger_lines(p, layout);
  if (layout.total() > before.first)
    return Status::errorf("{}: rank {} needs {:.2f} GiB of device memory but {} has {:.2f} GiB free of {:.2f} GiB:\n{}",
                          file.source(), s->rank_, gib(layout.total()), driver.describe_device(), gib(before.first),
                          gib(before.second), ledger);

  DSV41_ASSIGN_OR_RETURN(s->weights_, DeviceBuffer::allocate(driver, layout.stored.total));
  DSV41_ASSIGN_OR_RETURN(s->tables_, DeviceBuffer::allocate(driver, layout.table_bytes));
  DSV41_ASSIGN_OR_RETURN(s->state_, DeviceBuffer::allocate(driver, layout.state_bytes));
  DSV41_ASSIGN_OR_RETURN(s->arena_, DeviceBuffer::allocate(driver, layout.arena_bytes));
  DSV41_ASSIGN_OR_RETURN(s->statics_, DeviceBuffer::allocate(driver, layout.statics_bytes));
  DSV41_ASSIGN_OR_RETURN(s->errors_, DeviceBuffer::allocate(driver, layout.error_bytes));
  DSV41_ASSIGN_OR_RETURN(s->exchange_staging_, DeviceBuffer::allocate(driver, layout.exchange_bytes));
  // Everything on the rank's stream, then waited for: a context-wide synchronise is refused while
  // another rank's thread is capturing.
  for (DeviceBuffer* b : {&s->state_, &s->arena_, &s->statics_, &s->errors_})
    if (b->bytes() > 0)
      DSV41_TRY(driver.check(driver.cuMemsetD8Async(b->ptr(), 0, b->bytes(), s->stream_), "cuMemsetD8Async(zeroing)"));
  DSV41_ASSIGN_OR_RETURN(const LoadStats loaded_stats, load_weights(driver, p, layout, s->weights_, options.model_dir,
                                                                    options.synthetic_seed, options.load));
  DSV41_TRY(upload_tables(driver, layout, s->weights_, s->tables_, s->stream_));
  DSV41_TRY(driver.check(driver.cuStreamSynchronize(s->stream_), "cuStreamSynchronize (after the weight load)"));
  DSV41_ASSIGN_OR_RETURN(const auto loaded, driver.memory_info());

  DeviceAddresses addresses{s->weights_.ptr(), s->tables_.ptr(), s->state_.ptr(), s->arena_.ptr(),
                            s->statics_.ptr(),  s->errors_.ptr(), s->exchange_staging_.ptr(), {}};
  if (engram->active()) {
    auto step = EngramStep::create(p, std::move(engram).value(), driver, s->slots_, options.model_dir,
                                   options.synthetic_seed, s->stream_);
    if (!step.is_ok()) return step.status().with_context(options.model_dir);
    s->engram_ = std::move(step).value();
    addresses.engram = s->engram_->binding();
  }
  const auto graph_start = std::chrono::steady_clock::now();
  for (const Phase& phase : s->calls_.phases) {
    DSV41_ASSIGN_OR_RETURN(PhaseGraphs graphs,
                           bind_phase(driver, *s->launcher_, p, s->calls_, phase, s->layout_, addresses, binding));
    if (options.alone) graphs.skip_op("exchange_gather");
    s->graphs_.push_back(std::move(graphs));
  }
  // Ranks on one GPU: the world's graphs hold every rank's calls, built by the last rank to join.
  s->group_ = binding == ExchangeBinding::Captured ? exchange.as_group() : nullptr;
  std::string group_report;
  if (s->group_) {
    DSV41_ASSIGN_OR_RETURN(group_report, s->group_->join(s->rank_, s->stream_, s->graphs_, !s->eager_));
  } else {
    for (PhaseGraphs& graphs : s->graphs_) DSV41_TRY(graphs.build(s->stream_, !s->eager_, exchange));
  }
  DSV41_TRY(driver.check(driver.cuStreamSynchronize(s->stream_), "cuStreamSynchronize (after graph build)"));
  const double graph_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - graph_start).count();
  DSV41_ASSIGN_OR_RETURN(const auto after, driver.memory_info());

  size_t graph_count = 0, largest_phase = 0;
  for (const PhaseGraphs& g : s->graphs_) graph_count += g.graph_count();
  for (const Phase& phase : s->calls_.phases) largest_phase = std::max(largest_phase, phase.calls.size());
  s->error_words_.resize(largest_phase);
  s->measure_ = {layout.total(), before.first, loaded.first, after.first, graph_count, graph_seconds};
  s->boot_report_ = fmt::format(
      "rank {}: {}\n{}\n"
      "rank {}: device free {:.3f} GiB before, {:.3f} GiB after allocating (used {:.3f} GiB; allocated {:.3f} GiB); "
      "weights {} {:.3f} GB in {:.2f} s ({:.2f} GB/s)\n"
      "rank {}: {} graphs for {} phases built in {:.3f} s, {:.3f} GiB of graph memory ({}); free after {:.3f} GiB",
      s->rank_, driver.describe_device(), ledger, s->rank_, gib(before.first), gib(loaded.first),
      gib(before.first - loaded.first), gib(layout.total()), options.synthetic_seed ? "synthesised" : "read",
      loaded_stats.bytes / 1e9, loaded_stats.seconds, loaded_stats.gb_per_s(), s->rank_, graph_count,
      s->calls_.phases.size(), graph_seconds, gib(loaded.first > after.first ? loaded.first - after.first : 0),
      s->eager_ ? "--eager: none captured"
      : s->group_ ? "this rank's calls are in the world's graphs, built by the last rank to boot"
                  : (binding == ExchangeBinding::Host       ? "split at host exchanges"
                     : binding == ExchangeBinding::Captured ? "one per phase, exchanges inside"
                                                            : "one per phase"),
      gib(after.first));
  if (binding != ExchangeBinding::None) s->boot_report_ += fmt::format("\nrank {}: exchange: {}", s->rank_, exchange.describe());
  if (!group_report.empty()) s->boot_report_ += "\n" + group_report;
  if (s->engram_) s->boot_report_ += fmt::format("\nrank {}: {}", s->rank_, s->engram_->describe());
  return s;
}

const Phase* GpuSession::find_phase(const std::string& name) const { return find_phase_in(calls_.phases, name); }

Result<size_t> GpuSession::phase_index(const Phase& phase) const { return index_of_phase(calls_.phases, phase); }

Status GpuSession::check_statics(const Phase& phase, const std::vector<int32_t>& statics) const {
  return check_phase_statics(phase, statics, slots_, context_, vocab_);
}

Status GpuSession::check_errors(size_t index) {
  const Phase& phase = calls_.phases[index];
  const size_t n = phase.calls.size();
  DSV41_TRY(errors_.download(error_words_.data(), n * sizeof(int32_t)));
  for (size_t i = 0; i < n; ++i)
    if (error_words_[i] != 0)
      return Status::errorf("phase {} call #{} ({}): the kernel reported error {}: {}", phase.name, i,
                            phase.calls[i].op, error_words_[i], error_code_name(error_words_[i]));
  return Status::ok();
}

Status GpuSession::stage(const Phase& phase, const std::vector<int32_t>& statics) {
  DSV41_TRY(phase_index(phase).status());
  DSV41_TRY(check_statics(phase, statics));
  // The step's Engram rows first: their copy is enqueued ahead of the replay on the same stream.
  if (engram_) DSV41_TRY(engram_->stage(phase, statics, stream_));
  // On the rank's stream, so the replay that follows reads them (the stream does not wait for the legacy one).
  DSV41_TRY(driver_.check(driver_.cuMemcpyHtoDAsync(statics_.ptr(), statics.data(), statics.size() * sizeof(int32_t), stream_),
                          "cuMemcpyHtoDAsync_v2(statics)"));
  DSV41_TRY(driver_.check(driver_.cuMemsetD8Async(errors_.ptr(), 0, phase.calls.size() * sizeof(int32_t), stream_),
                          "cuMemsetD8Async(error words)"));
  // A copy from pageable memory is staged before the call returns, so `statics` may go; not waited
  // for (a caller timing replays synchronises the stream first).
  return Status::ok();
}

Status GpuSession::enqueue(const Phase& phase, const CallObserver* observer) {
  DSV41_ASSIGN_OR_RETURN(const size_t index, phase_index(phase));
  if (group_) {
    if (observer) return Status::errorf("phase {}: a run observed call by call needs a rank alone (bench --alone), "
                                        "not a world on one GPU", phase.name);
    return group_->run(rank_, index);  // every rank's calls at once; waits for them
  }
  return graphs_[index].replay(stream_, exchange_, eager_, observer);
}

Status GpuSession::finish(const Phase& phase) {
  DSV41_ASSIGN_OR_RETURN(const size_t index, phase_index(phase));
  DSV41_TRY(driver_.check(driver_.cuStreamSynchronize(stream_), fmt::format("cuStreamSynchronize(phase {})", phase.name)));
  return check_errors(index);
}

Status GpuSession::run(const Phase& phase, const std::vector<int32_t>& statics) {
  DSV41_TRY(stage(phase, statics));
  DSV41_TRY(enqueue(phase));
  return finish(phase);
}

Status GpuSession::read_logits(const Phase& phase, int64_t first_row, int64_t rows, float* out) {
  DSV41_ASSIGN_OR_RETURN(const size_t index, phase_index(phase));
  (void)index;
  for (const BufferDecl& b : phase.buffers) {
    if (b.name != "logits") continue;
    if (b.dtype != DType::F32 || b.bytes != static_cast<uint64_t>(phase.rows * vocab_) * 4)
      return Status::errorf("phase {}: logits buffer is {} bytes of {}, expected F32 [{}, {}]", phase.name, b.bytes,
                            dtype_name(b.dtype), phase.rows, vocab_);
    if (first_row < 0 || rows < 0 || first_row + rows > phase.rows)
      return Status::errorf("phase {}: logits rows [{}, {}) outside 0..{}", phase.name, first_row, first_row + rows,
                            phase.rows);
    return arena_.download(out, static_cast<size_t>(rows * vocab_) * 4, b.offset + static_cast<size_t>(first_row * vocab_) * 4);
  }
  return Status::errorf("phase {}: no buffer named \"logits\"", phase.name);
}

Result<std::vector<uint8_t>> GpuSession::read_buffer(const Phase& phase, const std::string& name) {
  DSV41_TRY(phase_index(phase).status());
  for (const BufferDecl& b : phase.buffers) {
    if (b.name != name) continue;
    std::vector<uint8_t> out(b.bytes);
    DSV41_TRY(arena_.download(out.data(), out.size(), b.offset));
    return out;
  }
  return Status::errorf("phase {}: no buffer named \"{}\"", phase.name, name);
}

void GpuSession::reset_slot(int slot) {
  DSV41_CHECK(slot >= 0 && slot < slots_);
  if (engram_) engram_->reset_slot(slot);
  const uint64_t per_slot = calls_.state_bytes_per_slot;
  if (per_slot == 0) return;
  Status zeroed = driver_.check(driver_.cuMemsetD8Async(state_.ptr() + slot * per_slot, 0, per_slot, stream_),
                                "cuMemsetD8Async(slot state)");
  if (zeroed.is_ok()) zeroed = driver_.check(driver_.cuStreamSynchronize(stream_), "cuStreamSynchronize(slot reset)");
  DSV41_CHECK(zeroed.is_ok());
}

}  // namespace dsv41::gpu
