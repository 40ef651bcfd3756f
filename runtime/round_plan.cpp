// runtime/round_plan.cpp — the little-endian byte encoding of a RoundPlan: magic, round, resets, runs.
#include "runtime/round_plan.h"

#include <cstring>

namespace dsv41 {
namespace {

constexpr uint32_t kMagic = 0x31505244;  // "DRP1"
constexpr uint32_t kMaxCount = 1u << 24;  // far above any plan's size; bounds a corrupt count

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_ints(std::vector<uint8_t>& out, const std::vector<int32_t>& v) {
  put_u32(out, static_cast<uint32_t>(v.size()));
  for (int32_t x : v) put_u32(out, static_cast<uint32_t>(x));
}

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  Result<uint64_t> uint(int width, const char* what) {
    if (bytes_.size() - offset_ < static_cast<size_t>(width))
      return Status::errorf("round plan: {} at byte {} runs past the end ({} bytes)", what, offset_, bytes_.size());
    uint64_t v = 0;
    for (int i = 0; i < width; ++i) v |= static_cast<uint64_t>(bytes_[offset_ + i]) << (8 * i);
    offset_ += width;
    return v;
  }
  Result<uint32_t> count(const char* what) {
    DSV41_ASSIGN_OR_RETURN(uint64_t n, uint(4, what));
    if (n > kMaxCount) return Status::errorf("round plan: {} count {} at byte {} exceeds {}", what, n, offset_ - 4, kMaxCount);
    return static_cast<uint32_t>(n);
  }
  Result<std::vector<int32_t>> ints(const char* what) {
    DSV41_ASSIGN_OR_RETURN(uint32_t n, count(what));
    std::vector<int32_t> v;
    for (uint32_t i = 0; i < n; ++i) {
      DSV41_ASSIGN_OR_RETURN(uint64_t x, uint(4, what));
      v.push_back(static_cast<int32_t>(static_cast<uint32_t>(x)));
    }
    return v;
  }
  Result<std::string> text(const char* what) {
    DSV41_ASSIGN_OR_RETURN(uint32_t n, count(what));
    if (bytes_.size() - offset_ < n)
      return Status::errorf("round plan: {} of {} bytes at byte {} runs past the end ({} bytes)", what, n, offset_, bytes_.size());
    std::string s(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
    offset_ += n;
    return s;
  }
  size_t offset() const { return offset_; }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t offset_ = 0;
};

}  // namespace

bool RoundPlan::operator==(const RoundPlan& other) const {
  return round == other.round && reset_slots == other.reset_slots && runs == other.runs;
}

std::vector<uint8_t> encode_round_plan(const RoundPlan& plan) {
  std::vector<uint8_t> out;
  put_u32(out, kMagic);
  put_u64(out, plan.round);
  put_ints(out, plan.reset_slots);
  put_u32(out, static_cast<uint32_t>(plan.runs.size()));
  for (const PhaseRun& run : plan.runs) {
    put_u32(out, static_cast<uint32_t>(run.phase.size()));
    out.insert(out.end(), run.phase.begin(), run.phase.end());
    put_ints(out, run.statics);
    put_ints(out, run.logits_rows);
  }
  return out;
}

Result<RoundPlan> decode_round_plan(const std::vector<uint8_t>& bytes) {
  Reader in(bytes);
  DSV41_ASSIGN_OR_RETURN(uint64_t magic, in.uint(4, "magic"));
  if (magic != kMagic) return Status::errorf("round plan: magic {:08x}, expected {:08x}", magic, kMagic);
  RoundPlan plan;
  DSV41_ASSIGN_OR_RETURN(plan.round, in.uint(8, "round"));
  DSV41_ASSIGN_OR_RETURN(plan.reset_slots, in.ints("reset_slots"));
  DSV41_ASSIGN_OR_RETURN(uint32_t runs, in.count("runs"));
  for (uint32_t i = 0; i < runs; ++i) {
    PhaseRun run;
    DSV41_ASSIGN_OR_RETURN(run.phase, in.text("phase name"));
    DSV41_ASSIGN_OR_RETURN(run.statics, in.ints("statics"));
    DSV41_ASSIGN_OR_RETURN(run.logits_rows, in.ints("logits_rows"));
    plan.runs.push_back(std::move(run));
  }
  if (in.offset() != bytes.size())
    return Status::errorf("round plan: {} trailing bytes after the plan's {}", bytes.size() - in.offset(), in.offset());
  return plan;
}

}  // namespace dsv41
