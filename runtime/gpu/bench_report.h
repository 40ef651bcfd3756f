// runtime/gpu/bench_report.h — what `dsv41-rt bench` prints: tables for a reader, or one JSON document.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/gpu/bench_runner.h"

namespace dsv41::gpu {

// The run's header, the roofline, one line per phase, and with per-call times a table per phase.
std::string bench_text(const BenchReport& report);

// The same numbers, every field named with its unit (ms, bytes, GB/s with 1e9 bytes a GB).
nlohmann::json bench_json(const BenchReport& report);

}  // namespace dsv41::gpu
