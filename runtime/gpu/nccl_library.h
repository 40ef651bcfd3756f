// runtime/gpu/nccl_library.h — NCCL opened at run time (dlopen("libnccl.so.2")), never linked: hosts without it build and run the CPU backend, and world 1 needs none.
//
// The few types of NCCL's C ABI the runtime uses are declared here (nccl.h 2.x: a 128-byte unique id,
// an opaque communicator pointer, int enums); when nccl.h is present at build time the .cpp checks
// them against it. Every ncclResult_t becomes a Status naming the call and NCCL's text.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dsv41::gpu {

namespace nccl {
constexpr size_t kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};
using Comm = struct ncclComm*;
enum Result : int { Success = 0, UnhandledCudaError, SystemError, InternalError, InvalidArgument, InvalidUsage,
                    RemoteError, InProgress };
enum DataType : int { Float32 = 7, Bfloat16 = 9 };
// "ncclSystemError", or "ncclResult 42" for a value this build does not know.
std::string result_name(int result);
}  // namespace nccl

class NcclLibrary {
 public:
  // The process's NCCL: libnccl.so.2 opened and every function resolved, once; later calls return the
  // same answer. Without it: "libnccl.so.2: not found (NCCL is needed only for ranks on several GPUs)".
  // DSV41_NCCL_LIBRARY, when set, names the file to open instead (a path to a libnccl.so.2).
  static Result<NcclLibrary*> open();
  // The same from an explicit file name or path, not shared (tests, a bundled copy).
  static Result<std::unique_ptr<NcclLibrary>> load(const std::string& library);
  // A table with no library behind it and every entry null: tests fill in the entries (a fake NCCL).
  static std::unique_ptr<NcclLibrary> unloaded() { return std::unique_ptr<NcclLibrary>(new NcclLibrary()); }
  ~NcclLibrary();

  // OK, or "<call>: ncclSystemError: <NCCL's text>".
  Status check(int result, std::string_view call) const;
  // ncclGetVersion as "2.28.3".
  Result<std::string> version() const;

  using GetVersionFn = int (*)(int*);
  using GetUniqueIdFn = int (*)(nccl::UniqueId*);
  using CommInitRankFn = int (*)(nccl::Comm*, int, nccl::UniqueId, int);
  using CommInitAllFn = int (*)(nccl::Comm*, int, const int*);  // comms, ndev, devlist
  using AllGatherFn = int (*)(const void*, void*, size_t, int, nccl::Comm, CUstream);
  using BroadcastFn = int (*)(const void*, void*, size_t, int, int, nccl::Comm, CUstream);  // ..., datatype, root, ...
  using GroupFn = int (*)();
  using CommGetAsyncErrorFn = int (*)(nccl::Comm, int*);
  using CommFn = int (*)(nccl::Comm);
  using GetErrorStringFn = const char* (*)(int);

  GetVersionFn ncclGetVersion = nullptr;
  GetUniqueIdFn ncclGetUniqueId = nullptr;
  CommInitRankFn ncclCommInitRank = nullptr;
  CommInitAllFn ncclCommInitAll = nullptr;
  AllGatherFn ncclAllGather = nullptr;
  BroadcastFn ncclBroadcast = nullptr;
  GroupFn ncclGroupStart = nullptr;
  GroupFn ncclGroupEnd = nullptr;
  CommGetAsyncErrorFn ncclCommGetAsyncError = nullptr;
  CommFn ncclCommAbort = nullptr;
  CommFn ncclCommDestroy = nullptr;
  GetErrorStringFn ncclGetErrorString = nullptr;

 private:
  NcclLibrary() = default;
  void* handle_ = nullptr;
};

}  // namespace dsv41::gpu
