// tests/gpu/gpu_op_check.h — the per-variant check of the GPU op tests: one case run on the CPU and on the
// GPU from the same bytes, every output compared (tests/gpu/gpu_op_test.cpp's flow comment says how).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>

#include "tests/gpu/gpu_op_device.h"
#include "tests/gpu/gpu_op_inputs.h"
#include "tests/gpu/gpu_op_plan.h"

namespace dsv41::gpu_test {

// Rewrites a case's generated inputs before both runs (empty: as generated).
using AdjustInputs = std::function<void(CallInputs&)>;

// Variants among `cases` whose key reads a weight in a scaled (FP8 / FP4) format.
int quantized_keys(const std::map<std::string, Case>& cases);

// Compiles the cases' variants (none with `device` null: a dry run), then checks each, failing the
// running test on any difference. Returns how many were checked.
int check_cases(const std::map<std::string, Case>& cases, const Target& target, const Device* device,
                const AdjustInputs& adjust = {});

// Fails the running test when some ops have no kernel (their calls were not checked).
void report_without_kernel(const std::set<std::string>& ops);

}  // namespace dsv41::gpu_test
