// common/kernel_contract.cpp — binds calls to kernel entries through the generated contract table,
// names variants, and writes the NVRTC source of one variant (rules: docs/kernels.md).
#include "common/kernel_contract.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "common/hashing.h"
#include "common/kernel_launch_ops.h"
#include "common/op_set.h"

namespace dsv41 {
namespace {
#include "kernels/kernel_table.inc"

const char* dtype_code_name(int64_t code) {
  switch (code) {
    case 0: return "f32";
    case 1: return "bf16";
    case 2: return "i32";
    case 3: return "packed";
    default: return "none";
  }
}

Result<int64_t> dtype_code(const Call& call, DType dtype, const std::string& arg) {
  switch (dtype) {
    case DType::F32: return 0;
    case DType::BF16: return 1;
    case DType::I32: return 2;
    case DType::U8: return 3;  // a cache packed in the official format (common/cache_format.h)
    default: return Status::errorf("op {}: argument {} has dtype {}, which no kernel takes", call.op, arg,
                                   dtype_name(dtype));
  }
}

// The one stored format of a Weight argument, or of every entry of a WeightList.
Result<WeightFormat> weight_format_arg(const Call& call, const CallEnv& env, const Arg& a) {
  if (a.ints.empty()) return Status::errorf("op {}: weight argument {} names no weight", call.op, a.name);
  std::optional<WeightFormat> first;
  for (int64_t index : a.ints) {
    const std::optional<WeightFormat> f = env.weight_format ? env.weight_format(index) : std::nullopt;
    if (!f) return Status::errorf("op {}: weight {} (index {}) has no stored format a kernel reads", call.op, a.name, index);
    if (first && *f != *first)
      return Status::errorf("op {}: weight list {} mixes formats {} and {}; one variant reads one format", call.op,
                            a.name, weight_format_name(*first), weight_format_name(*f));
    first = f;
  }
  return *first;
}

ArgKind kind_of(ParamType type) {
  switch (type) {
    case ParamType::Scratch: return ArgKind::Scratch;
    case ParamType::State: return ArgKind::State;
    case ParamType::Weight: return ArgKind::Weight;
    case ParamType::WeightList: return ArgKind::WeightList;
    case ParamType::IntList: return ArgKind::IntList;
    case ParamType::Real: return ArgKind::Float;
    case ParamType::Statics: return ArgKind::Statics;
    default: return ArgKind::Int;
  }
}

bool optional_arg(const Call& call, std::string_view arg) {
  const OpSpec* spec = find_op(call.op);
  if (!spec) return false;
  for (const ArgSpec& a : spec->args)
    if (a.name == arg) return a.optional;
  return false;
}

const Arg* suffixed_arg(const Call& call, std::string_view name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) return nullptr;
  return call.find_arg(std::string(name.substr(0, name.size() - suffix.size())));
}

}  // namespace

std::string_view param_type_name(ParamType type) {
  static constexpr std::string_view names[] = {"Rows",   "Int",    "Real",       "Statics", "Scratch",
                                               "State",  "Weight", "WeightList", "IntList", "Errors"};
  return names[static_cast<int>(type)];
}

const std::vector<KernelContract>& kernel_contracts() {
  static const std::vector<KernelContract> table(std::begin(kGeneratedContracts), std::end(kGeneratedContracts));
  return table;
}

const KernelContract* find_contract(std::string_view op) {
  for (const KernelContract& c : kernel_contracts())
    if (c.op == op) return &c;
  return nullptr;
}

const std::vector<KernelSource>& kernel_sources() {
  static const std::vector<KernelSource> sources(std::begin(kGeneratedSources), std::end(kGeneratedSources));
  return sources;
}

uint64_t contract_digest() {
  Hasher h;
  for (const KernelContract& c : kernel_contracts()) {
    h.add(c.op);
    for (std::string_view t : c.template_params) h.add(t);
    for (const KernelParam& p : c.params) {
      h.add(p.name);
      h.add(param_type_name(p.type));
    }
  }
  return h.digest();
}

