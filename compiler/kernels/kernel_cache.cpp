// compiler/kernels/kernel_cache.cpp — the content-addressed kernel cache (see kernel_cache.h).
#include "compiler/kernels/kernel_cache.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "common/hashing.h"
#include "common/program_file.h"

namespace dsv41 {
namespace {

// Bumped when the entry layout or what the key covers changes, so old entries stop matching.
constexpr const char* kCacheFormat = "dsv41-kernel-cache-2";  // 2: module_globals recorded

std::optional<std::vector<uint8_t>> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return bytes;
}

}  // namespace

uint64_t kernel_cache_key(const std::string& source, const std::vector<KernelSource>& headers,
                          const std::vector<std::string>& options, const std::string& arch) {
  Hasher h;
  h.add(kCacheFormat);
  h.add(source);
  h.add(static_cast<uint64_t>(headers.size()));
  for (const auto& header : headers) h.add(header.file_name).add(header.text);
  h.add(static_cast<uint64_t>(options.size()));
  for (const auto& option : options) h.add(option);
  h.add(nvrtc_version());
  h.add(arch);
  return h.digest();
}

std::string kernel_cache_path(const std::string& dir, uint64_t key, const std::string& extension) {
  return dir + "/" + hex64(key) + extension;
}

bool looks_like_cubin(const std::vector<uint8_t>& bytes, const std::string& symbol) {
  static const uint8_t kMagic[] = {0x7f, 'E', 'L', 'F', 2 /* ELFCLASS64 */};
  if (bytes.size() < 64 || !std::equal(std::begin(kMagic), std::end(kMagic), bytes.begin())) return false;
  if (symbol.empty()) return true;
  return std::search(bytes.begin(), bytes.end(), symbol.begin(), symbol.end()) != bytes.end();
}

std::optional<CachedKernel> load_cached_kernel(const std::string& dir, uint64_t key, const std::string& entry) {
  auto meta_bytes = read_all(kernel_cache_path(dir, key, ".json"));
  if (!meta_bytes) return std::nullopt;
  nlohmann::json meta = nlohmann::json::parse(meta_bytes->begin(), meta_bytes->end(), nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return std::nullopt;

  CachedKernel cached;
  try {
    if (meta.at("format").get<std::string>() != kCacheFormat) return std::nullopt;
    if (meta.at("key").get<std::string>() != hex64(key)) return std::nullopt;
    const auto size = meta.at("cubin_size").get<uint64_t>();
    const auto digest = meta.at("cubin_xxh3").get<std::string>();
    cached.resources.registers = meta.at("registers").get<int>();
    cached.resources.static_shared = meta.at("static_shared").get<int64_t>();
    cached.resources.local_bytes = meta.at("local_bytes").get<int64_t>();
    cached.resources.module_globals = meta.at("module_globals").get<int64_t>();
    if (cached.resources.registers < 0 || cached.resources.static_shared < 0 || cached.resources.local_bytes < 0 ||
        cached.resources.module_globals < 0)
      return std::nullopt;

    auto cubin = read_all(kernel_cache_path(dir, key, ".cubin"));
    if (!cubin || cubin->size() != size) return std::nullopt;
    if (hex64(hash_bytes(cubin->data(), cubin->size())) != digest) return std::nullopt;
    if (!looks_like_cubin(*cubin, entry)) return std::nullopt;
    cached.cubin = std::move(*cubin);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a field missing or of the wrong type
  }
  return cached;
}

Status store_cached_kernel(const std::string& dir, uint64_t key, const std::string& variant_key,
                           const std::vector<uint8_t>& cubin, const KernelResources& resources) {
  nlohmann::ordered_json meta;
  meta["format"] = kCacheFormat;
  meta["key"] = hex64(key);
  meta["variant"] = variant_key;  // for people reading the folder; not checked
  meta["nvrtc"] = nvrtc_version();
  meta["cubin_size"] = static_cast<uint64_t>(cubin.size());
  meta["cubin_xxh3"] = hex64(hash_bytes(cubin.data(), cubin.size()));
  meta["registers"] = resources.registers;
  meta["static_shared"] = resources.static_shared;
  meta["local_bytes"] = resources.local_bytes;
  meta["module_globals"] = resources.module_globals;
  const std::string text = meta.dump(2) + "\n";
  DSV41_TRY(write_file_atomic(kernel_cache_path(dir, key, ".cubin"), cubin.data(), cubin.size()));
  DSV41_TRY(write_file_atomic(kernel_cache_path(dir, key, ".json"), text.data(), text.size()));
  return Status::ok();
}

}  // namespace dsv41
