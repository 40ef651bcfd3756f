// common/dtype.h — the safetensors element types dsv41 reads, with their sizes and names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dsv41 {

enum class DType : uint8_t {
  BF16,
  F16,
  F32,
  F8_E4M3,  // FP8 weights
  F8_E8M0,  // UE8M0 power-of-two scales
  I8,       // packed FP4 e2m1, two values a byte, low nibble first
  I16,
  I32,
  I64,
  U8,
};

// Bytes of one stored element (an I8 holding two FP4 values counts as one byte).
int dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
// The accepted names, comma separated, for error messages.
std::string dtype_names();

}  // namespace dsv41
