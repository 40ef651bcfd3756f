// compiler/synth/safetensors_writer.cpp — safetensors header building and atomic, streamed shard files.
#include "compiler/synth/safetensors_writer.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace dsv41 {
namespace fs = std::filesystem;

uint64_t SafetensorsEntry::bytes() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n * static_cast<uint64_t>(dtype_bytes(dtype));
}

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string safetensors_header_json(const std::vector<SafetensorsEntry>& entries) {
  fmt::memory_buffer out;
  out.reserve(entries.size() * 96 + 64);
  auto put = [&](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
  put("{");
  uint64_t offset = 0;
  for (const SafetensorsEntry& e : entries) {
    put(json_quote(e.name));
    put(":{\"dtype\":\"");
    put(dtype_name(e.dtype));
    put("\",\"shape\":[");
    for (size_t i = 0; i < e.shape.size(); ++i)
      fmt::format_to(std::back_inserter(out), "{}{}", i ? "," : "", e.shape[i]);
    const uint64_t end = offset + e.bytes();
    fmt::format_to(std::back_inserter(out), "],\"data_offsets\":[{},{}]}},", offset, end);
    offset = end;
  }
  put("\"__metadata__\":{\"format\":\"pt\"}}");
  while (out.size() % 8 != 0) out.push_back(' ');
  return fmt::to_string(out);
}

Result<SafetensorsFileWriter> SafetensorsFileWriter::create(const std::string& path,
                                                            const std::vector<SafetensorsEntry>& entries,
                                                            bool headers_only) {
  SafetensorsFileWriter w;
  w.path_ = path;
  w.temp_path_ = path + ".tmp";
  w.headers_only_ = headers_only;
  for (const auto& e : entries) w.data_bytes_ += e.bytes();
  w.file_.reset(std::fopen(w.temp_path_.c_str(), "wb"));
  if (!w.file_) return Status::errorf("{}: cannot create ({})", w.temp_path_, std::strerror(errno));
  const std::string header = safetensors_header_json(entries);
  unsigned char prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  if (std::fwrite(prefix, 1, 8, w.file_.get()) != 8 ||
      std::fwrite(header.data(), 1, header.size(), w.file_.get()) != header.size())
    return Status::errorf("{}: cannot write the {}-byte header ({})", w.temp_path_, header.size(),
                          std::strerror(errno));
  return w;
}

SafetensorsFileWriter::~SafetensorsFileWriter() {
  if (!file_) return;
  file_.reset();
  std::error_code ec;
  fs::remove(temp_path_, ec);
}

Status SafetensorsFileWriter::write(const void* data, size_t size) {
  DSV41_CHECK(file_ && !headers_only_);
  DSV41_CHECK(written_ + size <= data_bytes_);  // callers stream exactly what the header describes
  if (std::fwrite(data, 1, size, file_.get()) != size)
    return Status::errorf("{}: cannot write {} bytes at data offset {} ({})", temp_path_, size, written_,
                          std::strerror(errno));
  written_ += size;
  return Status::ok();
}

Status SafetensorsFileWriter::finish() {
  DSV41_CHECK(file_);
  DSV41_CHECK(headers_only_ || written_ == data_bytes_);
  std::FILE* f = file_.release();
  const bool flushed = std::fflush(f) == 0;
  const bool closed = std::fclose(f) == 0;
  std::error_code ec;
  if (!flushed || !closed) {
    fs::remove(temp_path_, ec);
    return Status::errorf("{}: cannot flush ({})", temp_path_, std::strerror(errno));
  }
  fs::rename(temp_path_, path_, ec);
  if (ec) {
    fs::remove(temp_path_, ec);
    return Status::errorf("{}: cannot rename into place ({})", path_, ec.message());
  }
  return Status::ok();
}

Status write_file_atomic(const std::string& path, std::string_view text) {
  const std::string temp = path + ".tmp";
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (!f) return Status::errorf("{}: cannot create ({})", temp, std::strerror(errno));
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  std::error_code ec;
  if (!written || !closed) {
    fs::remove(temp, ec);
    return Status::errorf("{}: cannot write {} bytes", temp, text.size());
  }
  fs::rename(temp, path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return Status::errorf("{}: cannot rename into place ({})", path, ec.message());
  }
  return Status::ok();
}

}  // namespace dsv41
