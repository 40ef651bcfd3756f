// tests/gpu/gpu_op_inputs.cpp — valid random inputs per op, the CPU reference run, output comparison.
#include "tests/gpu/gpu_op_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "common/numeric_formats.h"
#include "common/op_set.h"
#include "runtime/cpu/op_context.h"

namespace dsv41::gpu_test {
namespace {

constexpr size_t kStateAlignment = 256;
constexpr int kMaxSlots = 4;                       // state copies allocated per call
constexpr uint64_t kListBudgetBytes = 64ull << 20;  // a WeightList above this shares a pool of matrices
constexpr int kPoolSize = 4;

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// The fp32 shape a weight has once dequantized (runtime/cpu/weight_store.cpp): FP4 rows store two
// values a byte, so their logical columns are twice the stored ones.
std::vector<int64_t> fp32_shape(const PlannedTensor& t) {
  std::vector<int64_t> shape = t.local_shape;
  if (t.encoding == Encoding::FP4Rows && !shape.empty()) shape.back() *= 2;
  return shape;
}

// Stores `value` as element i of a buffer of `dtype`.
void store(std::vector<uint8_t>& bytes, DType dtype, int64_t i, float value) {
  switch (dtype) {
    case DType::BF16: {
      const uint16_t b = f32_to_bf16(value);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
      break;
    }
    case DType::I32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(bytes.data() + 4 * i, &v, 4);
      break;
    }
    default: std::memcpy(bytes.data() + 4 * i, &value, 4);
  }
}

void store_int(std::vector<uint8_t>& bytes, int64_t i, int32_t v) { std::memcpy(bytes.data() + 4 * i, &v, 4); }

float load(const uint8_t* bytes, DType dtype, int64_t i) {
  if (dtype == DType::BF16) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    return bf16_to_f32(b);
  }
  float v;
  std::memcpy(&v, bytes + 4 * i, 4);
  return v;
}

void fill_random(Rng& rng, std::vector<uint8_t>& bytes, DType dtype, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) store(bytes, dtype, i, dtype == DType::I32 ? 0.0f : rng.uniform(lo, hi));
}

// The scratch / state arguments an op writes (docs/ops.md).
std::vector<std::string> written_args(const Call& call) {
  if (call.op == "router") return {"ids", "weights"};
  if (call.op == "index_select") {
    if (call.constant("mode") == 1) return {"out", "candidates"};
    return {"out"};
  }
  if (call.op == "compress") return {"tail", "cache", "index_cache"};
  if (call.op == "window_store") return {"ring"};
  return {"out"};
}

// Up to `count` distinct values of [0, n), in random order.
std::vector<int64_t> distinct(Rng& rng, int64_t n, int64_t count) {
  count = std::min(count, n);
  std::vector<int64_t> out;
  if (count <= 0) return out;
  if (n <= 4 * count || n <= 4096) {
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), int64_t{0});
    for (int64_t i = 0; i < count; ++i) std::swap(all[i], all[i + rng.below(n - i)]);
    all.resize(static_cast<size_t>(count));
    return all;
  }
  std::set<int64_t> seen;
  while (static_cast<int64_t>(out.size()) < count) {
    const int64_t v = rng.below(n);
    if (seen.insert(v).second) out.push_back(v);
  }
  return out;
}

struct RowInfo {
  bool active = false;
  int32_t slot = -1;
  int64_t position = 0;
};

std::vector<RowInfo> rows_of(const std::vector<int32_t>& statics, int64_t rows) {
  std::vector<RowInfo> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    out[r].slot = statics[r * kStaticsFields + kStaticSlot];
    out[r].active = out[r].slot >= 0;
    out[r].position = statics[r * kStaticsFields + kStaticPosition];
  }
  return out;
}

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

