// runtime/cli/id_list.h — a flag's comma-separated ids ("5,6,7"), parsed once for every command that takes some.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41::cli {

// Parses `text`, the value of `flag`, as ids 0..max separated by commas. An empty list, an empty item
// or one that is not a number in range is refused, naming the flag, the whole value, the item, what
// an id of this flag is (`what`: "a token id") and the limit.
Result<std::vector<int64_t>> parse_id_list(const std::string& flag, const std::string& text, const std::string& what,
                                           int64_t max);

}  // namespace dsv41::cli
