// tests/gpu/gpu_op_inputs.cpp — valid random inputs for one planned call: statics, positions that fit
// the caches, random state, poisoned outputs, I32 inputs in range, weights and the gather input.
#include "tests/gpu/gpu_op_inputs.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "common/cache_format.h"
#include "common/numeric_formats.h"
#include "compiler/synth/synth_encode.h"
#include "tests/gpu/gpu_op_values.h"

namespace dsv41::gpu_test {
namespace {

constexpr size_t kStateAlignment = 256;
constexpr int kMaxSlots = 4;                       // state copies allocated per call
constexpr uint64_t kListBudgetBytes = 64ull << 20;  // a WeightList above this shares a pool of matrices
constexpr int kPoolSize = 4;

size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// A weight of `t`'s encoding: random values (weight_values) encoded into stored bytes and scales as
// a pack stores them, then dequantized back as the CPU backend does at load.
std::unique_ptr<HostTensor> make_weight(Rng& rng, const Call& call, const std::string& arg, const PlannedTensor& t,
                                        std::string name) {
  auto w = std::make_unique<HostTensor>();
  w->name = std::move(name);
  w->shape = fp32_shape(t);
  w->encoding = t.encoding;
  w->dtype = t.dtype;
  const std::vector<float> raw = weight_values(rng, call, arg, w->shape);
  const int64_t rows = w->shape.size() == 2 ? w->shape[0] : 1, cols = w->shape.back();
  encode_rows(t.encoding, t.dtype, raw.data(), rows, cols, w->stored, w->scales);
  w->values.resize(raw.size());
  dequantize(t.encoding, t.dtype, w->stored.data(), w->scales.data(), rows, cols, w->values.data());
  return w;
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
  if (call.op == "engram_lookback") return {"lookback"};
  if (call.op == "markov_pick") return {"picks"};
  return {"out"};
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

}  // namespace

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
  if (call.op == "markov_logits") vocab = call.constant("vocab");  // a row's token is the Markov head's first pick
  if (const Arg* m = call.find_arg("token_map"); m && m->kind == ArgKind::IntList)
    vocab = std::max<int64_t>(1, static_cast<int64_t>(m->ints.size()));

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
      if (d.dtype == kPackedCacheDType) {  // an official-format cache: valid packed rows of random values
        fill_packed_rows(rng, one, a.name, d.shape);
      } else {
        fill_random(rng, one, d.dtype, n, -1.0f, 1.0f);
      }
      if (a.name == "lookback")  // Engram's ring of earlier tokens: ids the token map holds
        for (int64_t i = 0; i < n; ++i) store_int(one, i, static_cast<int32_t>(rng.below(vocab)));
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
    // shared_expert adds into its out; stream_mean writes only its tap's columns of it, markov_logits only
    // its step's rows.
    const bool accumulates =
        (call.op == "shared_expert" || call.op == "stream_mean" || call.op == "markov_logits") && a.name == "out";
    if (output && !input_buffers.count(a.ints[0]) && !accumulates) {
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
      // At 16 rows (the grouped decode path's most) every row picks row 0's first expert as its first
      // two choices, and row 0 picks it K times: one expert with more (row, choice) pairs than one MMA
      // tile's 16 inputs once 9 rows are active, which kernels/moe_pairs.cuh splits into jobs.
      // Repeated ids are valid (docs/ops.md: summed in selection order).
      const bool crowd = R == 16;
      int64_t first = -1;
      for (int64_t r = 0; r < R; ++r) {
        std::vector<int64_t> ids = distinct(rng, experts, width);
        if (crowd && r == 0) {
          first = ids[0];
          std::fill(ids.begin(), ids.end(), first);
        } else if (crowd) {
          const auto at = std::find(ids.begin(), ids.end(), first);
          if (at != ids.end()) std::swap(*at, ids[0]);
          ids[0] = first;
          if (width > 1) ids[1] = first;
        }
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
    } else if (call.op == "markov_logits" && a.name == "picks") {  // the previous steps' picks: token ids
      for (int64_t i = 0; i < n; ++i) store_int(bytes, i, static_cast<int32_t>(rng.below(call.constant("vocab"))));
    } else if (call.op == "engram_gather" && a.name == "ids") {  // row ids inside the table
      const Arg* t = call.find_arg("table");
      if (!t) return Status::errorf("op engram_gather: ids without table");
      const int64_t rows = site.weights->tensors.at(t->ints[0]).local_shape.at(0);
      for (int64_t i = 0; i < n; ++i) store_int(bytes, i, static_cast<int32_t>(rng.below(rows)));
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
      in.weights[a.ints[0]] = make_weight(rng, call, a.name, t, t.name);
    } else if (a.kind == ArgKind::WeightList) {
      if (a.ints.empty()) return Status::errorf("op {}: weight list {} is empty", call.op, a.name);
      const std::vector<int64_t> shape = fp32_shape(site.weights->tensors.at(a.ints[0]));
      const PlannedTensor& first = site.weights->tensors.at(a.ints[0]);
      for (int64_t i : a.ints) {
        const PlannedTensor& t = site.weights->tensors.at(i);
        if (fp32_shape(t) != shape || t.encoding != first.encoding || t.dtype != first.dtype)
          return Status::errorf("op {}: weight list {} mixes shapes or formats ({} differs from the first)", call.op,
                                a.name, t.name);
      }
      const uint64_t bytes = static_cast<uint64_t>(numel_of(shape)) * 4 * a.ints.size();
      const int64_t count = static_cast<int64_t>(a.ints.size());
      const int64_t pool = bytes <= kListBudgetBytes ? count : std::min<int64_t>(count, kPoolSize);
      const size_t base = in.pool.size();
      for (int64_t p = 0; p < pool; ++p) {
        const PlannedTensor& t = site.weights->tensors.at(a.ints[p]);
        in.pool.push_back(
            make_weight(rng, call, a.name, t, t.name + (pool < count ? fmt::format(" (pool {} of {})", p, pool) : "")));
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

}  // namespace dsv41::gpu_test
