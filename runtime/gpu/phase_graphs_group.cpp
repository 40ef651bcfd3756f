// runtime/gpu/phase_graphs_group.cpp — the ranks' phases paired exchange by exchange, one capture per phase across the rank streams, and its replay or eager launch.
#include "runtime/gpu/phase_graphs_group.h"

#include <fmt/ranges.h>

namespace dsv41::gpu {

GroupPhaseGraphs::~GroupPhaseGraphs() {
  for (CUgraphExec e : execs_)
    if (e) (void)driver_.cuGraphExecDestroy(e);
  for (CUgraph g : graphs_)
    if (g) (void)driver_.cuGraphDestroy(g);
  for (CUevent e : ready_) (void)driver_.cuEventDestroy(e);
  for (CUevent e : copied_) (void)driver_.cuEventDestroy(e);
  for (CUevent e : joined_) (void)driver_.cuEventDestroy(e);
  if (fork_) (void)driver_.cuEventDestroy(fork_);
  for (CUstream s : streams_)
    if (s) (void)driver_.cuStreamDestroy(s);
}

size_t GroupPhaseGraphs::graph_count() const {
  size_t n = 0;
  for (CUgraphExec e : execs_) n += e != nullptr;
  return n;
}

Result<std::vector<GroupPhaseGraphs::Exchange>> GroupPhaseGraphs::pair_exchanges(size_t index) const {
  const size_t world = ranks_.size();
  std::vector<std::vector<size_t>> calls(world);  // per rank, its exchange calls in order
  for (size_t r = 0; r < world; ++r) {
    const PhaseGraphs& p = phase(r, index);
    if (p.phase().name != phase(0, index).phase().name || p.phase().rows != phase(0, index).phase().rows)
      return Status::errorf("phase #{}: rank {} has {} ({} rows) where rank 0 has {} ({} rows)", index, r,
                            p.phase().name, p.phase().rows, phase(0, index).phase().name, phase(0, index).phase().rows);
    for (size_t i = 0; i < p.size(); ++i)
      if (p.call(i).captured != BoundCall::Host::None) calls[r].push_back(i);
    if (calls[r].size() != calls[0].size())
      return Status::errorf("phase {}: rank {} makes {} exchanges, rank 0 makes {}", p.phase().name, r, calls[r].size(),
                            calls[0].size());
  }
  std::vector<Exchange> out;
  for (size_t k = 0; k < calls[0].size(); ++k) {
    Exchange e;
    const BoundCall& first = phase(0, index).call(calls[0][k]);
    e.sum = first.captured == BoundCall::Host::Sum;
    for (size_t r = 0; r < world; ++r) {
      const BoundCall& c = phase(r, index).call(calls[r][k]);
      // The exchange pairs up only if every rank sends what the others expect: the same kind and sizes.
      if (c.captured != first.captured || (e.sum ? c.width != first.width : c.widths != first.widths))
        return Status::errorf("phase {}, exchange #{}: rank {}'s {} (width {}, widths [{}]) does not pair with rank 0's "
                              "{} (width {}, widths [{}])",
                              phase(0, index).phase().name, k, r, c.call->op, c.width, fmt::join(c.widths, ", "),
                              first.call->op, first.width, fmt::join(first.widths, ", "));
      if (!e.sum && c.widths.size() != world)
        return Status::errorf("phase {}, exchange #{}: widths [{}] for a world of {}", phase(0, index).phase().name, k,
                              fmt::join(c.widths, ", "), world);
      e.call.push_back(calls[r][k]);
    }
    out.push_back(std::move(e));
  }
  return out;
}

Status GroupPhaseGraphs::record(CUevent event, size_t rank) {
  return driver_.check(driver_.cuEventRecord(event, stream(rank)), fmt::format("cuEventRecord(rank {}'s stream)", rank));
}

Status GroupPhaseGraphs::wait(size_t rank, CUevent event) {
  return driver_.check(driver_.cuStreamWaitEvent(stream(rank), event, 0),
                       fmt::format("cuStreamWaitEvent(rank {}'s stream)", rank));
}

Status GroupPhaseGraphs::exchange(size_t index, const Exchange& e) {
  const size_t world = ranks_.size();
  const int64_t rows = phase(0, index).phase().rows;
  const int64_t n = rows * phase(0, index).call(e.call[0]).width;  // sum: floats per rank
  const std::vector<GatherBlock> blocks =
      e.sum ? std::vector<GatherBlock>{} : gather_blocks(rows, phase(0, index).call(e.call[0]).widths);
  for (size_t r = 0; r < world; ++r) DSV41_TRY(record(ready_[r], r));
  for (size_t r = 0; r < world; ++r) {
    for (size_t s = 0; s < world; ++s)
      if (s != r) DSV41_TRY(wait(r, ready_[s]));
    const CUdeviceptr staging = phase(r, index).call(e.call[r]).staging;
    for (size_t s = 0; s < world; ++s) {
      const uint64_t offset = e.sum ? s * static_cast<uint64_t>(n) : blocks[s].offset;
      const uint64_t count = e.sum ? static_cast<uint64_t>(n) : blocks[s].count;
      if (count == 0) continue;
      DSV41_TRY(driver_.check(driver_.cuMemcpyDtoDAsync(staging + offset * sizeof(float), phase(s, index).call(e.call[s]).x,
                                                        count * sizeof(float), stream(r)),
                              fmt::format("cuMemcpyDtoDAsync_v2(rank {}'s partial, {} floats, into rank {}'s staging)", s,
                                          count, r)));
    }
    DSV41_TRY(record(copied_[r], r));
  }
  for (size_t r = 0; r < world; ++r) {
    for (size_t s = 0; s < world; ++s)
      if (s != r) DSV41_TRY(wait(r, copied_[s]));
    const BoundCall& c = phase(r, index).call(e.call[r]);
    if (e.sum) DSV41_TRY(sum_(c.staging, c.x, n, static_cast<int>(world), stream(r)));
  }
  return Status::ok();
}

Status GroupPhaseGraphs::enqueue(size_t index) {
  const size_t world = ranks_.size();
  DSV41_TRY(record(fork_, 0));
  for (size_t r = 1; r < world; ++r) DSV41_TRY(wait(r, fork_));
  const std::vector<Exchange>& exchanges = exchanges_[index];
  // Segment k: each rank's calls from exchange k-1's call (its kernel included) up to exchange k's.
  for (size_t k = 0; k <= exchanges.size(); ++k) {
    if (k > 0) {
      const Status exchanged = exchange(index, exchanges[k - 1]);
      if (!exchanged.is_ok())
        return exchanged.with_context(fmt::format("phase {}, exchange #{}", phase(0, index).phase().name, k - 1));
    }
    for (size_t r = 0; r < world; ++r) {
      const size_t begin = k == 0 ? 0 : exchanges[k - 1].call[r];
      const size_t end = k < exchanges.size() ? exchanges[k].call[r] : phase(r, index).size();
      DSV41_TRY(phase(r, index).launch_kernels(begin, end, stream(r)));
    }
  }
  for (size_t r = 1; r < world; ++r) {
    DSV41_TRY(record(joined_[r], r));
    DSV41_TRY(wait(0, joined_[r]));
  }
  return Status::ok();
}

Status GroupPhaseGraphs::build(bool graphs) {
  const size_t world = ranks_.size();
  if (world < 2) return Status::errorf("a graph for every rank on one GPU: world {} (needs 2 ranks or more)", world);
  const size_t phases = ranks_[0]->size();
  for (size_t r = 1; r < world; ++r)
    if (ranks_[r]->size() != phases)
      return Status::errorf("rank {} has {} phases, rank 0 has {}", r, ranks_[r]->size(), phases);
  for (size_t p = 0; p < phases; ++p) {
    DSV41_ASSIGN_OR_RETURN(std::vector<Exchange> paired, pair_exchanges(p));
    exchanges_.push_back(std::move(paired));
  }
  auto event = [&](CUevent& e) {
    return driver_.check(driver_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate(exchange edge)");
  };
  streams_.assign(world, nullptr);
  for (CUstream& stream : streams_)
    DSV41_TRY(driver_.check(driver_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate(exchange group)"));
  DSV41_TRY(event(fork_));
  for (auto* events : {&ready_, &copied_, &joined_}) {
    events->assign(world, nullptr);
    for (CUevent& e : *events) DSV41_TRY(event(e));
  }
  if (!graphs) return Status::ok();
  graphs_.assign(phases, nullptr);
  execs_.assign(phases, nullptr);
  for (size_t p = 0; p < phases; ++p) {
    const std::string& name = phase(0, p).phase().name;
    // Thread-local capture on rank 0's stream; the others join it through the fork event.
    DSV41_TRY(driver_.check(driver_.cuStreamBeginCapture(stream(0), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                            fmt::format("cuStreamBeginCapture_v2(phase {}, every rank)", name)));
    const Status enqueued = enqueue(p);
    const Status ended = driver_.check(driver_.cuStreamEndCapture(stream(0), &graphs_[p]),
                                       fmt::format("cuStreamEndCapture(phase {}, every rank)", name));
    DSV41_TRY(enqueued);
    DSV41_TRY(ended);
    DSV41_TRY(driver_.check(driver_.cuGraphInstantiate(&execs_[p], graphs_[p], 0),
                            fmt::format("cuGraphInstantiateWithFlags(phase {}, every rank)", name)));
  }
  return Status::ok();
}

Status GroupPhaseGraphs::run(size_t index) {
  if (index >= exchanges_.size()) return Status::errorf("phase #{}: the group has {} phases", index, exchanges_.size());
  const std::string& name = phase(0, index).phase().name;
  if (!execs_.empty()) {
    DSV41_TRY(driver_.check(driver_.cuGraphLaunch(execs_[index], stream(0)),
                            fmt::format("cuGraphLaunch(phase {}, every rank)", name)));
    return driver_.check(driver_.cuStreamSynchronize(stream(0)), fmt::format("cuStreamSynchronize(phase {})", name));
  }
  Status status = enqueue(index);
  // Every stream is waited for, whatever happened: the ranks' next staging must not overtake this run.
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const Status synced =
        driver_.check(driver_.cuStreamSynchronize(stream(r)), fmt::format("cuStreamSynchronize(phase {}, rank {})", name, r));
    if (status.is_ok()) status = synced;
  }
  return status;
}

}  // namespace dsv41::gpu
