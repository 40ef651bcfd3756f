// runtime/text/python_json.h — JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dsv41::text {

// The chat encoding embeds tool schemas and non-string arguments as Python writes them (", " and
// ": " separators, keys in their given order, non-ASCII kept), so the prompt matches the official
// encoder byte for byte. Floats use nlohmann's shortest round-trip form, as Python's repr does.
std::string python_json_dumps(const nlohmann::ordered_json& value);

}  // namespace dsv41::text
