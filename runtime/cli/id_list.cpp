// runtime/cli/id_list.cpp — comma-separated ids of a flag, each checked against the flag's limit (id_list.h).
#include "runtime/cli/id_list.h"

#include <fmt/format.h>

namespace dsv41::cli {

Result<std::vector<int64_t>> parse_id_list(const std::string& flag, const std::string& text, const std::string& what,
                                           int64_t max) {
  std::vector<int64_t> ids;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    // Digits only (no sign, space or exponent), and at most 18 so the value cannot overflow.
    const bool digits = !item.empty() && item.size() <= 18 && item.find_first_not_of("0123456789") == std::string::npos;
    const int64_t value = digits ? std::stoll(item) : -1;
    if (value < 0 || value > max)
      return Status::errorf("{} {:?}: item {:?} is not {} (0..{}, comma separated, e.g. 0,1)", flag, text, item, what,
                            max);
    ids.push_back(value);
    pos = comma + 1;
  }
  return ids;
}

}  // namespace dsv41::cli
