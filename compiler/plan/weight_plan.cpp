// compiler/plan/weight_plan.cpp — matches the pack against the inventory and slices every tensor for one rank.
#include "compiler/plan/weight_plan.h"

namespace dsv41 {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// How a stored form's rows and columns relate to the logical tensor's (scales cover 32 values,
// FP4 packs two values a byte).
struct StoredGrid {
  int64_t row_divisor = 1, col_divisor = 1;
};

StoredGrid grid_of(Encoding encoding, bool is_scale) {
  if (!is_scale) return {1, encoding == Encoding::FP4Rows ? 2 : 1};
  if (encoding == Encoding::FP8Block) return {kScaleBlock, kScaleBlock};
  return {1, kScaleBlock};
}

Span share_span(const RankShare& share, ShareAxis axis) {
  switch (axis) {
    case ShareAxis::Heads: return share.heads;
    case ShareAxis::Groups: return share.groups;
    case ShareAxis::ExpertCols: return share.expert_cols;
    case ShareAxis::Vocab: return share.vocab_rows;
    case ShareAxis::None: break;
  }
  DSV41_CHECK(false);
  return {};
}

// Runs covering stored rows [r0, r1) and stored columns [c0, c1) of a 2-D view of `entry`.
std::vector<ByteRun> runs_for(const TensorEntry& entry, const ShardInfo& shard, int64_t r0, int64_t r1, int64_t c0,
                              int64_t c1) {
  const int64_t cols = entry.shape.size() >= 2 ? entry.shape[1] : entry.numel();
  const uint64_t elem = dtype_bytes(entry.dtype);
  const uint64_t row_bytes = cols * elem;
  const uint64_t base = shard.data_start() + entry.data_begin;
  if (r1 <= r0 || c1 <= c0) return {};
  if (c0 == 0 && c1 == cols) {  // whole rows are contiguous: one run
    const uint64_t length = (r1 - r0) * row_bytes;
    return {{entry.shard, base + r0 * row_bytes, length, length, 1}};
  }
  if (r1 - r0 == 1) {
    const uint64_t length = (c1 - c0) * elem;
    return {{entry.shard, base + r0 * row_bytes + c0 * elem, length, length, 1}};
  }
  return {{entry.shard, base + r0 * row_bytes + c0 * elem, (c1 - c0) * elem, row_bytes, static_cast<uint64_t>(r1 - r0)}};
}

// Matches the pack against the inventory once per model; slicing for each rank reuses the match.
class Matcher {
 public:
  Matcher(const ModelConfig& config, const PackIndex& pack) : config_(config), pack_(pack) {}

  Result<PackMatch> run() {
    std::vector<bool> used(pack_.tensors().size(), false);
    for (const ExpectedTensor& expected : expected_tensors(config_)) DSV41_TRY(match_tensor(expected, used));
    for (size_t i = 0; i < pack_.tensors().size(); ++i) {
      const TensorEntry& entry = pack_.tensors()[i];
      if (used[i]) continue;
      if (is_ignored_tensor(entry.name)) {
        ++match_.ignored_tensors;
        continue;
      }
      return Status::errorf("{}: {}: tensor is not used by the plan and not on the ignore list "
                            "(vision.*, aligner.*, image_*, *.bias_vl)", shard_name(entry), entry.name);
    }
    return std::move(match_);
  }

 private:
  const std::string& shard_name(const TensorEntry& entry) const { return pack_.shards()[entry.shard].file_name; }

  std::string expectation(const ExpectedTensor& t) const {
    std::string text;
    for (Encoding e : admitted_encodings(t.storage)) {
      const auto forms = stored_forms(t, e);
      text += (text.empty() ? "" : " or ") + fmt::format("{} {}", dtype_name(forms[0].dtype), shape_text(forms[0].shape));
      if (forms.size() > 1) text += " with " + forms[1].name;
    }
    return text;
  }

  Result<Encoding> choose_encoding(const ExpectedTensor& t, const TensorEntry& entry) const {
    for (Encoding e : admitted_encodings(t.storage))
      if (stored_forms(t, e)[0].dtype == entry.dtype) return e;
    return Status::errorf("{}: {}: dtype {}, expected {}", shard_name(entry), t.name, dtype_name(entry.dtype),
                          expectation(t));
  }

