// runtime/round_plan.h — one scheduler round as a plain value (slots to reset, phases to run with their statics) and its byte encoding.
//
// Rank 0 decides a round; every rank runs it. Ranks that are threads share the value; ranks that are
// processes (the multi-GPU issue) receive the bytes, so the encoding is compact and checked on decode.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41 {

struct PhaseRun {
  std::string phase;                 // "decode.r2", "prefill.n8"
  std::vector<int32_t> statics;      // int32 [rows, kStaticsFields]
  std::vector<int32_t> logits_rows;  // rows whose logits rank 0 hands back, in this order
};

struct RoundPlan {
  uint64_t round = 0;
  std::vector<int32_t> reset_slots;  // zeroed before the runs (a new sequence takes the slot)
  std::vector<PhaseRun> runs;        // in order
  bool operator==(const RoundPlan& other) const;
};

inline bool operator==(const PhaseRun& a, const PhaseRun& b) {
  return a.phase == b.phase && a.statics == b.statics && a.logits_rows == b.logits_rows;
}

std::vector<uint8_t> encode_round_plan(const RoundPlan& plan);
// Refuses bytes that are not one whole encoded plan, naming the offset and what was expected there.
Result<RoundPlan> decode_round_plan(const std::vector<uint8_t>& bytes);

}  // namespace dsv41