// Random fp32 values for a weight: matrices scaled by 1/sqrt(columns) (so products stay O(1));
// norm vectors near 1; the SwiGLU gate/up matrices larger, so that the clamp at swiglu_limit acts.
std::vector<float> weight_values(Rng& rng, const Call& call, const std::string& arg, const std::vector<int64_t>& shape) {
  const int64_t n = numel_of(shape);
  std::vector<float> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  if (shape.size() <= 1) {
    const bool norm = arg.find("norm") != std::string::npos || call.op == "rmsnorm" || call.op == "hc_collapse_norm";
    for (float& x : v) x = norm ? rng.uniform(0.5f, 1.5f) : rng.uniform(-1.0f, 1.0f);
    return v;
  }
  const int64_t cols = std::max<int64_t>(shape.back(), 1);
  float scale = 1.0f / std::sqrt(static_cast<float>(cols));
  if ((call.op == "moe_experts" || call.op == "shared_expert") && (arg == "w1" || arg == "w3")) scale *= 20.0f;
  for (float& x : v) x = rng.uniform(-scale, scale);
  return v;
}

}  // namespace

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
int64_t Rng::below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
int64_t Rng::range(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
float Rng::uniform(float lo, float hi) {
  const float u = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);  // [0, 1)
  return lo + (hi - lo) * u;
}

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  Rng r(seed ^ (salt * 0xD1B54A32D192ED03ull));
  return r.next();
}

CallEnv call_env(const CallSite& site) {
  CallEnv env;
  env.rows = site.phase->rows;
  const CallLists* lists = site.lists;
  const Phase* phase = site.phase;
  const WeightPlan* weights = site.weights;
  env.buffer = [lists, phase](const Arg& a) -> const BufferDecl* {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (a.kind == ArgKind::Scratch && i >= 0 && i < static_cast<int64_t>(phase->buffers.size())) return &phase->buffers[i];
    if (a.kind == ArgKind::State && i >= 0 && i < static_cast<int64_t>(lists->state_buffers.size()))
      return &lists->state_buffers[i];
    return nullptr;
  };
  env.weight_shape = [weights](const Arg& a) -> std::vector<int64_t> {
    const int64_t i = a.ints.empty() ? -1 : a.ints[0];
    if (i < 0 || i >= static_cast<int64_t>(weights->tensors.size())) return {};
    return weights->tensors[i].local_shape;
  };
  return env;
}

int64_t call_weight_elements(const Call& call, const WeightPlan& weights) {
  int64_t total = 0;
  for (const Arg& a : call.args) {
    if (a.kind != ArgKind::Weight && a.kind != ArgKind::WeightList) continue;
    for (int64_t i : a.ints)
      if (i >= 0 && i < static_cast<int64_t>(weights.tensors.size())) total += numel_of(fp32_shape(weights.tensors[i]));
  }
  return total;
}

