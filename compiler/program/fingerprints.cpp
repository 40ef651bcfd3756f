// compiler/program/fingerprints.cpp — phase hashes over names, not indices, so a golden diff points at what changed.
#include "compiler/program/fingerprints.h"

#include <map>
#include <sstream>

#include <fmt/format.h>

#include "common/hashing.h"

namespace dsv41 {
namespace {

std::string buffer_text(const BufferDecl& b) {
  return fmt::format("{}:{}[{}]@{}", b.name, dtype_name(b.dtype), fmt::join(b.shape, ","), b.offset);
}

std::string weight_text(const fb::Program& program, int64_t index) {
  const fb::PlannedTensor* t = program.weights()->Get(static_cast<uint32_t>(index));
  return fmt::format("{}[{}]", t->name()->str(), fmt::join(*t->local_shape(), ","));
}

std::map<std::string, std::string> parse_lines(const std::string& text) {
  std::map<std::string, std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    lines[line.substr(0, space)] = line.substr(space + 1);
  }
  return lines;
}

}  // namespace

std::string canonical_call(const Call& call, const Phase& phase, const CallLists& lists, const fb::Program& program) {
  std::string text = call.op;
  for (const Constant& k : call.constants) text += fmt::format(" {}={}", k.name, k.value);
  text += " |";
  for (const Arg& a : call.args) {
    text += " " + a.name + "=";
    switch (a.kind) {
      case ArgKind::Scratch: text += buffer_text(phase.buffers[a.ints[0]]); break;
      case ArgKind::State: text += "state:" + buffer_text(lists.state_buffers[a.ints[0]]); break;
      case ArgKind::Statics: text += "statics"; break;
      case ArgKind::Weight: text += weight_text(program, a.ints[0]); break;
      case ArgKind::WeightList: {
        Hasher h;  // every expert's name and shape, folded to keep the text short
        for (int64_t index : a.ints) h.add(weight_text(program, index));
        text += fmt::format("list{}:{}", a.ints.size(), hex64(h.digest()));
        break;
      }
      case ArgKind::Int: text += std::to_string(a.ints[0]); break;
      case ArgKind::Float: text += fmt::format("{:.17g}", a.real); break;
      case ArgKind::IntList: text += fmt::format("[{}]", fmt::join(a.ints, ",")); break;
    }
  }
  return text;
}

std::vector<PhaseFingerprint> phase_fingerprints(const CallLists& lists, const fb::Program& program) {
  std::vector<PhaseFingerprint> out;
  for (const Phase& phase : lists.phases) {
    Hasher h;
    h.add(phase.name).add_i64(phase.rows).add(phase.arena_bytes);
    for (const Call& call : phase.calls) h.add(canonical_call(call, phase, lists, program));
    out.push_back({phase.name, h.digest()});
  }
  return out;
}

std::string call_list_text(const CallLists& lists, const fb::Program& program) {
  std::string text;
  for (const Phase& phase : lists.phases) {
    text += fmt::format("phase {} rows={} arena={} calls={}\n", phase.name, phase.rows, phase.arena_bytes,
                        phase.calls.size());
    for (size_t i = 0; i < phase.calls.size(); ++i) {
      const Call& call = phase.calls[i];
      const KernelLaunch& l = call.launch;
      text += fmt::format("  {:3} {} | launch grid=({},{},{}) block={} shared={}\n", i,
                          canonical_call(call, phase, lists, program), l.grid[0], l.grid[1], l.grid[2], l.block,
                          l.dynamic_shared);
    }
  }
  return text;
}

std::vector<std::string> fingerprint_diff(const std::string& golden_text, const std::string& actual_text) {
  const auto golden = parse_lines(golden_text), actual = parse_lines(actual_text);
  std::vector<std::string> changes;
  for (const auto& [key, hash] : golden) {
    auto it = actual.find(key);
    if (it == actual.end()) changes.push_back(fmt::format("{}: in the golden, no longer emitted", key));
    else if (it->second != hash) changes.push_back(fmt::format("{}: changed (golden {}, now {})", key, hash, it->second));
  }
  for (const auto& [key, hash] : actual)
    if (!golden.count(key)) changes.push_back(fmt::format("{}: emitted, not in the golden", key));
  return changes;
}

}  // namespace dsv41
