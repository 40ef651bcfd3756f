// common/dtype.cpp — the dtype table: one row per safetensors element type.
#include "common/dtype.h"

#include <array>

namespace dsv41 {
namespace {

struct DTypeRow {
  DType dtype;
  std::string_view name;
  int bytes;
};

constexpr std::array<DTypeRow, 10> kRows = {{
    {DType::BF16, "BF16", 2},
    {DType::F16, "F16", 2},
    {DType::F32, "F32", 4},
    {DType::F8_E4M3, "F8_E4M3", 1},
    {DType::F8_E8M0, "F8_E8M0", 1},
    {DType::I8, "I8", 1},
    {DType::I16, "I16", 2},
    {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},
    {DType::U8, "U8", 1},
}};

const DTypeRow& row_of(DType dtype) { return kRows[static_cast<size_t>(dtype)]; }

}  // namespace

int dtype_bytes(DType dtype) { return row_of(dtype).bytes; }
std::string_view dtype_name(DType dtype) { return row_of(dtype).name; }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& row : kRows)
    if (row.name == name) return row.dtype;
  return std::nullopt;
}

std::string dtype_names() {
  std::string names;
  for (const auto& row : kRows) {
    if (!names.empty()) names += ", ";
    names += row.name;
  }
  return names;
}

}  // namespace dsv41
