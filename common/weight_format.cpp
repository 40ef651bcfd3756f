// common/weight_format.cpp — encoding + dtype → the kernels' weight format code, and its names.
#include "common/weight_format.h"

namespace dsv41 {

std::optional<WeightFormat> weight_format_of(Encoding encoding, DType dtype) {
  switch (encoding) {
    case Encoding::Plain:
      if (dtype == DType::F32) return WeightFormat::F32;
      if (dtype == DType::BF16) return WeightFormat::BF16;
      return std::nullopt;
    case Encoding::BF16: return dtype == DType::BF16 ? std::optional(WeightFormat::BF16) : std::nullopt;
    case Encoding::FP8Block: return dtype == DType::F8_E4M3 ? std::optional(WeightFormat::FP8Tile32) : std::nullopt;
    case Encoding::FP4Rows: return dtype == DType::I8 ? std::optional(WeightFormat::FP4Row32) : std::nullopt;
    case Encoding::FP8Rows: return dtype == DType::F8_E4M3 ? std::optional(WeightFormat::FP8Row32) : std::nullopt;
  }
  return std::nullopt;
}

std::string_view weight_format_name(WeightFormat format) {
  switch (format) {
    case WeightFormat::F32: return "f32";
    case WeightFormat::BF16: return "bf16";
    case WeightFormat::FP8Tile32: return "fp8_tile32";
    case WeightFormat::FP4Row32: return "fp4_row32";
    case WeightFormat::FP8Row32: return "fp8_row32";
  }
  return "?";
}

std::string_view weight_format_symbol(WeightFormat format) {
  switch (format) {
    case WeightFormat::F32: return "WF_F32";
    case WeightFormat::BF16: return "WF_BF16";
    case WeightFormat::FP8Tile32: return "WF_FP8_TILE32";
    case WeightFormat::FP4Row32: return "WF_FP4_ROW32";
    case WeightFormat::FP8Row32: return "WF_FP8_ROW32";
  }
  return "?";
}

bool weight_format_scaled(WeightFormat format) {
  return format == WeightFormat::FP8Tile32 || format == WeightFormat::FP4Row32 || format == WeightFormat::FP8Row32;
}

}  // namespace dsv41
