// common/kernel_launch.cpp — dispatch from an op to its launch function, and the helpers they share.
#include "common/kernel_launch.h"

#include <map>

#include "common/kernel_launch_ops.h"

namespace dsv41 {

Result<int64_t> arg_rows(const Call& call, const CallEnv& env, const std::string& arg) {
  const Arg* a = call.find_arg(arg);
  if (!a) return Status::errorf("op {}: argument {} missing", call.op, arg);
  if (a->kind == ArgKind::Weight) {
    const std::vector<int64_t> shape = env.weight_shape ? env.weight_shape(*a) : std::vector<int64_t>{};
    if (shape.empty()) return Status::errorf("op {}: weight {} has no shape", call.op, arg);
    return shape[0];
  }
  const BufferDecl* decl = env.buffer ? env.buffer(*a) : nullptr;
  if (!decl || decl->shape.empty()) return Status::errorf("op {}: argument {} has no rows", call.op, arg);
  return decl->shape[0];
}

Result<LaunchDims> launch_dims(const Call& call, const CallEnv& env) {
  using Launch = Result<LaunchDims> (*)(const Call&, const CallEnv&);
#define DSV41_LAUNCH_ENTRY(op) {#op, &launch_##op},
  static const std::map<std::string, Launch> table = {DSV41_LAUNCH_OPS(DSV41_LAUNCH_ENTRY)};
#undef DSV41_LAUNCH_ENTRY
  auto it = table.find(call.op);
  if (it == table.end()) return Status::errorf("op {}: no kernel launch is defined", call.op);
  return it->second(call, env);
}

}  // namespace dsv41
