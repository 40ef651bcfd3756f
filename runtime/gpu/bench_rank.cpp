// runtime/gpu/bench_rank.cpp — one bench rank process: program, agreement on the bench's flags, NCCL, the bench, stop.
#include "runtime/gpu/bench_rank.h"

#include "runtime/gpu/cuda_rank_backend.h"

namespace dsv41::gpu {
namespace {

// A follower's end: rank 0's Stop, once rank 0 has measured too.
Status await_stop(dist::Control& control) {
  DSV41_ASSIGN_OR_RETURN(dist::Frame frame, control.next_command());
  if (frame.type != dist::FrameType::Stop)
    return Status::errorf("rank 0's {}: a bench follower expects only Stop",
                          dist::frame_type_name(static_cast<uint16_t>(frame.type)));
  return control.stop();
}

}  // namespace

Status run_bench_as_rank(BenchOptions o, dist::RankProcessOptions rank, const BenchReportSink& on_report) {
  DSV41_TRY(check_bench_options(o));  // before waiting for the other ranks
  rank.program = o.program;
  rank.purpose = bench_agreement(o);
  DSV41_ASSIGN_OR_RETURN(ProgramFile program, dist::load_rank_program(rank));
  o.program = program.source();
  CudaRankOptions cuda;
  cuda.cuda = bench_cuda_options(o);
  DSV41_ASSIGN_OR_RETURN(std::shared_ptr<CudaRankBackend> backend, CudaRankBackend::open(cuda));
  rank.backend = backend;
  return dist::run_in_world(rank, program, [&](dist::Control& control, dist::RankBackend&) -> Status {
    DSV41_ASSIGN_OR_RETURN(o.exchange, backend->join(program, control));
    o.nccl = backend->nccl_exchange();
    if (!control.leader()) {
      DSV41_TRY(run_bench(o, [](const BenchReport&) { return Status::ok(); }));
      return await_stop(control);
    }
    DSV41_TRY(run_bench(o, on_report));
    return control.stop();
  });
}

}  // namespace dsv41::gpu
