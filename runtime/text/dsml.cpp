// runtime/text/dsml.cpp — DSML tool-call markup, the way the official V4.1 encoder writes it.
#include "runtime/text/dsml.h"

#include "runtime/text/python_json.h"

namespace dsv41::text {
namespace {

using nlohmann::ordered_json;

// Arguments as the encoder reads them: a JSON string is parsed (twice at most, for double-encoded
// text); what is still not an object is wrapped as {"arguments": the original text}.
ordered_json arguments_object(const std::string& text) {
  ordered_json value = text;
  for (int i = 0; i < 2 && value.is_string(); ++i) {
    ordered_json parsed = ordered_json::parse(value.get<std::string>(), nullptr, false);
    if (parsed.is_discarded()) break;
    value = std::move(parsed);
  }
  if (!value.is_object()) value = ordered_json{{"arguments", text}};
  return value;
}

}  // namespace

std::string render_dsml_calls(const std::vector<ToolCall>& calls) {
  using namespace markers;
  std::string out = "\n\n" + std::string(kCallsStart) + "\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i > 0) out += "\n";
    out += std::string(kInvokeStart) + calls[i].name + "\">\n";
    bool first = true;
    const ordered_json arguments = arguments_object(calls[i].arguments_json);  // outlives the loop's items()
    for (const auto& [key, value] : arguments.items()) {
      if (!first) out += "\n";
      first = false;
      const bool is_string = value.is_string();
      out += std::string(kParameterStart) + key + "\" string=\"" + (is_string ? "true" : "false") + "\">";
      out += is_string ? value.get<std::string>() : python_json_dumps(value);
      out += kParameterEnd;
    }
    out += "\n" + std::string(kInvokeEnd);
  }
  out += "\n" + std::string(kCallsEnd);
  return out;
}

std::optional<ToolCall> parse_dsml_invoke(std::string_view invoke) {
  using namespace markers;
  size_t pos = invoke.find(kInvokeStart);
  if (pos == std::string_view::npos) return std::nullopt;
  pos += kInvokeStart.size();
  const size_t name_end = invoke.find("\">", pos);
  if (name_end == std::string_view::npos) return std::nullopt;
  ToolCall call;
  call.name = std::string(invoke.substr(pos, name_end - pos));
  pos = name_end + 2;
  ordered_json arguments = ordered_json::object();
  const size_t end = invoke.find(kInvokeEnd, pos);
  if (end == std::string_view::npos) return std::nullopt;
  while (true) {
    const size_t start = invoke.find(kParameterStart, pos);
    if (start == std::string_view::npos || start > end) break;
    const size_t key_begin = start + kParameterStart.size();
    const size_t key_end = invoke.find('"', key_begin);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(invoke.substr(key_begin, key_end - key_begin));
    constexpr std::string_view kString = " string=\"";
    if (invoke.substr(key_end + 1, kString.size()) != kString) return std::nullopt;
    const size_t flag_begin = key_end + 1 + kString.size();
    const size_t flag_end = invoke.find("\">", flag_begin);
    if (flag_end == std::string_view::npos) return std::nullopt;
    const std::string_view flag = invoke.substr(flag_begin, flag_end - flag_begin);
    const size_t value_begin = flag_end + 2;
    const size_t value_end = invoke.find(kParameterEnd, value_begin);
    if (value_end == std::string_view::npos || value_end > end) return std::nullopt;
    const std::string value(invoke.substr(value_begin, value_end - value_begin));
    if (flag == "true") {
      arguments[key] = value;
    } else {
      ordered_json parsed = ordered_json::parse(value, nullptr, false);
      arguments[key] = parsed.is_discarded() ? ordered_json(value) : parsed;
    }
    pos = value_end + kParameterEnd.size();
  }
  call.arguments_json = arguments.dump();
  return call;
}

}  // namespace dsv41::text
