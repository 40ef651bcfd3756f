// tests/common/weight_format_test.cpp — encodings map to the kernels' weight format codes, and those
// codes are the ones kernels/kernel_abi.cuh declares (the C++ and CUDA sides cannot drift apart).
#include "common/weight_format.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/kernel_contract.h"

namespace dsv41 {
namespace {

TEST(WeightFormat, EachEncodingAndDtypeMapsToOneFormat) {
  EXPECT_EQ(weight_format_of(Encoding::Plain, DType::F32), WeightFormat::F32);
  EXPECT_EQ(weight_format_of(Encoding::Plain, DType::BF16), WeightFormat::BF16);
  EXPECT_EQ(weight_format_of(Encoding::BF16, DType::BF16), WeightFormat::BF16);
  EXPECT_EQ(weight_format_of(Encoding::FP8Block, DType::F8_E4M3), WeightFormat::FP8Tile32);
  EXPECT_EQ(weight_format_of(Encoding::FP4Rows, DType::I8), WeightFormat::FP4Row32);
  EXPECT_EQ(weight_format_of(Encoding::FP8Rows, DType::F8_E4M3), WeightFormat::FP8Row32);
  // A scale tensor, or a dtype the encoding does not admit, has no format a kernel reads.
  EXPECT_EQ(weight_format_of(Encoding::FP8Block, DType::F8_E8M0), std::nullopt);
  EXPECT_EQ(weight_format_of(Encoding::Plain, DType::I8), std::nullopt);
  EXPECT_EQ(weight_format_of(Encoding::BF16, DType::F32), std::nullopt);
  EXPECT_FALSE(weight_format_scaled(WeightFormat::BF16));
  EXPECT_TRUE(weight_format_scaled(WeightFormat::FP4Row32));
}

TEST(WeightFormat, CodesAreTheOnesKernelAbiDeclares) {
  std::string_view abi;
  for (const KernelSource& s : kernel_sources())
    if (s.file_name == "kernel_abi.cuh") abi = s.text;
  ASSERT_FALSE(abi.empty()) << "kernel_abi.cuh is not embedded";
  for (WeightFormat f : {WeightFormat::F32, WeightFormat::BF16, WeightFormat::FP8Tile32, WeightFormat::FP4Row32,
                         WeightFormat::FP8Row32}) {
    const std::string decl = fmt::format("{} = {},", weight_format_symbol(f), static_cast<int>(f));
    EXPECT_NE(abi.find(decl), std::string_view::npos) << "kernel_abi.cuh lacks \"" << decl << "\"";
  }
}

TEST(WeightFormat, DeviceTensorsAreRoundedUpToTheAlignment) {
  EXPECT_EQ(device_tensor_bytes(0), 0u);
  EXPECT_EQ(device_tensor_bytes(1), 256u);
  EXPECT_EQ(device_tensor_bytes(256), 256u);
  EXPECT_EQ(device_tensor_bytes(257), 512u);
}

}  // namespace
}  // namespace dsv41
