// tests/runtime/fake_op_context.h — a self-contained OpContext for testing CPU ops on hand-built buffers, weights and statics.
#pragma once

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/op_set.h"
#include "runtime/cpu/op_context.h"

namespace dsv41::cpu::testing {

// One rank alone: the sum is the input, the gather is the input.
class WorldOneExchange : public Exchange {
 public:
  void sum(int rank, const float* x, int64_t n, float* out) override { std::memcpy(out, x, 4 * static_cast<size_t>(n)); }
  void gather(int rank, const float* x, int64_t rows, const std::vector<int64_t>& widths, float* out) override {
    std::memcpy(out, x, 4 * static_cast<size_t>(rows * widths.at(0)));
  }
};

struct FakeBuffer {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  TensorView view() {
    return TensorView{bytes.data(), dtype, shape};
  }
};

struct RowStatic {
  int32_t token = 0, slot = 0, position = 0, first_row = 0;
};

class FakeContext : public OpContext {
 public:
  FakeContext(const std::string& op, std::vector<Constant> constants) {
    call_.op = op;
    call_.constants = std::move(constants);
  }

  // Statics: one entry per phase row (slot −1: unused row).
  void set_rows(const std::vector<RowStatic>& rows) {
    statics_data_.clear();
    for (const RowStatic& r : rows)
      for (int32_t v : {r.token, r.slot, r.position, r.first_row}) statics_data_.push_back(v);
    statics_.data = statics_data_.data();
    statics_.rows = static_cast<int64_t>(rows.size());
    if (!call_.find_arg("statics") && op_takes("statics")) call_.args.push_back({"statics", ArgKind::Statics, {}, 0});
  }

  TensorView add_scratch(const std::string& name, DType dtype, std::vector<int64_t> shape) {
    FakeBuffer& b = scratch_[name];
    b.dtype = dtype;
    b.shape = std::move(shape);
    int64_t n = 1;
    for (int64_t d : b.shape) n *= d;
    b.bytes.assign(static_cast<size_t>(n * dtype_bytes(dtype)), 0);
    call_.args.push_back({name, ArgKind::Scratch, {static_cast<int64_t>(scratch_.size())}, 0});
    return b.view();
  }
  // Makes `name` the same buffer as the already added `other` (for in-place calls).
  void alias_scratch(const std::string& name, const std::string& other) {
    aliases_[name] = other;
    call_.args.push_back({name, ArgKind::Scratch, {0}, 0});
  }
  // A state buffer with `slots` per-slot copies of one shape.
  void add_state(const std::string& name, DType dtype, std::vector<int64_t> shape, int slots) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    for (int s = 0; s < slots; ++s) {
      FakeBuffer& b = state_[name][s];
      b.dtype = dtype;
      b.shape = shape;
      b.bytes.assign(static_cast<size_t>(n * dtype_bytes(dtype)), 0);
    }
    call_.args.push_back({name, ArgKind::State, {0}, 0});
  }
  void add_weight(const std::string& name, std::vector<int64_t> shape, std::vector<float> values) {
    weights_[name] = {values, shape, name};
    call_.args.push_back({name, ArgKind::Weight, {0}, 0});
  }
  void add_weight_list(const std::string& name, std::vector<int64_t> shape, std::vector<std::vector<float>> values) {
    for (auto& v : values) lists_[name].push_back({std::move(v), shape, name});
    call_.args.push_back({name, ArgKind::WeightList, {0}, 0});
  }
  void add_float(const std::string& name, double v) { call_.args.push_back({name, ArgKind::Float, {}, v}); }
  void add_int(const std::string& name, int64_t v) { call_.args.push_back({name, ArgKind::Int, {v}, 0}); }
  void add_ints(const std::string& name, std::vector<int64_t> v) {
    call_.args.push_back({name, ArgKind::IntList, std::move(v), 0});
  }
  void add_rope(double theta, double yarn_factor = 1.0, int64_t yarn_original = 0, double beta_fast = 32,
                double beta_slow = 1) {
    add_float("theta", theta);
    add_float("yarn_factor", yarn_factor);
    add_int("yarn_original", yarn_original);
    add_float("beta_fast", beta_fast);
    add_float("beta_slow", beta_slow);
  }

