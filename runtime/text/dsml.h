// runtime/text/dsml.h — DeepSeek-V4.1's markers and its DSML tool-call markup (writing and reading).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/text/chat_encoding.h"

namespace dsv41::text::markers {

inline constexpr std::string_view kBos = "<｜begin▁of▁sentence｜>";
inline constexpr std::string_view kEos = "<｜end▁of▁sentence｜>";
inline constexpr std::string_view kSystem = "<｜System｜>";
inline constexpr std::string_view kUser = "<｜User｜>";
inline constexpr std::string_view kAssistant = "<｜Assistant｜>";
inline constexpr std::string_view kLatestReminder = "<｜latest_reminder｜>";
inline constexpr std::string_view kThinkStart = "<think>";
inline constexpr std::string_view kThinkEnd = "</think>";
inline constexpr std::string_view kCallsStart = "<｜DSML｜ calls>";
inline constexpr std::string_view kCallsEnd = "</｜DSML｜ calls>";
inline constexpr std::string_view kInvokeStart = "<｜DSML｜ invoke name=\"";
inline constexpr std::string_view kInvokeEnd = "</｜DSML｜ invoke>";
inline constexpr std::string_view kParameterStart = "<｜DSML｜ parameter name=\"";
inline constexpr std::string_view kParameterEnd = "</｜DSML｜ parameter>";

}  // namespace dsv41::text::markers

namespace dsv41::text {

// "\n\n<｜DSML｜ calls>\n…\n</｜DSML｜ calls>" for an assistant turn's calls. arguments_json may be an
// object, a JSON string holding one (even double-encoded), or anything else ({"arguments": raw}).
std::string render_dsml_calls(const std::vector<ToolCall>& calls);

// One `<｜DSML｜ invoke name="…">…</｜DSML｜ invoke>` (the text up to and including its end marker) →
// a call whose arguments are a JSON object: string="true" values quoted, others parsed as JSON
// (kept as a string if they do not parse). nullopt if the markup is malformed.
std::optional<ToolCall> parse_dsml_invoke(std::string_view invoke);

}  // namespace dsv41::text
