// runtime/generate.h — greedy generation for one prompt on a backend (CPU by default): every rank a thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/program_file.h"
#include "common/status.h"
#include "runtime/draft_verify.h"
#include "runtime/rank_session.h"
#include "runtime/round_runner.h"

namespace dsv41 {

struct GenerateOptions {
  std::string program_dir, model_dir;  // program_dir holds rank0.fb .. rank{W-1}.fb of one world
  std::vector<int32_t> prompt;
  int max_tokens = 16;
  int64_t segment_rows = 0;  // 0: the first planned prefill size; 1: token by token through decode.r1
  bool stop_at_eos = true;
  bool all_logits = false;
  // Drafts per round (0: serial decoding), at most the programs' planned draft_tokens; each round
  // verifies them in one decode window and keeps exactly the tokens serial decoding would choose.
  int64_t draft_tokens = 0;
  Drafter drafter;  // empty: the programs' DSpark Draft phases when planned, else lookup_drafts
  // Makes the world's backend (world = the number of programs); empty: the CPU backend.
  BackendFactory backend;
};

struct GenerateResult {
  std::vector<int32_t> tokens;
  // The last logits of each step (the prompt's last row, then each decode step), or every row
  // (each prompt row, then each decode step) when all_logits.
  std::vector<std::vector<float>> logits;
  DraftStats drafting;  // rounds, drafts and accepted drafts (all zero without drafting)
  std::string drafter;  // who proposed the drafts: "dspark", "prompt lookup" or "the given drafter"
};

// Prefills the prompt in segments of one planned size, then decodes greedily through decode.r1
// (argmax, ties to the lower id) until max_tokens or eos. Every rank runs the same phases; all
// hold the same logits, and rank 0's are returned. A failure on any rank ends every rank; the
// message is the first failure's.
Result<GenerateResult> generate(const GenerateOptions& options);

// What a generation runs, decided once from the request and rank 0's program.
struct GeneratePlan {
  std::string prefill_phase;  // "prefill.nN" or "decode.r1"
  int64_t segment_rows = 0;
  int32_t eos = -1;           // -1 when generation ignores eos
  int64_t vocab = 0;
  std::vector<int64_t> decode_rows;  // the planned decode buckets (a drafted round takes the smallest that fits)
};

// Checks the request against the world's config and settings (prompt ids in the vocabulary, prompt +
// max tokens within the planned context, a planned segment size) and decides the plan.
Result<GeneratePlan> plan_generation(const GenerateOptions& options, const ProgramFile& program0);

// A program that lacks a phase the plan runs (its prefill phase, and decode.r1 when decoding) is
// refused, naming the phases it has.
Status check_generation_phases(const GeneratePlan& plan, int max_tokens, const ProgramFile& program);

// Prefills and decodes as generate() does, on `rounds`: a World of rank threads, or rank 0 of a
// world of rank processes (runtime/dist/leader_rounds.h).
Result<GenerateResult> generate_on(RoundRunner& rounds, const GenerateOptions& options, const GeneratePlan& plan);

// The programs of one world, rank i at index i: every rank*.fb of the folder, all present, all of
// the same world and agreement digest.
Result<std::vector<ProgramFile>> load_world_programs(const std::string& program_dir);

// The index of the largest value, the lower index on ties (NaN never wins).
int32_t greedy_token(const float* logits, int64_t n);

}  // namespace dsv41