  TensorView buffer(const std::string& name) { return scratch_.at(resolve(name)).view(); }
  TensorView slot_state(const std::string& name, int slot) { return state_.at(name).at(slot).view(); }

  // Checks the call against the op table, then runs the CPU op.
  Status run() {
    DSV41_TRY(check_call_shape(call_));
    OpFunction f = find_cpu_op(call_.op);
    if (!f) return Status::errorf("no CPU op {}", call_.op);
    return f(*this);
  }

  const Call& call() const override { return call_; }
  const StaticsView& statics() const override { return statics_; }
  TensorView scratch(const std::string& arg) const override {
    return const_cast<FakeBuffer&>(scratch_.at(resolve(arg))).view();
  }
  TensorView state(const std::string& arg, int slot) const override {
    return const_cast<FakeBuffer&>(state_.at(arg).at(slot)).view();
  }
  WeightView weight(const std::string& arg) const override {
    const Stored& w = weights_.at(arg);
    return WeightView{w.values.data(), w.shape, w.name};
  }
  std::vector<WeightView> weights(const std::string& arg) const override {
    std::vector<WeightView> out;
    for (const Stored& w : lists_.at(arg)) out.push_back(WeightView{w.values.data(), w.shape, w.name});
    return out;
  }
  Exchange& exchange() const override { return exchange_; }
  int rank() const override { return 0; }
  int world() const override { return 1; }

 private:
  struct Stored {
    std::vector<float> values;
    std::vector<int64_t> shape;
    std::string name;
  };
  bool op_takes(const std::string& arg) const {
    const OpSpec* spec = find_op(call_.op);
    if (!spec) return false;
    for (const ArgSpec& a : spec->args)
      if (a.name == arg) return true;
    return false;
  }
  std::string resolve(const std::string& name) const {
    auto it = aliases_.find(name);
    return it == aliases_.end() ? name : it->second;
  }

  Call call_;
  std::vector<int32_t> statics_data_;
  StaticsView statics_;
  std::map<std::string, FakeBuffer> scratch_;
  std::map<std::string, std::string> aliases_;
  std::map<std::string, std::map<int, FakeBuffer>> state_;
  std::map<std::string, Stored> weights_;
  std::map<std::string, std::vector<Stored>> lists_;
  mutable WorldOneExchange exchange_;
};

// Uniform values in [lo, hi); bf16 ones when `bf16` (what a BF16 buffer would hold).
inline std::vector<float> random_values(std::mt19937& rng, int64_t n, float lo = -1.0f, float hi = 1.0f,
                                        bool bf16 = false) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = bf16 ? bf16_round(dist(rng)) : dist(rng);
  return v;
}

inline void fill(const TensorView& view, const std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (view.dtype == DType::I32)
      view.set_int(static_cast<int64_t>(i), static_cast<int32_t>(values[i]));
    else
      view.set(static_cast<int64_t>(i), values[i]);
  }
}

inline std::vector<float> values_of(const TensorView& view) {
  std::vector<float> v(static_cast<size_t>(view.numel()));
  for (int64_t i = 0; i < view.numel(); ++i) v[i] = view.get(i);
  return v;
}

// Sequential rows of one sequence in slot 0 from `first_position`, plus `unused` inactive rows at the end.
inline std::vector<RowStatic> sequence_rows(int64_t count, int32_t first_position, int64_t unused = 0) {
  std::vector<RowStatic> rows;
  for (int64_t r = 0; r < count; ++r)
    rows.push_back({static_cast<int32_t>(r + 3), 0, static_cast<int32_t>(first_position + r), 0});
  for (int64_t r = 0; r < unused; ++r) rows.push_back({0, -1, 0, 0});
  return rows;
}

}  // namespace dsv41::cpu::testing
