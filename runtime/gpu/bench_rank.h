// runtime/gpu/bench_rank.h — `dsv41-rt bench` as one rank of a world of processes: every rank joins, agrees on the bench's flags, makes the NCCL communicator and runs the same bench, so the exchanges inside each replayed graph pair up.
#pragma once

#include "runtime/dist/rank_process.h"
#include "runtime/gpu/bench_runner.h"

namespace dsv41::gpu {

// options.program: the folder of rank*.fb (this rank reads its own) or this rank's program file.
// Every rank measures its own GPU; rank 0 hands its report to `on_report`, the others only show
// progress. Rank 0 stops the followers at the end. A failure is every rank's (docs/distributed.md).
Status run_bench_as_rank(BenchOptions options, dist::RankProcessOptions rank, const BenchReportSink& on_report);

}  // namespace dsv41::gpu
