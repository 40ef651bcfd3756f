// tests/gpu/gpu_op_cpu.cpp — the CPU reference run of one planned call over an image: the op context
// the CPU op reads its arguments through, and a one-rank exchange fed by the generated gather input.
#include <cstring>
#include <numeric>

#include "common/op_set.h"
#include "runtime/cpu/op_context.h"
#include "tests/gpu/gpu_op_inputs.h"

namespace dsv41::gpu_test {
namespace {

// The CPU op's view of one call over an image.
class OneRankExchange : public cpu::Exchange {
 public:
  explicit OneRankExchange(const std::vector<float>* gathered) : gathered_(gathered) {}
  // The runtime all-reduces before the kernel stores: with the other ranks left out, the sum is x.
  void sum(int rank, const float* x, int64_t n, float* out) override { std::memcpy(out, x, 4 * static_cast<size_t>(n)); }
  // The other ranks' blocks come from the gathered input (rank-major, as the kernel reads it).
  void gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) override {
    const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
    int64_t off = 0;
    for (size_t k = 0; k < widths.size(); ++k) {
      const int64_t w = widths[k];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < w; ++c)
          out[r * total + off + c] =
              static_cast<int>(k) == rank ? x[r * w + c] : (*gathered_)[static_cast<size_t>(rows * off + r * w + c)];
      off += w;
    }
  }

 private:
  const std::vector<float>* gathered_;
};

class CheckContext final : public cpu::OpContext {
 public:
  CheckContext(const CallSite& site, const CallInputs& inputs, Image& image)
      : site_(site), inputs_(inputs), image_(image), exchange_(&inputs.gathered) {
    statics_.data = image.statics.data();
    statics_.rows = inputs.rows;
  }
  const Call& call() const override { return *site_.call; }
  const cpu::StaticsView& statics() const override { return statics_; }
  cpu::TensorView scratch(const std::string& name) const override {
    const Arg* a = site_.call->find_arg(name);
    if (!a || a->kind != ArgKind::Scratch) return {};
    const BufferDecl& d = site_.phase->buffers.at(a->ints[0]);
    return {image_.scratch.at(a->ints[0]).data(), d.dtype, d.shape};
  }
  cpu::TensorView state(const std::string& name, int slot) const override {
    const Arg* a = site_.call->find_arg(name);
    if (!a || a->kind != ArgKind::State) return {};
    const StateLayout& l = inputs_.state_layout.at(a->ints[0]);
    if (slot < 0 || slot >= l.slots) return {nullptr, l.decl->dtype, l.decl->shape};
    return {image_.state.at(a->ints[0]).data() + slot * l.stride, l.decl->dtype, l.decl->shape};
  }
  cpu::WeightView weight(const std::string& name) const override {
    const Arg* a = site_.call->find_arg(name);
    if (!a || a->kind != ArgKind::Weight) return {};
    const HostTensor& t = *inputs_.weights.at(a->ints[0]);
    return {t.values.data(), t.shape, t.name};
  }
  // An Engram table: the stored FP8 codes and scales the GPU gets too (the CPU backend maps them).
  cpu::HostTableView host_table(const std::string& name) const override {
    const Arg* a = site_.call->find_arg(name);
    if (!a || a->kind != ArgKind::Weight) return {};
    const HostTensor& t = *inputs_.weights.at(a->ints[0]);
    if (t.encoding != Encoding::FP8Rows || t.shape.size() != 2) return {};
    return {t.stored.data(), t.scales.data(), t.shape[0], t.shape[1], t.name};
  }
  std::vector<cpu::WeightView> weights(const std::string& name) const override {
    std::vector<cpu::WeightView> out;
    auto it = inputs_.lists.find(name);
    if (it == inputs_.lists.end()) return out;
    for (const HostTensor* t : it->second) out.push_back({t->values.data(), t->shape, t->name});
    return out;
  }
  cpu::Exchange& exchange() const override { return exchange_; }
  int rank() const override { return site_.rank; }
  int world() const override { return site_.world; }

 private:
  const CallSite& site_;
  const CallInputs& inputs_;
  Image& image_;
  cpu::StaticsView statics_;
  mutable OneRankExchange exchange_;
};

}  // namespace

Status run_cpu(const CallSite& site, const CallInputs& inputs, Image& image) {
  DSV41_TRY(check_call_shape(*site.call));
  cpu::OpFunction f = cpu::find_cpu_op(site.call->op);
  if (!f) return Status::errorf("no CPU op {}", site.call->op);
  CheckContext context(site, inputs, image);
  return f(context);
}

}  // namespace dsv41::gpu_test
