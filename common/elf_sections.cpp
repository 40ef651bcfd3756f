// common/elf_sections.cpp — the ELF64 section-header reader and a cubin's module-global bytes (see elf_sections.h).
#include "common/elf_sections.h"

#include <cstring>

namespace dsv41 {
namespace {

constexpr uint64_t kElfHeaderBytes = 64;     // sizeof(Elf64_Ehdr)
constexpr uint64_t kSectionHeaderBytes = 64;  // sizeof(Elf64_Shdr)
constexpr uint32_t kSectionNoBits = 8;        // SHT_NOBITS: occupies no file bytes

// Little-endian unsigned of `width` bytes at `at`; the caller has checked the bounds.
uint64_t read_le(const uint8_t* bytes, uint64_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i) value = (value << 8) | bytes[at + i];
  return value;
}

// True when [offset, offset + length) lies within an image of `size` bytes (no overflow).
bool fits(uint64_t offset, uint64_t length, uint64_t size) { return offset <= size && length <= size - offset; }

}  // namespace

Result<std::vector<ElfSection>> read_elf_sections(const uint8_t* bytes, uint64_t size,
                                                  const std::string& name_for_errors) {
  static const uint8_t kMagic[] = {0x7f, 'E', 'L', 'F'};
  if (size < kElfHeaderBytes || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0)
    return Status::errorf("kernel {}: the cubin ({} bytes) is not an ELF image (needs the magic and a {}-byte header)",
                          name_for_errors, size, kElfHeaderBytes);
  if (bytes[4] != 2 || bytes[5] != 1)
    return Status::errorf("kernel {}: the cubin is ELF class {} data {}, expected 2 (64-bit) and 1 (little-endian)",
                          name_for_errors, int{bytes[4]}, int{bytes[5]});
  const uint64_t table = read_le(bytes, 40, 8);       // e_shoff
  const uint64_t entry_size = read_le(bytes, 58, 2);  // e_shentsize
  const uint64_t count = read_le(bytes, 60, 2);       // e_shnum
  const uint64_t names_index = read_le(bytes, 62, 2);  // e_shstrndx
  if (count == 0) {
    // e_shnum 0 with a table means more than 0xff00 sections (the count moves to section 0): no cubin has that many.
    if (table != 0)
      return Status::errorf("kernel {}: the cubin uses extended section numbering (e_shnum 0, e_shoff {}), not supported",
                            name_for_errors, table);
    return std::vector<ElfSection>{};
  }
  if (entry_size != kSectionHeaderBytes)
    return Status::errorf("kernel {}: the cubin's section headers are {} bytes each, expected {}", name_for_errors,
                          entry_size, kSectionHeaderBytes);
  if (!fits(table, count * kSectionHeaderBytes, size))
    return Status::errorf("kernel {}: the cubin's {} section headers at offset {} end past its {} bytes",
                          name_for_errors, count, table, size);

  std::vector<ElfSection> sections(count);
  std::vector<uint64_t> name_offsets(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = table + i * kSectionHeaderBytes;
    name_offsets[i] = read_le(bytes, at + 0, 4);
    ElfSection& s = sections[i];
    s.type = static_cast<uint32_t>(read_le(bytes, at + 4, 4));
    s.offset = read_le(bytes, at + 24, 8);
    s.size = read_le(bytes, at + 32, 8);
    if (s.type != kSectionNoBits && !fits(s.offset, s.size, size))
      return Status::errorf("kernel {}: the cubin's section {} ({} bytes at offset {}) ends past its {} bytes",
                            name_for_errors, i, s.size, s.offset, size);
  }
  if (names_index >= count)
    return Status::errorf("kernel {}: the cubin's section-name table is section {}, but it has {} sections",
                          name_for_errors, names_index, count);
  const ElfSection& names = sections[names_index];
  if (names.type == kSectionNoBits)
    return Status::errorf("kernel {}: the cubin's section-name table (section {}) has no bytes in the file",
                          name_for_errors, names_index);
  for (uint64_t i = 0; i < count; ++i) {
    if (name_offsets[i] >= names.size)
      return Status::errorf("kernel {}: the name of the cubin's section {} starts at {}, past its {}-byte name table",
                            name_for_errors, i, name_offsets[i], names.size);
    const char* begin = reinterpret_cast<const char*>(bytes + names.offset + name_offsets[i]);
    const void* end = std::memchr(begin, '\0', names.size - name_offsets[i]);
    if (!end)
      return Status::errorf("kernel {}: the name of the cubin's section {} runs past its {}-byte name table",
                            name_for_errors, i, names.size);
    sections[i].name.assign(begin, static_cast<const char*>(end));
  }
  return sections;
}

Result<uint64_t> module_global_bytes(const uint8_t* cubin, uint64_t size, const std::string& name_for_errors) {
  DSV41_ASSIGN_OR_RETURN(const std::vector<ElfSection> sections, read_elf_sections(cubin, size, name_for_errors));
  uint64_t bytes = 0;
  for (const ElfSection& s : sections)
    if (s.name == ".nv.global" || s.name == ".nv.global.init") {
      // A NOBITS size is not bounded by the file: refuse one that would wrap the sum.
      if (s.size > UINT64_MAX - bytes)
        return Status::errorf("kernel {}: the cubin's {} section of {} bytes overflows the module's global bytes",
                              name_for_errors, s.name, s.size);
      bytes += s.size;
    }
  return bytes;
}

}  // namespace dsv41