Result<int64_t> int_param_value(const Call& call, const CallEnv& env, std::string_view name) {
  const std::string n(name);
  if (const Arg* a = call.find_arg(n); a && a->kind == ArgKind::Int) return a->ints.at(0);
  for (const Constant& c : call.constants)
    if (c.name == name) return c.value;
  if (const Arg* a = suffixed_arg(call, name, "_rows"); a && (a->kind == ArgKind::Weight || a->kind == ArgKind::State))
    return arg_rows(call, env, a->name);
  if (const Arg* a = suffixed_arg(call, name, "_count");
      a && (a->kind == ArgKind::WeightList || a->kind == ArgKind::IntList))
    return static_cast<int64_t>(a->ints.size());
  // An absent optional argument's rows: nothing to index.
  const std::string_view base = name.substr(0, name.rfind('_'));
  if (name.ends_with("_rows") && optional_arg(call, base)) return 0;
  return Status::errorf("op {}: Int parameter {} of kernels/{}.cuh binds to no Int argument, constant, <arg>_rows "
                        "or <arg>_count of the call",
                        call.op, name, call.op);
}

Result<Variant> variant_of(const Call& call, const CallEnv& env, const std::string& arch) {
  const KernelContract* contract = find_contract(call.op);
  if (!contract) return Status::errorf("op {}: no kernel entry in kernels/{}.cuh", call.op, call.op);
  std::set<std::string> used_constants, used_args;
  Variant v;
  v.op = call.op;
  v.arch = arch;
  for (std::string_view tp : contract->template_params) {
    const std::string name(tp);
    const auto constant = std::find_if(call.constants.begin(), call.constants.end(),
                                       [&](const Constant& c) { return c.name == name; });
    if (constant != call.constants.end()) {
      v.template_args.push_back({name, constant->value});
      used_constants.insert(name);
      continue;
    }
    if (name == "many_rows") {  // the phase's row class (kManyRowsAbove)
      v.template_args.push_back({name, env.rows > kManyRowsAbove ? 1 : 0});
      continue;
    }
    if (name.rfind("format_", 0) == 0) {
      const std::string arg = name.substr(7);
      const Arg* a = call.find_arg(arg);
      if (!a && optional_arg(call, arg)) {
        v.template_args.push_back({name, -1});
        continue;
      }
      if (a && (a->kind == ArgKind::Weight || a->kind == ArgKind::WeightList)) {
        DSV41_ASSIGN_OR_RETURN(WeightFormat format, weight_format_arg(call, env, *a));
        v.template_args.push_back({name, static_cast<int64_t>(format)});
        continue;
      }
    }
    if (name.rfind("dtype_", 0) == 0) {
      const std::string arg = name.substr(6);
      const Arg* a = call.find_arg(arg);
      if (!a && optional_arg(call, arg)) {
        v.template_args.push_back({name, -1});
        continue;
      }
      if (a && (a->kind == ArgKind::Scratch || a->kind == ArgKind::State)) {
        const BufferDecl* decl = env.buffer ? env.buffer(*a) : nullptr;
        if (!decl) return Status::errorf("op {}: argument {} is not a planned buffer", call.op, arg);
        DSV41_ASSIGN_OR_RETURN(int64_t code, dtype_code(call, decl->dtype, arg));
        v.template_args.push_back({name, code});
        continue;
      }
    }
    return Status::errorf("kernels/{}.cuh: template parameter {} is neither a constant of op {}, dtype_<arg> of one "
                          "of its buffer arguments, format_<arg> of one of its weight arguments nor many_rows",
                          call.op, name, call.op);
  }
  for (const KernelParam& p : contract->params) {
    const std::string name(p.name);
    switch (p.type) {
      case ParamType::Rows:
      case ParamType::Errors:
        if (name != (p.type == ParamType::Rows ? "rows" : "errors"))
          return Status::errorf("kernels/{}.cuh: parameter {} of type {} must be named {}", call.op, name,
                                param_type_name(p.type), p.type == ParamType::Rows ? "rows" : "errors");
        break;
      case ParamType::Statics:
        if (name != "statics") return Status::errorf("kernels/{}.cuh: the Statics parameter must be named statics", call.op);
        used_args.insert(name);
        break;
      case ParamType::Int: {
        DSV41_TRY(int_param_value(call, env, name).status());  // it must bind; its value is the runtime's
        if (call.find_arg(name)) used_args.insert(name);
        used_constants.insert(name);
        break;
      }
      default: {
        const Arg* a = call.find_arg(name);
        if (!a) {
          if (optional_arg(call, name)) break;
          return Status::errorf("op {}: kernels/{}.cuh takes {} {}, which the call does not have", call.op, call.op,
                                param_type_name(p.type), name);
        }
        if (a->kind != kind_of(p.type))
          return Status::errorf("op {}: argument {} does not match parameter {} {} of kernels/{}.cuh", call.op, name,
                                param_type_name(p.type), name, call.op);
        used_args.insert(name);
      }
    }
  }
  for (const Constant& c : call.constants)
    if (!used_constants.count(c.name))
      return Status::errorf("op {}: constant {} is neither a template parameter nor an Int parameter of kernels/{}.cuh",
                            call.op, c.name, call.op);
  for (const Arg& a : call.args)
    if (!used_args.count(a.name))
      return Status::errorf("op {}: argument {} has no parameter in kernels/{}.cuh", call.op, a.name, call.op);
  std::string key = call.op + "{";
  for (size_t i = 0; i < v.template_args.size(); ++i) {
    const Constant& t = v.template_args[i];
    std::string value = std::to_string(t.value);
    if (t.name.rfind("dtype_", 0) == 0) value = dtype_code_name(t.value);
    if (t.name.rfind("format_", 0) == 0)
      value = t.value < 0 ? "none" : std::string(weight_format_name(static_cast<WeightFormat>(t.value)));
    key += fmt::format("{}{}={}", i ? "," : "", t.name, value);
  }
  v.key = key + "}@" + arch;
  v.id = hash_bytes(v.key.data(), v.key.size());
  v.entry = fmt::format("dsv41_{:016x}", v.id);
  return v;
}

