// common/cache_format.h — the plan's cache format (bf16 or official) and the official packed rows of
// each cache: FP8 window rows, FP4 compressed rows and FP4 index keys (docs/model.md "Cache formats").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/dtype.h"

namespace dsv41 {

// BF16: cache rows are activations (bf16 values, f32 in check mode). Official: the rows are stored
// as the official code rounds them, each cache in its own packed format (CacheRole).
enum class CacheFormat : uint8_t { BF16 = 0, Official = 1 };

std::string_view cache_format_name(CacheFormat format);  // "bf16", "official"
std::optional<CacheFormat> cache_format_from_name(std::string_view name);

// A packed cache is a U8 state buffer [rows, packed_row_bytes(role, dim)]; which format a row has
// follows from the cache's role, as in the official code:
//   Window:     dim e4m3 codes, then dim/32 UE8M0 scales (scale 2^ceil(log2(max(amax, 1e-4)/448)))
//   Compressed: dim/2 bytes of e2m1 (low nibble first), then dim/16 E4M3 scales (amax/6 rounded to e4m3)
//   IndexKey:   dim/2 bytes of e2m1 (low nibble first), then dim/32 UE8M0 scales (2^ceil(log2(amax/6)))
enum class CacheRole : uint8_t { Window, Compressed, IndexKey };
constexpr DType kPackedCacheDType = DType::U8;

// Values one scale covers, and the dim every packed row's width must be a multiple of.
int64_t packed_group(CacheRole role);
int64_t packed_row_bytes(CacheRole role, int64_t dim);
// The dim whose packed row takes `row_bytes` (0 when none does).
int64_t packed_row_dim(CacheRole role, int64_t row_bytes);
// The role of a cache state argument as the ops name it: "ring", "cache", "index_cache".
std::optional<CacheRole> cache_role_of_arg(std::string_view arg);

// Quantizes one row of `dim` values into its packed bytes, rounding exactly as the official code
// (ties to even, saturating codes); unpack gives the dequantized fp32 values.
void pack_cache_row(CacheRole role, const float* values, int64_t dim, uint8_t* row);
void unpack_cache_row(CacheRole role, const uint8_t* row, int64_t dim, float* values);
// pack then unpack: the values the official code leaves in place of `values`.
void round_cache_row(CacheRole role, const float* values, int64_t dim, float* rounded);

}  // namespace dsv41
