// common/weight_format.h — a weight's stored format as kernels see it (the format_<arg> template
// parameter of a variant), and how many device bytes a stored tensor takes (docs/kernels.md "Weights").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/dtype.h"
#include "common/tensor_inventory.h"

namespace dsv41 {

// The codes are kernels/kernel_abi.cuh's WF_* values (a unit test holds the two together).
enum class WeightFormat : uint8_t {
  F32 = 0,        // fp32 values
  BF16 = 1,       // bf16 values
  FP8Tile32 = 2,  // F8_E4M3 codes [rows, cols] + UE8M0 scales [⌈rows/32⌉, ⌈cols/32⌉], one per 32×32 tile
  FP4Row32 = 3,   // FP4 e2m1, two a byte (low nibble first) [rows, cols/2] + UE8M0 [rows, cols/32]
  FP8Row32 = 4,   // F8_E4M3 codes [rows, cols] + UE8M0 [rows, cols/32] (Engram tables)
};

// The format a weight stored with `encoding` and `dtype` (the weight's own dtype) has on the device;
// none for a scale tensor or a dtype the encoding does not admit.
std::optional<WeightFormat> weight_format_of(Encoding encoding, DType dtype);
// As spelled in variant keys: "f32", "bf16", "fp8_tile32", "fp4_row32", "fp8_row32".
std::string_view weight_format_name(WeightFormat format);
// "WF_F32", ... as kernels/kernel_abi.cuh spells the code.
std::string_view weight_format_symbol(WeightFormat format);
// Whether the format has a scale tensor beside the codes.
bool weight_format_scaled(WeightFormat format);

// Every stored tensor (a weight, or its scale) is its own device allocation starting on this
// boundary; the memory ledger counts each one rounded up to it.
constexpr uint64_t kDeviceTensorAlignment = 256;
constexpr uint64_t device_tensor_bytes(uint64_t stored_bytes) {
  return (stored_bytes + kDeviceTensorAlignment - 1) / kDeviceTensorAlignment * kDeviceTensorAlignment;
}

}  // namespace dsv41
