// compiler/synth/safetensors_writer.h — writes one safetensors file: a fast string-built header, then streamed data.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"

namespace dsv41 {

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  uint64_t bytes() const;
};

// `text` as a JSON string literal, quotes included.
std::string json_quote(std::string_view text);

// The header JSON for entries laid out contiguously in order, padded with spaces to a multiple of 8
// bytes so the data section starts 8-aligned. Built by hand: nlohmann is several times slower on the
// release pack's ~96,000 entries and headers must be written in well under a second.
std::string safetensors_header_json(const std::vector<SafetensorsEntry>& entries);

// Writes `path` atomically: everything goes to `path.tmp`, renamed over `path` by finish(). A writer
// dropped before finish() removes its temp file, so a failed run never leaves a half-written shard.
class SafetensorsFileWriter {
 public:
  // Writes the length prefix and header. With `headers_only` the file is exactly 8 + header bytes and
  // write() must not be called; otherwise the entries' data must follow, in order, through write().
  static Result<SafetensorsFileWriter> create(const std::string& path, const std::vector<SafetensorsEntry>& entries,
                                              bool headers_only);
  SafetensorsFileWriter(SafetensorsFileWriter&&) noexcept = default;
  SafetensorsFileWriter& operator=(SafetensorsFileWriter&&) noexcept = default;
  ~SafetensorsFileWriter();

  Status write(const void* data, size_t size);
  // Checks exactly the described data was written, flushes, and renames the temp file into place.
  Status finish();
  uint64_t data_bytes() const { return data_bytes_; }

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  SafetensorsFileWriter() = default;
  std::string path_, temp_path_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  uint64_t data_bytes_ = 0, written_ = 0;
  bool headers_only_ = false;
};

// Writes `text` to `path` atomically (temp file + rename).
Status write_file_atomic(const std::string& path, std::string_view text);

}  // namespace dsv41
