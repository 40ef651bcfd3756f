// runtime/cpu/ops_hc_front.cpp — hc_front (docs/ops.md): hc_mix and hc_collapse_norm of one call, each run by its own
// CPU op through a view of the call under that op's argument names, so the fused op is theirs by construction.
#include <string>
#include <utility>
#include <vector>

#include "runtime/cpu/ops.h"

namespace dsv41::cpu {
namespace {

// `inner`'s call seen as `op` with the arguments `names` (op's name, hc_front's name) and every constant.
class RenamedCall : public OpContext {
 public:
  RenamedCall(const OpContext& inner, std::string op, std::vector<std::pair<std::string, std::string>> names)
      : inner_(inner), names_(std::move(names)) {
    call_.op = std::move(op);
    call_.constants = inner.call().constants;
    for (const auto& [own, outer] : names_)
      if (const Arg* a = inner.call().find_arg(outer)) {
        call_.args.push_back(*a);
        call_.args.back().name = own;
      }
  }
  const Call& call() const override { return call_; }
  const StaticsView& statics() const override { return inner_.statics(); }
  TensorView scratch(const std::string& arg) const override { return inner_.scratch(outer(arg)); }
  TensorView state(const std::string& arg, int slot) const override { return inner_.state(outer(arg), slot); }
  WeightView weight(const std::string& arg) const override { return inner_.weight(outer(arg)); }
  std::vector<WeightView> weights(const std::string& arg) const override { return inner_.weights(outer(arg)); }
  HostTableView host_table(const std::string& arg) const override { return inner_.host_table(outer(arg)); }
  Exchange& exchange() const override { return inner_.exchange(); }
  int rank() const override { return inner_.rank(); }
  int world() const override { return inner_.world(); }

 private:
  std::string outer(const std::string& own) const {
    for (const auto& [name, outer_name] : names_)
      if (name == own) return outer_name;
    return own;
  }
  const OpContext& inner_;
  std::vector<std::pair<std::string, std::string>> names_;
  Call call_;
};

}  // namespace

// The mix first, then the collapse: the two share x and nothing else (the emitter gives out and prev_mix
// different buffers), so the order does not change either result.
Status op_hc_front(const OpContext& ctx) {
  DSV41_TRY(op_hc_mix(RenamedCall(ctx, "hc_mix",
                                  {{"x", "x"}, {"fn", "fn"}, {"base", "base"}, {"scale", "scale"}, {"eps", "eps"},
                                   {"hc_eps", "hc_eps"}, {"out", "out"}})));
  return op_hc_collapse_norm(RenamedCall(
      ctx, "hc_collapse_norm", {{"x", "x"}, {"mix", "prev_mix"}, {"norm", "norm"}, {"eps", "eps"}, {"out", "normed"}}));
}

}  // namespace dsv41::cpu