Result<CallInputs> make_inputs(const CallSite& site, uint64_t seed) {
  const Call& call = *site.call;
  const Phase& phase = *site.phase;
  Rng rng(seed);
  CallInputs in;
  in.rows = phase.rows;
  in.slots = std::max(1, std::min(site.settings.slots, kMaxSlots));
  const int64_t R = in.rows;

  // ---- positions: every cache index below its capacity, every position below the context ----
  int64_t pos_limit = site.settings.context;
  for (const Arg& a : call.args) {
    if (a.kind != ArgKind::State) continue;
    const BufferDecl& d = site.lists->state_buffers.at(a.ints[0]);
    auto ratio = site.cache_ratio.find(a.ints[0]);
    if (ratio != site.cache_ratio.end() && !d.shape.empty()) pos_limit = std::min(pos_limit, d.shape[0] * ratio->second);
  }
  if (pos_limit < 1) return Status::errorf("op {}: no position fits the caches (limit {})", call.op, pos_limit);
  int64_t vocab = 1000;
  if (const Arg* t = call.find_arg("table"); t && t->kind == ArgKind::Weight)
    vocab = std::max<int64_t>(1, site.weights->tensors.at(t->ints[0]).local_shape.at(0));

  // ---- statics: 1-3 sequences in distinct slots, a few inactive rows between or after them ----
  const int64_t inactive = R >= 4 ? rng.range(1, std::min<int64_t>(3, R / 4)) : (R >= 2 ? rng.range(0, 1) : 0);
  const int64_t active = R - inactive;
  const int64_t sequences = rng.range(1, std::min<int64_t>({3, active, in.slots}));
  std::vector<int64_t> cuts = distinct(rng, active - 1, sequences - 1);  // cut points in [0, active-1) → +1
  for (int64_t& c : cuts) c += 1;
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> lengths;
  int64_t prev = 0;
  for (int64_t c : cuts) {
    lengths.push_back(c - prev);
    prev = c;
  }
  lengths.push_back(active - prev);
  // Layout: sequence i is item i, an inactive row is item -1; shuffled.
  std::vector<int64_t> items;
  for (int64_t i = 0; i < sequences; ++i) items.push_back(i);
  for (int64_t i = 0; i < inactive; ++i) items.push_back(-1);
  for (size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.below(static_cast<int64_t>(i))]);
  std::vector<int64_t> slot_pick = distinct(rng, in.slots, sequences);
  in.image.statics.assign(static_cast<size_t>(R * kStaticsFields), 0);
  const int64_t first_mode = rng.below(3);
  int64_t row = 0;
  for (int64_t item : items) {
    if (item < 0) {
      int32_t* s = in.image.statics.data() + row * kStaticsFields;
      s[kStaticToken] = 0;
      s[kStaticSlot] = -1;
      s[kStaticPosition] = 0;
      s[kStaticFirstRow] = static_cast<int32_t>(row);
      in.description += fmt::format("row {}: inactive; ", row);
      ++row;
      continue;
    }
    const int64_t length = lengths[item];
    const int64_t max_p0 = std::max<int64_t>(0, pos_limit - length);
    int64_t p0 = 0;
    switch ((first_mode + item) % 3) {
      case 0: p0 = rng.range(0, std::min<int64_t>(max_p0, 2 * length + 8)); break;  // near the start
      case 1: p0 = rng.range(0, max_p0); break;                                       // anywhere
      default: p0 = max_p0 - rng.range(0, std::min<int64_t>(max_p0, 8)); break;       // at the capacity's edge
    }
    const int64_t first = row;
    for (int64_t i = 0; i < length; ++i, ++row) {
      int32_t* s = in.image.statics.data() + row * kStaticsFields;
      s[kStaticToken] = static_cast<int32_t>(rng.below(vocab));
      s[kStaticSlot] = static_cast<int32_t>(slot_pick[item]);
      s[kStaticPosition] = static_cast<int32_t>(p0 + i);
      s[kStaticFirstRow] = static_cast<int32_t>(first);
    }
    in.description += fmt::format("rows {}-{}: slot {}, positions {}-{}; ", first, row - 1, slot_pick[item], p0,
                                  p0 + length - 1);
  }
  in.description += fmt::format("{} slots allocated, position limit {}", in.slots, pos_limit);
  const std::vector<RowInfo> infos = rows_of(in.image.statics, R);

  // ---- state: every slot random ----
  for (const Arg& a : call.args) {
    if (a.kind != ArgKind::State || in.state_layout.count(a.ints[0])) continue;
    const BufferDecl& d = site.lists->state_buffers.at(a.ints[0]);
    StateLayout l;
    l.decl = &d;
    l.slots = in.slots;
    const int64_t n = numel_of(d.shape);
    l.stride = align_up(static_cast<size_t>(n * dtype_bytes(d.dtype)), kStateAlignment);
    std::vector<uint8_t>& bytes = in.image.state[a.ints[0]];
    bytes.assign(l.stride * l.slots, 0);
    for (int s = 0; s < l.slots; ++s) {
      std::vector<uint8_t> one(static_cast<size_t>(n * dtype_bytes(d.dtype)));
      fill_random(rng, one, d.dtype, n, -1.0f, 1.0f);
      std::memcpy(bytes.data() + s * l.stride, one.data(), one.size());
    }
    in.state_layout[a.ints[0]] = l;
  }

  // ---- scratch: outputs poisoned, inputs random (I32 inputs valid for the op) ----
  const std::vector<std::string> written = written_args(call);
  auto is_output = [&](const std::string& name) { return std::find(written.begin(), written.end(), name) != written.end(); };
  std::set<int64_t> input_buffers;
  for (const Arg& a : call.args)
    if (a.kind == ArgKind::Scratch && !is_output(a.name)) input_buffers.insert(a.ints[0]);
  for (const Arg& a : call.args) {
    if (a.kind != ArgKind::Scratch || in.image.scratch.count(a.ints[0])) continue;
    const BufferDecl& d = phase.buffers.at(a.ints[0]);
    const int64_t n = numel_of(d.shape);
    std::vector<uint8_t>& bytes = in.image.scratch[a.ints[0]];
    bytes.assign(static_cast<size_t>(n * dtype_bytes(d.dtype)), 0);
    const bool output = is_output(a.name);
    if (output && !input_buffers.count(a.ints[0]) && !(call.op == "shared_expert" && a.name == "out")) {
      std::fill(bytes.begin(), bytes.end(), 0xFF);
      continue;
    }
    if (d.dtype != DType::I32) {
      const bool positive = call.op == "moe_experts" && a.name == "weights";
      fill_random(rng, bytes, d.dtype, n, positive ? 0.0f : -1.0f, 1.0f);
      continue;
    }
    // I32 inputs.
    if (R == 0 || n % R != 0) return Status::errorf("op {}: I32 argument {} holds {} values for {} rows", call.op, a.name, n, R);
    const int64_t width = n / R;
    if (call.op == "moe_experts" && a.name == "ids") {
      const int64_t experts = call.constant("experts");
      for (int64_t r = 0; r < R; ++r) {
        const std::vector<int64_t> ids = distinct(rng, experts, width);
        for (int64_t k = 0; k < width; ++k) store_int(bytes, r * width + k, static_cast<int32_t>(ids.at(k)));
      }
    } else if (call.op == "sparse_attention" && a.name == "selected") {
      const Arg* cache = call.find_arg("cache");
      if (!cache) return Status::errorf("op sparse_attention: selected without cache");
      const int64_t capacity = site.lists->state_buffers.at(cache->ints[0]).shape.at(0);
      auto ratio_it = site.cache_ratio.find(cache->ints[0]);
      const int64_t ratio = ratio_it == site.cache_ratio.end() ? 1 : ratio_it->second;
      for (int64_t r = 0; r < R; ++r) {
        std::vector<int64_t> row_sel(static_cast<size_t>(width), -1);
        if (infos[r].active) {
          const int64_t visible = std::min((infos[r].position + 1) / ratio, capacity);
          std::vector<int64_t> chosen = distinct(rng, visible, width);
          if (rng.below(2) == 0) {  // as index_select writes them: ascending, padded with -1
            std::sort(chosen.begin(), chosen.end());
            std::copy(chosen.begin(), chosen.end(), row_sel.begin());
          } else {  // any order, a few -1 in between
            const int64_t drop = std::min<int64_t>(static_cast<int64_t>(chosen.size()), rng.below(4));
            chosen.resize(chosen.size() - static_cast<size_t>(drop));
            std::copy(chosen.begin(), chosen.end(), row_sel.begin());
            for (size_t i = row_sel.size(); i > 1; --i) std::swap(row_sel[i - 1], row_sel[rng.below(static_cast<int64_t>(i))]);
          }
        }
        for (int64_t k = 0; k < width; ++k) store_int(bytes, r * width + k, static_cast<int32_t>(row_sel[k]));
      }
    } else if (call.op == "index_select" && a.name == "candidates") {  // mode 2: an input
      const int64_t ratio = call.constant("ratio"), block = call.constant("cand_block_size");
      for (int64_t r = 0; r < R; ++r) {
        std::vector<int64_t> row_c(static_cast<size_t>(width), -1);
        if (infos[r].active) {
          const int64_t n_vis = (infos[r].position + 1) / ratio, nb = (n_vis + block - 1) / block;
          std::vector<int64_t> chosen = distinct(rng, nb, rng.range(0, std::min(width, nb)));
          if (nb > 0 && rng.below(2) == 0 && std::find(chosen.begin(), chosen.end(), nb - 1) == chosen.end()) {
            if (static_cast<int64_t>(chosen.size()) == width) chosen.back() = nb - 1;
            else chosen.push_back(nb - 1);  // the newest block, as the candidate source always keeps it
          }
          std::sort(chosen.begin(), chosen.end());
          std::copy(chosen.begin(), chosen.end(), row_c.begin());
        }
        for (int64_t k = 0; k < width; ++k) store_int(bytes, r * width + k, static_cast<int32_t>(row_c[k]));
      }
    } else {
      return Status::errorf("op {}: no input rule for the I32 argument {}", call.op, a.name);
    }
  }

  // ---- exchange_gather: the other ranks' blocks ----
  if (call.op == "exchange_gather") {
    const std::vector<int64_t>& widths = call.arg("widths").ints;
    const int64_t total = std::accumulate(widths.begin(), widths.end(), int64_t{0});
    in.gathered.resize(static_cast<size_t>(R * total));
    const std::vector<uint8_t>& x = in.image.scratch.at(call.arg("x").ints[0]);
    int64_t off = 0;
    for (size_t k = 0; k < widths.size(); ++k) {
      for (int64_t i = 0; i < R * widths[k]; ++i)
        in.gathered[static_cast<size_t>(R * off + i)] =
            static_cast<int>(k) == site.rank ? load(x.data(), DType::F32, i) : rng.uniform(-1.0f, 1.0f);
      off += widths[k];
    }
  }

  // ---- weights ----
  for (const Arg& a : call.args) {
    if (a.kind == ArgKind::Weight) {
      if (in.weights.count(a.ints[0])) continue;
      const PlannedTensor& t = site.weights->tensors.at(a.ints[0]);
      auto w = std::make_unique<HostTensor>();
      w->name = t.name;
      w->shape = fp32_shape(t);
      w->values = weight_values(rng, call, a.name, w->shape);
      in.weights[a.ints[0]] = std::move(w);
    } else if (a.kind == ArgKind::WeightList) {
      if (a.ints.empty()) return Status::errorf("op {}: weight list {} is empty", call.op, a.name);
      const std::vector<int64_t> shape = fp32_shape(site.weights->tensors.at(a.ints[0]));
      for (int64_t i : a.ints)
        if (fp32_shape(site.weights->tensors.at(i)) != shape)
          return Status::errorf("op {}: weight list {} mixes shapes ({} differs from the first)", call.op, a.name,
                                site.weights->tensors.at(i).name);
      const uint64_t bytes = static_cast<uint64_t>(numel_of(shape)) * 4 * a.ints.size();
      const int64_t count = static_cast<int64_t>(a.ints.size());
      const int64_t pool = bytes <= kListBudgetBytes ? count : std::min<int64_t>(count, kPoolSize);
      const size_t base = in.pool.size();
      for (int64_t p = 0; p < pool; ++p) {
        auto w = std::make_unique<HostTensor>();
        w->name = site.weights->tensors.at(a.ints[p]).name + (pool < count ? fmt::format(" (pool {} of {})", p, pool) : "");
        w->shape = shape;
        w->values = weight_values(rng, call, a.name, shape);
        in.pool.push_back(std::move(w));
      }
      std::vector<const HostTensor*>& list = in.lists[a.name];
      for (int64_t e = 0; e < count; ++e) list.push_back(in.pool[base + static_cast<size_t>(e % pool)].get());
    }
  }

  // ---- what the op writes ----
  for (const std::string& name : written) {
    const Arg* a = call.find_arg(name);
    if (!a) continue;  // an absent optional output (compress's tail at ratio 1)
    in.outputs.push_back({name, a->kind == ArgKind::State, a->ints[0]});
  }
  return in;
}

