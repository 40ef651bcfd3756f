// runtime/cpu/host_tables.cpp — mmap of each host table's byte run (and its scales' run), range-checked against the shard file.
#include "runtime/cpu/host_tables.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/model_config.h"
#include "common/tensor_inventory.h"

namespace dsv41::cpu {
namespace {

const fb::PlannedTensor* find_tensor(const fb::Program& program, const std::string& name) {
  for (const fb::PlannedTensor* t : *program.weights())
    if (t->name()->str() == name) return t;
  return nullptr;
}

// One read-only shared mapping of a tensor's single run: the page cache is the only copy.
Result<const uint8_t*> map_run(const fb::Program& program, const std::string& model_dir,
                                      const fb::PlannedTensor& t, uint64_t expected, std::vector<void*>& bases,
                                      std::vector<size_t>& lengths) {
  const std::string name = t.name()->str();
  if (!t.runs() || t.runs()->size() != 1 || t.runs()->Get(0)->count() != 1)
    return Status::errorf("{}: a host table must be one contiguous byte run, the program plans {}", name,
                          t.runs() ? t.runs()->size() : 0);
  const fb::ByteRun* run = t.runs()->Get(0);
  if (run->length() != expected)
    return Status::errorf("{}: its run holds {} bytes, its shape needs {}", name, run->length(), expected);
  if (run->shard() < 0 || static_cast<uint32_t>(run->shard()) >= program.shards()->size())
    return Status::errorf("{}: shard {} outside the program's {} shards", name, run->shard(), program.shards()->size());
  const std::string path =
      (std::filesystem::path(model_dir) / program.shards()->Get(run->shard())->file_name()->str()).string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::errorf("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || run->offset() + run->length() > static_cast<uint64_t>(st.st_size)) {
    ::close(fd);
    return Status::errorf("{}: {}: bytes [{}, {}) lie past the end of the file ({} bytes)", path, name, run->offset(),
                          run->offset() + run->length(), static_cast<uint64_t>(st.st_size));
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = run->offset() / page * page, length = run->offset() + run->length() - start;
  void* base = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(start));
  ::close(fd);  // the mapping keeps the file
  if (base == MAP_FAILED) return Status::errorf("{}: mmap of {} bytes for {} failed: {}", path, length, name, std::strerror(errno));
  ::madvise(base, length, MADV_RANDOM);  // rows are read by hash: no read-ahead
  bases.push_back(base);
  lengths.push_back(length);
  return static_cast<const uint8_t*>(base) + (run->offset() - start);
}

}  // namespace

HostTables::HostTables(HostTables&& other) noexcept { *this = std::move(other); }

HostTables& HostTables::operator=(HostTables&& other) noexcept {
  std::swap(mappings_, other.mappings_);
  std::swap(tables_, other.tables_);
  return *this;
}

HostTables::~HostTables() {
  for (const Mapping& m : mappings_) ::munmap(m.base, m.length);
}

Result<HostTables> HostTables::map(const fb::Program& program, const std::string& model_dir,
                                   const std::vector<int64_t>& indices) {
  HostTables tables;
  for (int64_t index : indices) {
    if (tables.view(index).codes) continue;
    if (index < 0 || index >= static_cast<int64_t>(program.weights()->size()))
      return Status::errorf("host table index {} outside the program's {} weights", index, program.weights()->size());
    const fb::PlannedTensor& t = *program.weights()->Get(static_cast<uint32_t>(index));
    const std::string name = t.name()->str();
    const auto* shape = t.local_shape();
    if (static_cast<Encoding>(t.encoding()) != Encoding::FP8Rows || !shape || shape->size() != 2 ||
        shape->Get(1) % kScaleBlock != 0 || shape->Get(0) < 1)
      return Status::errorf("{}: a host table must be FP8 rows [rows, a multiple of {}] (encoding {}, {} dims)", name,
                            kScaleBlock, encoding_name(static_cast<Encoding>(t.encoding())), shape ? shape->size() : 0);
    const int64_t rows = shape->Get(0), dim = shape->Get(1);
    const fb::PlannedTensor* scale = find_tensor(program, scale_name(name));
    if (!scale) return Status::errorf("{}: its scale {} is not in the program", name, scale_name(name));
    std::vector<void*> bases;
    std::vector<size_t> lengths;
    auto codes = map_run(program, model_dir, t, static_cast<uint64_t>(rows * dim), bases, lengths);
    Result<const uint8_t*> scales = Status::error("not mapped");
    if (codes.is_ok()) scales = map_run(program, model_dir, *scale, static_cast<uint64_t>(rows * dim / kScaleBlock), bases, lengths);
    for (size_t i = 0; i < bases.size(); ++i) tables.mappings_.push_back({bases[i], lengths[i]});
    if (!codes.is_ok()) return codes.status();
    if (!scales.is_ok()) return scales.status();
    tables.tables_.push_back({index, {*codes, *scales, rows, dim, name}});
  }
  return tables;
}

HostTableView HostTables::view(int64_t index) const {
  for (const Table& t : tables_)
    if (t.index == index) return t.view;
  return {};
}

uint64_t HostTables::mapped_bytes() const {
  uint64_t total = 0;
  for (const Mapping& m : mappings_) total += m.length;
  return total;
}

}  // namespace dsv41::cpu
