// tests/runtime/nccl_library_test.cpp — NCCL opens at run time: a missing library is a clear Status; results read as NCCL's names.
#include "runtime/gpu/nccl_library.h"

#include <dlfcn.h>

#include <gtest/gtest.h>

namespace dsv41::gpu {
namespace {

TEST(NcclLibrary, AMissingLibraryIsAClearError) {
  auto loaded = NcclLibrary::load("libdsv41-no-such-nccl.so.2");
  ASSERT_FALSE(loaded.is_ok());
  EXPECT_EQ(loaded.status().message(),
            "libdsv41-no-such-nccl.so.2: not found (NCCL is needed only for ranks on several GPUs; add the folder "
            "holding libnccl.so.2 to LD_LIBRARY_PATH, or set DSV41_NCCL_LIBRARY=/path/to/libnccl.so.2)");
}

TEST(NcclLibrary, OpenAnswersOnceEitherWay) {
  void* present = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (present) dlclose(present);
  auto first = NcclLibrary::open();
  auto again = NcclLibrary::open();
  ASSERT_EQ(first.is_ok(), present != nullptr) << first.status().message();
  if (!first.is_ok()) {
    EXPECT_EQ(first.status().message(), "libnccl.so.2: not found (NCCL is needed only for ranks on several GPUs; add the "
                                        "folder holding libnccl.so.2 to LD_LIBRARY_PATH, or set "
                                        "DSV41_NCCL_LIBRARY=/path/to/libnccl.so.2)");
    EXPECT_EQ(again.status().message(), first.status().message());
    return;
  }
  EXPECT_EQ(first.value(), again.value());
  auto version = first.value()->version();
  ASSERT_TRUE(version.is_ok()) << version.status().message();
  EXPECT_EQ(version->rfind("2.", 0), 0u) << *version;
  const Status failed = first.value()->check(nccl::InvalidArgument, "ncclAllGather(count 5)");
  EXPECT_EQ(failed.message().rfind("ncclAllGather(count 5): ncclInvalidArgument: ", 0), 0u) << failed.message();
}

TEST(NcclLibrary, ResultNames) {
  EXPECT_EQ(nccl::result_name(nccl::SystemError), "ncclSystemError");
  EXPECT_EQ(nccl::result_name(nccl::InProgress), "ncclInProgress");
  EXPECT_EQ(nccl::result_name(42), "ncclResult 42");
  EXPECT_EQ(sizeof(nccl::UniqueId), 128u);
}

}  // namespace
}  // namespace dsv41::gpu
