// runtime/cpu/op_context.cpp — TensorView element access: bf16/f32/i32 reads and writes, bf16 stores rounded.
#include "runtime/cpu/op_context.h"

#include <cstring>

namespace dsv41::cpu {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Every access is bounds-checked: an op indexing past its buffer is a bug in dsv41, caught here
// rather than as a silent overwrite (ops validate sizes against the call before touching data).
float TensorView::get(int64_t i) const {
  DSV41_CHECK(data != nullptr && i >= 0 && i < numel());
  switch (dtype) {
    case DType::F32: {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      return v;
    }
    case DType::BF16: {
      uint16_t bits;
      std::memcpy(&bits, data + 2 * i, 2);
      return bf16_to_f32(bits);
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, data + 4 * i, 4);
      return static_cast<float>(v);
    }
    default:
      DSV41_CHECK(false && "TensorView::get: dtype is not BF16, F32 or I32");
  }
  return 0.0f;
}

void TensorView::set(int64_t i, float value) const {
  DSV41_CHECK(data != nullptr && i >= 0 && i < numel());
  switch (dtype) {
    case DType::F32:
      std::memcpy(data + 4 * i, &value, 4);
      return;
    case DType::BF16: {
      const uint16_t bits = f32_to_bf16(value);
      std::memcpy(data + 2 * i, &bits, 2);
      return;
    }
    default:
      DSV41_CHECK(false && "TensorView::set: dtype is not BF16 or F32");
  }
}

int32_t TensorView::get_int(int64_t i) const {
  DSV41_CHECK(data != nullptr && dtype == DType::I32 && i >= 0 && i < numel());
  int32_t v;
  std::memcpy(&v, data + 4 * i, 4);
  return v;
}

void TensorView::set_int(int64_t i, int32_t value) const {
  DSV41_CHECK(data != nullptr && dtype == DType::I32 && i >= 0 && i < numel());
  std::memcpy(data + 4 * i, &value, 4);
}

}  // namespace dsv41::cpu
