// compiler/kernels/kernel_cache.h — the content-addressed cache of compiled kernels: <dir>/<key>.cubin and
// <dir>/<key>.json (resources, module globals, size and hash of the cubin), keyed by everything that
// decides the cubin.
// An entry is never trusted: a missing, short, corrupt or mismatched one is ignored (and rebuilt).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/kernel_contract.h"
#include "common/status.h"
#include "compiler/kernels/kernel_build.h"

namespace dsv41 {

// XXH3-64 of the source, every header's name and text, the option list, NVRTC's version and the arch.
uint64_t kernel_cache_key(const std::string& source, const std::vector<KernelSource>& headers,
                          const std::vector<std::string>& options, const std::string& arch);

// <dir>/<16 hex digits of key><extension> (extension ".cubin" or ".json").
std::string kernel_cache_path(const std::string& dir, uint64_t key, const std::string& extension);

struct CachedKernel {
  std::vector<uint8_t> cubin;
  KernelResources resources;
};

// The entry for `key`, or nothing when it is absent or fails any check: the JSON parses and names
// the same key, the cubin has the recorded size and hash, starts with the ELF magic and holds `entry`.
std::optional<CachedKernel> load_cached_kernel(const std::string& dir, uint64_t key, const std::string& entry);

// Writes the cubin, then the JSON, each with write_file_atomic (the JSON last: it validates the cubin).
Status store_cached_kernel(const std::string& dir, uint64_t key, const std::string& variant_key,
                           const std::vector<uint8_t>& cubin, const KernelResources& resources);

// True when bytes start like a 64-bit ELF image and contain `symbol` (a cubin's string table holds its
// extern "C" entry names).
bool looks_like_cubin(const std::vector<uint8_t>& bytes, const std::string& symbol);

}  // namespace dsv41
