// common/program_file.h — loads a program file: flatbuffers verifier, format version, then every index and range.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "schemas/program_generated.h"

namespace dsv41 {

// Bump on any change old readers cannot take; the loader refuses other versions by name.
constexpr uint32_t kProgramFormatVersion = 3;  // 2: call lists (phases, buffers, state); 3: kernels
constexpr const char* kProgramFileIdentifier = "DSV4";

class ProgramFile {
 public:
  static Result<ProgramFile> load(const std::string& path);
  // Verifies bytes already in memory; `source` names them in messages.
  static Result<ProgramFile> from_bytes(std::vector<uint8_t> bytes, const std::string& source);

  const fb::Program& program() const { return *fb::GetProgram(bytes_.data()); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }
  const std::string& source() const { return source_; }

 private:
  std::vector<uint8_t> bytes_;
  std::string source_;
};

// Writes bytes to path atomically (temporary file, then rename), so a reader never sees half a file.
Status write_file_atomic(const std::string& path, const void* data, size_t size);

}  // namespace dsv41
