// tests/common/elf_sections_test.cpp — the ELF64 section-header reader on hand-made images: a good one
// (names, types, sizes, the module-global bytes of .nv.global + .nv.global.init), and malformed ones,
// each refused naming the variant and what is out of bounds.
#include "common/elf_sections.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace dsv41 {
namespace {

constexpr const char* kName = "probe{n=1}@sm_90a";

struct HandSection {
  std::string name;
  uint32_t type = 0;
  std::vector<uint8_t> bytes;  // file bytes (none for NOBITS)
  uint64_t size = 0;           // NOBITS: the loaded size; otherwise bytes.size()
};

void put(std::vector<uint8_t>& image, uint64_t at, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) image[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// An ELF64 little-endian image: the 64-byte header, each section's bytes, the name table (the last
// section, ".shstrtab"), then the section headers, with a null section 0 as the linker writes.
std::vector<uint8_t> elf_image(std::vector<HandSection> sections) {
  std::string names(1, '\0');
  std::vector<uint64_t> name_at;
  sections.insert(sections.begin(), HandSection{});
  sections.push_back({".shstrtab", 3, {}, 0});
  for (const HandSection& s : sections) {
    name_at.push_back(s.name.empty() ? 0 : names.size());
    if (!s.name.empty()) names += s.name + '\0';
  }
  sections.back().bytes.assign(names.begin(), names.end());
  std::vector<uint8_t> image(64, 0);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  std::memcpy(image.data(), ident, sizeof(ident));
  std::vector<uint64_t> offsets;
  for (const HandSection& s : sections) {
    offsets.push_back(image.size());
    image.insert(image.end(), s.bytes.begin(), s.bytes.end());
  }
  const uint64_t table = image.size();
  image.resize(table + 64 * sections.size(), 0);
  put(image, 40, table, 8);                  // e_shoff
  put(image, 52, 64, 2);                     // e_ehsize
  put(image, 58, 64, 2);                     // e_shentsize
  put(image, 60, sections.size(), 2);        // e_shnum
  put(image, 62, sections.size() - 1, 2);    // e_shstrndx
  for (size_t i = 0; i < sections.size(); ++i) {
    const uint64_t at = table + 64 * i;
    const HandSection& s = sections[i];
    put(image, at + 0, name_at[i], 4);
    put(image, at + 4, s.type, 4);
    put(image, at + 24, i == 0 ? 0 : offsets[i], 8);
    put(image, at + 32, s.type == 8 ? s.size : s.bytes.size(), 8);
  }
  return image;
}

std::vector<uint8_t> good_image() {
  return elf_image({{".text.probe", 1, std::vector<uint8_t>(48, 0x11), 0},
                    {".nv.global.init", 1, std::vector<uint8_t>(24, 0x22), 0},
                    {".nv.global", 8, {}, 1000000},
                    {".nv.constant0.probe", 1, std::vector<uint8_t>(16, 0), 0}});
}

// The section header table's offset (e_shoff) of an image elf_image made.
uint64_t table_of(const std::vector<uint8_t>& image) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | image[40 + i];
  return v;
}

void expect_refused(const std::vector<uint8_t>& image, const std::string& part) {
  auto sections = read_elf_sections(image.data(), image.size(), kName);
  ASSERT_FALSE(sections.is_ok()) << "accepted; expected a refusal with \"" << part << "\"";
  const std::string& message = sections.status().message();
  EXPECT_NE(message.find(kName), std::string::npos) << "the variant is not named: " << message;
  EXPECT_NE(message.find(part), std::string::npos) << "missing \"" << part << "\" in: " << message;
  auto globals = module_global_bytes(image.data(), image.size(), kName);
  ASSERT_FALSE(globals.is_ok());
  EXPECT_EQ(globals.status().message(), message);
}

TEST(ElfSections, ReadsNamesTypesAndSizes) {
  const std::vector<uint8_t> image = good_image();
  auto sections = read_elf_sections(image.data(), image.size(), kName);
  ASSERT_TRUE(sections.is_ok()) << sections.status().message();
  ASSERT_EQ(sections->size(), 6u);
  const std::vector<std::string> names = {"", ".text.probe", ".nv.global.init", ".nv.global", ".nv.constant0.probe",
                                          ".shstrtab"};
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ((*sections)[i].name, names[i]) << i;
  EXPECT_EQ((*sections)[1].size, 48u);
  EXPECT_EQ((*sections)[3].type, 8u);
  EXPECT_EQ((*sections)[3].size, 1000000u) << "a NOBITS size is what loads, not what the file holds";
  auto globals = module_global_bytes(image.data(), image.size(), kName);
  ASSERT_TRUE(globals.is_ok()) << globals.status().message();
  EXPECT_EQ(*globals, 1000000u + 24u);
}

TEST(ElfSections, AnImageWithoutGlobalsHasNone) {
  const std::vector<uint8_t> image = elf_image({{".text.probe", 1, std::vector<uint8_t>(8, 1), 0}});
  auto globals = module_global_bytes(image.data(), image.size(), kName);
  ASSERT_TRUE(globals.is_ok()) << globals.status().message();
  EXPECT_EQ(*globals, 0u);
}

TEST(ElfSections, RefusesATruncatedImage) {
  const std::vector<uint8_t> image = good_image();
  // Cut inside the section header table.
  expect_refused(std::vector<uint8_t>(image.begin(), image.end() - 100), "section headers at offset");
  // Cut inside the ELF header, and nothing at all.
  expect_refused(std::vector<uint8_t>(image.begin(), image.begin() + 40), "is not an ELF image");
  expect_refused({}, "is not an ELF image");
}

TEST(ElfSections, RefusesASectionPastTheEnd) {
  std::vector<uint8_t> image = good_image();
  const uint64_t header_of_text = table_of(image) + 64 * 1;
  put(image, header_of_text + 24, image.size() - 10, 8);  // sh_offset: 48 bytes from 10 before the end
  expect_refused(image, "section 1 (48 bytes at offset");
  // A size that wraps offset + size is caught too.
  image = good_image();
  put(image, header_of_text + 32, ~uint64_t{0} - 8, 8);
  expect_refused(image, "section 1 (");
}

TEST(ElfSections, RefusesOtherMalformedHeaders) {
  std::vector<uint8_t> image = good_image();
  image[4] = 1;  // ELFCLASS32
  expect_refused(image, "ELF class 1");
  image = good_image();
  image[0] = 0;
  expect_refused(image, "is not an ELF image");
  image = good_image();
  put(image, 58, 40, 2);  // e_shentsize
  expect_refused(image, "section headers are 40 bytes each");
  image = good_image();
  put(image, 62, 6, 2);  // e_shstrndx past the 6 sections
  expect_refused(image, "section-name table is section 6");
  image = good_image();
  put(image, table_of(image) + 64 * 2, 100000, 4);  // sh_name of section 2 past the name table
  expect_refused(image, "name of the cubin's section 2 starts at 100000");
  image = good_image();
  // The name table's last byte is its terminating NUL: overwrite it, so the last name runs past the table.
  const uint64_t names_at = table_of(image) - 1;
  image[names_at] = 'x';
  expect_refused(image, "runs past its");
}

}  // namespace
}  // namespace dsv41
