// compiler/plan/targets.cpp — the target table (figures from the vendors' published specifications).
#include "compiler/plan/targets.h"

namespace dsv41 {

constexpr int64_t kGiB = 1ll << 30;

const std::vector<Target>& known_targets() {
  static const std::vector<Target> targets = {
      {"none", "", 0, 0},
      {"h200", "sm_90a", 227 * 1024, 141ll * 1000 * 1000 * 1000},
      {"h100", "sm_90a", 227 * 1024, 80 * kGiB},
      {"b200", "sm_100a", 227 * 1024, 180 * kGiB},
      {"gb10", "sm_121", 99 * 1024, 128 * kGiB},
  };
  return targets;
}

std::string target_names() {
  std::string names;
  for (const auto& t : known_targets()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

Result<Target> find_target(const std::string& name) {
  for (const auto& t : known_targets())
    if (t.name == name) return t;
  return Status::errorf("--target {}: unknown target (known: {})", name, target_names());
}

}  // namespace dsv41
