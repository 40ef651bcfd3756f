// compiler/program/fingerprints.h — one hash per phase of a program's canonical call list, and a diff against goldens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/program_calls.h"
#include "schemas/program_generated.h"

namespace dsv41 {

struct PhaseFingerprint {
  std::string phase;
  uint64_t hash = 0;
};

// Canonical text of one call: op, constants, and every argument by name (buffers with their
// shape, dtype and offset; weights by tensor name and local shape), so the hash changes with
// anything a backend would do differently.
std::string canonical_call(const Call& call, const Phase& phase, const CallLists& lists, const fb::Program& program);
std::vector<PhaseFingerprint> phase_fingerprints(const CallLists& lists, const fb::Program& program);
// The readable form of what the fingerprints hash: per phase a header line (name, rows, arena), then
// one line per call, its index, canonical text and launch shape, so a golden diff shows the change.
std::string call_list_text(const CallLists& lists, const fb::Program& program);

// Compares golden lines with actual lines ("KEY HASH" each; '#' lines are comments) and returns one
// message per key that changed, vanished or appeared. Empty: identical.
std::vector<std::string> fingerprint_diff(const std::string& golden_text, const std::string& actual_text);

}  // namespace dsv41