Status run_cpu(const CallSite& site, const CallInputs& inputs, Image& image) {
  DSV41_TRY(check_call_shape(*site.call));
  cpu::OpFunction f = cpu::find_cpu_op(site.call->op);
  if (!f) return Status::errorf("no CPU op {}", site.call->op);
  CheckContext context(site, inputs, image);
  return f(context);
}

const std::vector<uint8_t>& output_bytes(const Image& image, const Output& output) {
  return output.state ? image.state.at(output.index) : image.scratch.at(output.index);
}

DType output_dtype(const CallSite& site, const Output& output) {
  return output.state ? site.lists->state_buffers.at(output.index).dtype : site.phase->buffers.at(output.index).dtype;
}

std::vector<int64_t> output_shape(const CallSite& site, const CallInputs& inputs, const Output& output) {
  return output.state ? site.lists->state_buffers.at(output.index).shape : site.phase->buffers.at(output.index).shape;
}

std::string compare_output(const std::string& what, DType dtype, const std::vector<int64_t>& shape, const uint8_t* cpu,
                           const uint8_t* gpu, size_t bytes, size_t slot_stride) {
  const int size = dtype_bytes(dtype);
  const int64_t n = static_cast<int64_t>(bytes) / size;
  // Elements per row of the buffer (per cache entry for a state buffer) and per slot copy.
  const int64_t per_row = shape.size() > 1 ? std::max<int64_t>(1, numel_of(shape) / std::max<int64_t>(shape[0], 1)) : 1;
  const int64_t per_slot = static_cast<int64_t>(slot_stride) / size;
  std::string report;
  int64_t bad = 0;
  auto note = [&](int64_t i, const std::string& text) {
    if (++bad > 8) return;
    const int64_t in_slot = per_slot > 0 ? i % per_slot : i;
    const std::string slot = per_slot > 0 ? fmt::format("slot {}, ", i / per_slot) : "";
    report += fmt::format("\n    [{}] ({}row {}, col {}): {}", i, slot, in_slot / per_row, in_slot % per_row, text);
  };
  if (dtype == DType::I32) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t c, g;
      std::memcpy(&c, cpu + 4 * i, 4);
      std::memcpy(&g, gpu + 4 * i, 4);
      if (c != g) note(i, fmt::format("cpu {} gpu {}", c, g));
    }
    if (bad == 0) return "";
    return fmt::format("{} (I32, must be identical): {} of {} values differ{}", what, bad, n, report);
  }
  const bool bf16 = dtype == DType::BF16;
  const double rel = bf16 ? kBf16Rel : kF32Rel, abs_part = bf16 ? kBf16Abs : kF32Abs;
  double max_c = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float c = load(cpu, dtype, i);
    if (std::isfinite(c)) max_c = std::max(max_c, std::fabs(static_cast<double>(c)));
  }
  for (int64_t i = 0; i < n; ++i) {
    const float c = load(cpu, dtype, i), g = load(gpu, dtype, i);
    if (std::isnan(c) || std::isnan(g)) {
      if (std::isnan(c) != std::isnan(g)) note(i, fmt::format("cpu {} gpu {} (NaN matches only NaN; 0xFF poison is NaN)", c, g));
      continue;
    }
    if (c == g) continue;
    const double diff = std::fabs(static_cast<double>(g) - c);
    const double tol = rel * std::fabs(static_cast<double>(c)) + abs_part * max_c;
    if (!(diff <= tol)) {
      note(i, fmt::format("cpu {:.8g} gpu {:.8g} |diff| {:.3g} > tol {:.3g}", c, g, diff, tol));
    }
  }
  if (bad == 0) return "";
  return fmt::format("{} ({}, tolerance |g-c| <= {}*|c| + {}*max|c|, max|c| = {:.6g}): {} of {} values outside{}", what,
                     dtype_name(dtype), rel, abs_part, max_c, bad, n, report);
}

}  // namespace dsv41::gpu_test
