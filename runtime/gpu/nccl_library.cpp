// runtime/gpu/nccl_library.cpp — dlopen of libnccl.so.2, its entry points, and ncclResult_t → Status.
#include "runtime/gpu/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>

#if __has_include(<nccl.h>)
#include <nccl.h>
// Our declarations are NCCL's ABI: checked wherever the real header is at hand.
static_assert(sizeof(dsv41::gpu::nccl::UniqueId) == sizeof(ncclUniqueId) && NCCL_UNIQUE_ID_BYTES == 128);
static_assert(int{dsv41::gpu::nccl::Success} == int{ncclSuccess} && int{dsv41::gpu::nccl::InProgress} == int{ncclInProgress} &&
              int{dsv41::gpu::nccl::RemoteError} == int{ncclRemoteError});
static_assert(int{dsv41::gpu::nccl::Float32} == int{ncclFloat32} && int{dsv41::gpu::nccl::Bfloat16} == int{ncclBfloat16});
#endif

namespace dsv41::gpu {
namespace {

constexpr const char* kLibrary = "libnccl.so.2";

template <class F>
void resolve(void* handle, const char* symbol, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, symbol));
  if (!fn && missing.empty()) missing = symbol;
}

}  // namespace

std::string nccl::result_name(int result) {
  static const char* names[] = {"ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
                                "ncclInvalidArgument", "ncclInvalidUsage",     "ncclRemoteError", "ncclInProgress"};
  if (result >= 0 && result <= InProgress) return names[result];
  return fmt::format("ncclResult {}", result);
}

Result<std::unique_ptr<NcclLibrary>> NcclLibrary::load(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    const std::string detail = why ? why : "";
    if (detail.empty() || detail.find("No such file") != std::string::npos)
      return Status::errorf("{}: not found (NCCL is needed only for ranks on several GPUs; add the folder holding "
                            "libnccl.so.2 to LD_LIBRARY_PATH, or set DSV41_NCCL_LIBRARY=/path/to/libnccl.so.2)",
                            library);
    return Status::errorf("{}: cannot open: {}", library, detail);
  }
  std::unique_ptr<NcclLibrary> n(new NcclLibrary());
  n->handle_ = handle;
  std::string missing;
  resolve(handle, "ncclGetVersion", n->ncclGetVersion, missing);
  resolve(handle, "ncclGetUniqueId", n->ncclGetUniqueId, missing);
  resolve(handle, "ncclCommInitRank", n->ncclCommInitRank, missing);
  resolve(handle, "ncclCommInitAll", n->ncclCommInitAll, missing);
  resolve(handle, "ncclAllGather", n->ncclAllGather, missing);
  resolve(handle, "ncclBroadcast", n->ncclBroadcast, missing);
  resolve(handle, "ncclGroupStart", n->ncclGroupStart, missing);
  resolve(handle, "ncclGroupEnd", n->ncclGroupEnd, missing);
  resolve(handle, "ncclCommGetAsyncError", n->ncclCommGetAsyncError, missing);
  resolve(handle, "ncclCommAbort", n->ncclCommAbort, missing);
  resolve(handle, "ncclCommDestroy", n->ncclCommDestroy, missing);
  resolve(handle, "ncclGetErrorString", n->ncclGetErrorString, missing);
  if (!missing.empty()) return Status::errorf("{}: has no symbol {} (an NCCL older than 2.x?)", library, missing);
  return n;
}

NcclLibrary::~NcclLibrary() {
  if (handle_) dlclose(handle_);
}

Result<NcclLibrary*> NcclLibrary::open() {
  // Opened once for the process and kept: communicators outlive any caller.
  static const Result<NcclLibrary*> opened = []() -> Result<NcclLibrary*> {
    const char* chosen = std::getenv("DSV41_NCCL_LIBRARY");
    auto loaded = load(chosen && *chosen ? chosen : kLibrary);
    if (!loaded.is_ok()) return loaded.status();
    return std::move(loaded).value().release();
  }();
  return opened;
}

Status NcclLibrary::check(int result, std::string_view call) const {
  if (result == nccl::Success) return Status::ok();
  const char* text = ncclGetErrorString ? ncclGetErrorString(result) : nullptr;
  return Status::errorf("{}: {}: {}", call, nccl::result_name(result), text ? text : "no description");
}

Result<std::string> NcclLibrary::version() const {
  int code = 0;
  DSV41_TRY(check(ncclGetVersion(&code), "ncclGetVersion"));
  // NCCL 2.9 and later: major * 10000 + minor * 100 + patch.
  return fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

}  // namespace dsv41::gpu