std::string variant_source(const Variant& variant, int64_t threads_per_block) {
  const KernelContract* contract = find_contract(variant.op);
  std::string params, forwards, targs;
  for (const KernelParam& p : contract->params) {
    params += fmt::format("{}dsv41k::{} {}", params.empty() ? "" : ", ", param_type_name(p.type), p.name);
    forwards += fmt::format("{}{}", forwards.empty() ? "" : ", ", p.name);
  }
  for (const Constant& t : variant.template_args)
    targs += fmt::format("{}{}", targs.empty() ? "" : ", ",
                         t.name.rfind("dtype_", 0) == 0 || t.name.rfind("format_", 0) == 0
                             ? std::to_string(t.value)
                             : std::to_string(t.value) + "LL");
  // No minimum blocks an SM in __launch_bounds__: capping linear's registers at 80 (three blocks an SM)
  // spilled once the tile loads ran two steps ahead, and two blocks streamed the head faster anyway
  // (docs/perf.md, branch fuse); 1 is not "no minimum" either (the FP4 experts took 141 registers).
  // Programmatic dependent launch (runtime/gpu/kernel_launcher.cpp): the kernel may be launched before
  // the previous one has completed, so it waits for that one's completion (and memory) before its entry
  // reads or writes anything. It triggers its dependents only implicitly, as its blocks exit: with an
  // early griddepcontrol.launch_dependents decode.r8 of the bench fixture took 3.32 ms against 3.16 ms
  // without PDL (docs/perf.md; probably the next kernel's blocks filling the SMs unevenly as they freed
  // up, for grids sized to the SM count). Without the launch attribute, or before sm_90, it is a no-op.
  return fmt::format(
      "// dsv41 variant {}\n#include \"{}.cuh\"\n"
      "extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n"
      "#if __CUDA_ARCH__ >= 900\n"
      "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
      "#endif\n"
      "  dsv41k::entry::{}<{}>({});\n}}\n",
      variant.key, variant.op, threads_per_block, variant.entry, params, variant.op, targs, forwards);
}

}  // namespace dsv41
