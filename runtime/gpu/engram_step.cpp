// runtime/gpu/engram_step.cpp — the host hash, row gather into pinned memory and per-step copy of Engram's table rows.
#include "runtime/gpu/engram_step.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "common/tensor_inventory.h"
#include "runtime/cpu/op_context.h"
#include "runtime/gpu/synthetic_weights.h"

namespace dsv41::gpu {
namespace {

constexpr int64_t kScaleGroup = 32;  // one UE8M0 scale per 32 values of a row

uint64_t align(uint64_t bytes) { return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

}  // namespace

uint64_t EngramStepPlan::scales_offset() const { return align(codes_bytes()); }

uint64_t EngramStepPlan::ids_offset() const {
  return scales_offset() + align(static_cast<uint64_t>(capacity * width * dim / kScaleGroup));
}

uint64_t EngramStepPlan::device_bytes() const {
  return active() ? ids_offset() + align(static_cast<uint64_t>(capacity * width) * sizeof(int32_t)) : 0;
}

Result<EngramStepPlan> plan_engram_step(const fb::Program& program, const CallLists& calls) {
  EngramStepPlan plan;
  bool hashed = false;
  for (const Phase& phase : calls.phases)
    for (const Call& call : phase.calls) {
      if (call.op == "engram_hash" && !hashed) {
        DSV41_ASSIGN_OR_RETURN(const EngramHashCall h, engram_hash_call(call));
        plan.hash = call;
        plan.columns = h.columns();
        plan.width = h.width();
        plan.tables.resize(static_cast<size_t>(h.layers));
        hashed = true;
      }
      if (call.op != "engram_gather") continue;
      plan.capacity = std::max(plan.capacity, phase.rows);
      if (!hashed)
        return Status::errorf("phase {}: engram_gather before any engram_hash: no row ids to gather", phase.name);
      const int64_t columns = call.constant("columns"), row_width = call.constant("row_width");
      const int64_t first = call.arg("first_column").ints.at(0), index = call.arg("table").ints.at(0);
      if (columns != plan.columns || row_width != plan.width || first < 0 || first % columns != 0 ||
          first + columns > row_width)
        return Status::errorf(
            "phase {}: engram_gather of columns [{}, {}) in rows of {}; the hash writes {} columns "
            "a layer in rows of {}",
            phase.name, first, first + columns, row_width, plan.columns, plan.width);
      if (index < 0 || index >= static_cast<int64_t>(program.weights()->size()))
        return Status::errorf("phase {}: engram_gather names weight {} of {}", phase.name, index,
                              program.weights()->size());
      const fb::PlannedTensor& t = *program.weights()->Get(static_cast<uint32_t>(index));
      const auto* shape = t.local_shape();
      const int64_t dim = call.constant("head_dim");
      if (!shape || shape->size() != 2 || shape->Get(1) != dim || dim % kScaleGroup != 0 ||
          (plan.dim && plan.dim != dim))
        return Status::errorf("{}: an Engram table of rows of {} values (shape {} dims), expected rows of head_dim {}",
                              t.name()->str(), shape && shape->size() == 2 ? shape->Get(1) : -1,
                              shape ? shape->size() : 0, dim);
      plan.dim = dim;
      EngramStepPlan::Table& table = plan.tables[static_cast<size_t>(first / columns)];
      if (table.weight >= 0 && table.weight != index)
        return Status::errorf("phase {}: columns [{}, {}) gathered from {} and from {}", phase.name, first,
                              first + columns, table.name, t.name()->str());
      table = {index, call.arg("layer").ints.at(0), shape->Get(0), t.name()->str()};
    }
  if (!hashed) return EngramStepPlan{};
  for (size_t l = 0; l < plan.tables.size(); ++l)
    if (plan.tables[l].weight < 0)
      return Status::errorf("the engram_hash call hashes {} layers, but no engram_gather reads layer block {}",
                            plan.tables.size(), l);
  return plan;
}

Result<std::unique_ptr<EngramStep>> EngramStep::create(const fb::Program& program, EngramStepPlan plan,
                                                       CudaDriver& driver, int slots, const std::string& model_dir,
                                                       std::optional<uint64_t> synthetic_seed, CUstream stream) {
  std::unique_ptr<EngramStep> s(new EngramStep(driver, std::move(plan)));
  const EngramStepPlan& p = s->plan_;
  DSV41_ASSIGN_OR_RETURN(s->hash_, engram_hash_call(s->plan_.hash));
  std::vector<int64_t> indices;
  for (const EngramStepPlan::Table& t : p.tables) indices.push_back(t.weight);
  if (synthetic_seed) {
    // The keys fill_synthetic_weights would draw the table and its scale from.
    for (const EngramStepPlan::Table& t : p.tables)
      s->synthetic_.emplace_back(synthetic_key(*synthetic_seed, t.name),
                                 synthetic_key(*synthetic_seed, scale_name(t.name)));
  } else {
    DSV41_ASSIGN_OR_RETURN(s->mapped_, cpu::HostTables::map(program, model_dir, indices));
    for (int64_t index : indices) s->views_.push_back(s->mapped_.view(index));
  }
  DSV41_ASSIGN_OR_RETURN(s->device_, DeviceBuffer::allocate(driver, p.device_bytes()));
  void* pinned = nullptr;
  DSV41_TRY(driver.check(driver.cuMemHostAlloc(&pinned, p.pinned_bytes(), 0),
                         fmt::format("cuMemHostAlloc(Engram step rows, {} bytes)", p.pinned_bytes())));
  s->pinned_ = static_cast<uint8_t*>(pinned);
  std::memset(s->pinned_, 0, p.pinned_bytes());
  s->lookback_.assign(static_cast<size_t>(slots * s->hash_.window), 0);
  s->ids_.resize(static_cast<size_t>(p.width));
  // Row r's column k reads step row r·width + k: the place the stage below copies it to.
  std::vector<int32_t> ids(static_cast<size_t>(p.capacity * p.width));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  DSV41_TRY(
      driver.check(driver.cuMemcpyHtoDAsync(s->device_.ptr() + p.ids_offset(), ids.data(), ids.size() * 4, stream),
                   "cuMemcpyHtoDAsync_v2(Engram row ids)"));
  DSV41_TRY(driver.check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize (after the Engram row ids)"));
  return s;
}

EngramStep::~EngramStep() {
  if (pinned_) (void)driver_.cuMemFreeHost(pinned_);
}

EngramBinding EngramStep::binding() const {
  const CUdeviceptr base = device_.ptr();
  return {base + plan_.ids_offset(), base, base + plan_.scales_offset(), plan_.capacity * plan_.width};
}

void EngramStep::copy_row(size_t table, int64_t id, uint8_t* codes, uint8_t* scales) const {
  const int64_t dim = plan_.dim, groups = dim / kScaleGroup;
  if (synthetic_.empty()) {
    const cpu::HostTableView& v = views_[table];
    std::memcpy(codes, v.codes + id * dim, static_cast<size_t>(dim));
    std::memcpy(scales, v.scales + id * groups, static_cast<size_t>(groups));
    return;
  }
  const auto [codes_key, scales_key] = synthetic_[table];
  synthetic_bytes(fb::DType::F8_E4M3, codes_key, static_cast<uint64_t>(id * dim), static_cast<uint64_t>(dim), codes);
  synthetic_bytes(fb::DType::F8_E8M0, scales_key, static_cast<uint64_t>(id * groups), static_cast<uint64_t>(groups),
                  scales);
}

Status EngramStep::stage(const Phase& phase, const std::vector<int32_t>& statics, CUstream stream) {
  const EngramStepPlan& p = plan_;
  if (phase.rows > p.capacity)
    return Status::errorf("phase {}: {} rows, but the Engram step buffers hold {}", phase.name, phase.rows, p.capacity);
  DSV41_TRY(driver_.check(driver_.cuStreamSynchronize(stream), "cuStreamSynchronize (before the Engram rows)"));
  const cpu::StaticsView st{statics.data(), phase.rows};
  const int64_t max_n = hash_.max_n, window = hash_.window, dim = p.dim, groups = dim / kScaleGroup;
  std::vector<int64_t> before(static_cast<size_t>(max_n - 1));
  for (int64_t r = 0; r < phase.rows; ++r) {
    if (!st.active(r)) continue;
    const int64_t position = st.position(r), first = st.first_row(r);
    const int64_t p0 = st.position(first);  // check_phase_statics: 0 <= first <= r
    if (p0 > position)
      return Status::errorf("phase {}: statics row {}: position {} before its first row's {}", phase.name, r, position,
                            p0);
    const int32_t* ring = lookback_.data() + st.slot(r) * window;
    for (int64_t k = 0; k < max_n - 1; ++k) {
      const int64_t q = position - (max_n - 1) + k;
      before[k] = q < 0 ? -1 : q >= p0 ? st.token(r - (position - q)) : ring[q % window];
    }
    DSV41_TRY(engram_position_rows(hash_, before, st.token(r), r, position, ids_)
                  .with_context(fmt::format("phase {}", phase.name)));
    for (int64_t k = 0; k < p.width; ++k) {
      const size_t table = static_cast<size_t>(k / p.columns);
      const int64_t id = ids_[k], place = r * p.width + k;
      if (id < 0 || id >= p.tables[table].rows)
        return engram_row_outside(p.tables[table].layer, position, k % p.columns, id, p.tables[table].rows)
            .with_context(fmt::format("phase {} row {}", phase.name, r));
      copy_row(table, id, pinned_ + place * dim, pinned_ + p.scales_offset() + place * groups);
    }
  }
  for (int64_t r = 0; r < phase.rows; ++r)  // in row order, as engram_lookback stores
    if (st.active(r)) lookback_[st.slot(r) * window + st.position(r) % window] = st.token(r);
  const uint64_t codes = static_cast<uint64_t>(phase.rows * p.width * dim);
  const uint64_t scales = static_cast<uint64_t>(phase.rows * p.width * groups);
  DSV41_TRY(driver_.check(driver_.cuMemcpyHtoDAsync(device_.ptr(), pinned_, codes, stream),
                          fmt::format("cuMemcpyHtoDAsync_v2(Engram rows of {}, {} bytes)", phase.name, codes)));
  DSV41_TRY(driver_.check(
      driver_.cuMemcpyHtoDAsync(device_.ptr() + p.scales_offset(), pinned_ + p.scales_offset(), scales, stream),
      fmt::format("cuMemcpyHtoDAsync_v2(Engram row scales of {}, {} bytes)", phase.name, scales)));
  last_copy_bytes_ = codes + scales;
  return Status::ok();
}

void EngramStep::reset_slot(int slot) {
  const int64_t window = hash_.window;
  std::fill(lookback_.begin() + slot * window, lookback_.begin() + (slot + 1) * window, 0);
}

std::string EngramStep::describe() const {
  const EngramStepPlan& p = plan_;
  uint64_t rows = 0;
  for (const EngramStepPlan::Table& t : p.tables) rows += static_cast<uint64_t>(t.rows);
  const std::string source =
      synthetic_.empty()
          ? fmt::format("{} host tables mapped read-only ({:.3f} GB, the page cache's: once per host)", p.tables.size(),
                        static_cast<double>(mapped_.mapped_bytes()) / 1e9)
          : fmt::format("{} host tables of {} rows synthesised row by row from the seed (nothing mapped)",
                        p.tables.size(), rows);
  return fmt::format(
      "Engram: {}; {} rows of {} bytes gathered per phase row ({} bytes), pinned {:.3f} MiB, "
      "device {:.3f} MiB (the largest phase's {} rows)",
      source, p.width, p.row_bytes(), p.copy_per_row(), static_cast<double>(p.pinned_bytes()) / 1048576.0,
      static_cast<double>(p.device_bytes()) / 1048576.0, p.capacity);
}

}  // namespace dsv41::gpu
