// runtime/dist/agreement.h — what every rank must agree on before a world starts, and the one refusal message when ranks differ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/program_file.h"
#include "common/status.h"

namespace dsv41::dist {

// One rank's side of the start-up agreement (sent in its Hello).
struct RankFacts {
  int32_t rank = 0, world = 1;
  uint64_t program_digest = 0;    // this rank's program bytes (differs per rank; reported, not compared)
  uint64_t agreement_digest = 0;  // the planner's digest of every setting that must agree
  uint64_t config_digest = 0, pack_digest = 0;
  std::string settings;  // "context 64, slots 2, prefill [8, 4], decode [1, 2], activations BF16"
  std::string target;    // the program's planned target ("h200", "none")
  std::string arch;      // the device this rank runs on ("cpu", "sm_90")
  std::string build;     // the runtime's build version
};

// The facts of a loaded program run on `arch` by this build.
RankFacts facts_of(const ProgramFile& program, const std::string& arch);
// "dsv41-rt program format N, control protocol M": ranks of other builds are refused.
std::string build_version();

std::vector<uint8_t> encode_facts(const RankFacts& facts);
Result<RankFacts> decode_facts(const std::vector<uint8_t>& payload, const std::string& peer);

// `facts[i]` is rank i's. OK when every compared field is equal on every rank; otherwise one
// message naming each field that differs with every rank's value, e.g.
//   "ranks disagree: pack_digest: rank 0 00ab.., rank 1 00ab.., rank 2 ff01..; build: ...".
// The same facts give the same message, so every rank refuses with the same words.
Status check_agreement(const std::vector<RankFacts>& facts);

}  // namespace dsv41::dist
