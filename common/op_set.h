// common/op_set.h — the op set: every op a call list may name, its constants and its arguments.
//
// This table is the contract between the emitter (compiler/emitter*.cpp), which only builds calls
// that match it, and the backends, which check every call against it before running a program.
// Semantics of each op: docs/ops.md; the math they implement: docs/model.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/call_list.h"
#include "common/status.h"

namespace dsv41 {

struct ArgSpec {
  std::string_view name;
  ArgKind kind;
  bool optional = false;
};

struct OpSpec {
  std::string_view name;
  std::vector<std::string_view> constants;
  std::vector<ArgSpec> args;
};

const std::vector<OpSpec>& op_specs();
const OpSpec* find_op(std::string_view name);
// Refuses a call whose op is unknown, or whose constants or arguments differ from the spec
// (missing, unknown, or of the wrong kind), naming the op and the argument.
Status check_call_shape(const Call& call);

}  // namespace dsv41
