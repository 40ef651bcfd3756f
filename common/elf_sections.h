// common/elf_sections.h — a bounds-checked reader of an ELF64 image's section headers, and from it the
// bytes a cubin's module-scope __device__ variables take when the driver loads the module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dsv41 {

// One section header of an ELF64 little-endian image (the fields dsv41 reads).
struct ElfSection {
  std::string name;  // from the section-name string table
  uint32_t type = 0;  // SHT_*: 1 PROGBITS, 3 STRTAB, 8 NOBITS, ...
  uint64_t offset = 0;
  uint64_t size = 0;  // a NOBITS section takes `size` bytes when loaded and none in the file
};

// Every section header of `bytes`, in order. Refuses, naming `name_for_errors` (a variant key), the
// field and the bound: an image that is not ELF64 little-endian, a header table or a section (other
// than NOBITS) that ends past the image, a section-name string table out of range, a name that runs
// past its table.
Result<std::vector<ElfSection>> read_elf_sections(const uint8_t* bytes, uint64_t size,
                                                  const std::string& name_for_errors);

// The device bytes of a cubin's module globals: the sizes of its `.nv.global` (uninitialised, NOBITS)
// and `.nv.global.init` (initialised) sections, 0 when it has neither. Refusals as read_elf_sections.
Result<uint64_t> module_global_bytes(const uint8_t* cubin, uint64_t size, const std::string& name_for_errors);

}  // namespace dsv41