  Status match_tensor(const ExpectedTensor& t, std::vector<bool>& used) {
    const TensorEntry* weight = pack_.find(t.name);
    if (!weight)
      return Status::errorf("{}: {}: missing from the pack, expected {}", pack_.dir(), t.name, expectation(t));
    DSV41_ASSIGN_OR_RETURN(Encoding encoding, choose_encoding(t, *weight));
    const auto forms = stored_forms(t, encoding);
    for (size_t i = 0; i < forms.size(); ++i) {
      const StoredForm& form = forms[i];
      const TensorEntry* entry = pack_.find(form.name);
      if (!entry)
        return Status::errorf("{}: {}: missing from the pack; the {} weight {} needs it ({} {})", pack_.dir(),
                              form.name, dtype_name(weight->dtype), t.name, dtype_name(form.dtype), shape_text(form.shape));
      if (entry->dtype != form.dtype)
        return Status::errorf("{}: {}: dtype {}, expected {}", shard_name(*entry), form.name, dtype_name(entry->dtype),
                              dtype_name(form.dtype));
      if (entry->shape != form.shape)
        return Status::errorf("{}: {}: shape {}, expected {}", shard_name(*entry), form.name, shape_text(entry->shape),
                              shape_text(form.shape));
      const size_t index = static_cast<size_t>(entry - pack_.tensors().data());
      used[index] = true;
      match_.tensors.push_back({t.rule, t.axis, t.unit, t.host_resident, encoding, index, i == 1});
    }
    return Status::ok();
  }

  const ModelConfig& config_;
  const PackIndex& pack_;
  PackMatch match_;
};

PlannedTensor slice(const MatchedTensor& t, const TensorEntry& entry, const PackIndex& pack, const RankShare& share) {
  PlannedTensor p;
  p.name = entry.name;
  p.dtype = entry.dtype;
  p.stored_shape = entry.shape;
  p.rule = t.rule;
  p.encoding = t.encoding;
  p.host_resident = t.host_resident;
  const bool matrix = entry.shape.size() == 2;
  const int64_t rows = matrix ? entry.shape[0] : 1, cols = matrix ? entry.shape[1] : entry.numel();
  int64_t r0 = 0, r1 = rows, c0 = 0, c1 = cols;
  const StoredGrid grid = grid_of(t.encoding, t.is_scale);
  if (t.rule != SplitRule::Replicated) {
    const Span units = share_span(share, t.axis);
    const int64_t begin = units.begin * t.unit, end = units.end * t.unit;
    if (t.rule == SplitRule::InputCols || t.rule == SplitRule::HeadSlice) {
      DSV41_CHECK(begin % grid.col_divisor == 0 && end % grid.col_divisor == 0);
      c0 = begin / grid.col_divisor;
      c1 = end / grid.col_divisor;
    } else {
      DSV41_CHECK(begin % grid.row_divisor == 0 && end % grid.row_divisor == 0);
      r0 = begin / grid.row_divisor;
      r1 = end / grid.row_divisor;
    }
  }
  p.local_shape = matrix ? std::vector<int64_t>{r1 - r0, c1 - c0} : std::vector<int64_t>{c1 - c0};
  p.runs = runs_for(entry, pack.shards()[entry.shard], r0, r1, c0, c1);
  return p;
}

}  // namespace

uint64_t PlannedTensor::bytes() const {
  uint64_t total = 0;
  for (const auto& run : runs) total += run.bytes();
  return total;
}

size_t WeightPlan::run_count() const {
  size_t n = 0;
  for (const auto& t : tensors) n += t.runs.size();
  return n;
}

Result<PackMatch> match_pack(const ModelConfig& config, const PackIndex& pack) { return Matcher(config, pack).run(); }

WeightPlan slice_weights(const PackMatch& match, const PackIndex& pack, const RankShare& share) {
  WeightPlan plan;
  plan.ignored_tensors = match.ignored_tensors;
  plan.tensors.reserve(match.tensors.size());
  for (const MatchedTensor& t : match.tensors) {
    plan.tensors.push_back(slice(t, pack.tensors()[t.entry], pack, share));
    const uint64_t bytes = plan.tensors.back().bytes();
    if (t.host_resident) plan.host_bytes += bytes;
    else if (t.rule == SplitRule::Replicated) plan.replicated_bytes += bytes;
    else plan.split_bytes += bytes;
  }
  return plan;
}

Result<WeightPlan> plan_weights(const ModelConfig& config, const PackIndex& pack, const RankShare& share) {
  DSV41_ASSIGN_OR_RETURN(PackMatch match, match_pack(config, pack));
  return slice_weights(match, pack, share);
}

}  // namespace dsv41
