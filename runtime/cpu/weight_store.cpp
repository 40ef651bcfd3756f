// runtime/cpu/weight_store.cpp — byte runs out of the shards (range-checked, pread), validated against the encoding, then dequantized.
#include "runtime/cpu/weight_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include <fmt/ranges.h>

#include "common/numeric_formats.h"
#include "common/tensor_inventory.h"

namespace dsv41::cpu {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// The shard files of one model folder, each opened once; sizes come from the file, not its header.
class ShardFiles {
 public:
  ShardFiles(const fb::Program& program, std::string model_dir) : program_(program), dir_(std::move(model_dir)) {
    fds_.assign(program.shards()->size(), -1);
    sizes_.assign(fds_.size(), 0);
  }
  ~ShardFiles() {
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  ShardFiles(const ShardFiles&) = delete;
  ShardFiles& operator=(const ShardFiles&) = delete;

  // Appends the bytes of every run of `tensor` to `out`, in run order.
  Status read(const fb::PlannedTensor& tensor, std::vector<uint8_t>& out) {
    for (const fb::ByteRun* run : *tensor.runs()) {
      const int shard = run->shard();
      DSV41_TRY(open(shard));
      const std::string path = this->path(shard);
      // The loader checked runs against the header's data size; the file itself may be shorter.
      const uint64_t end = run->offset() + (run->count() - 1) * run->stride() + run->length();
      if (end > sizes_[shard])
        return Status::errorf("{}: {}: bytes [{}, {}) lie past the end of the file ({} bytes; truncated shard?)", path,
                              tensor.name()->str(), run->offset(), end, sizes_[shard]);
      const size_t at = out.size();
      out.resize(at + run->length() * run->count());
      for (uint64_t i = 0; i < run->count(); ++i)
        DSV41_TRY(pread_all(shard, run->offset() + i * run->stride(), out.data() + at + i * run->length(), run->length()));
    }
    return Status::ok();
  }

 private:
  std::string path(int shard) const {
    return (std::filesystem::path(dir_) / program_.shards()->Get(shard)->file_name()->str()).string();
  }

  Status open(int shard) {
    if (fds_[shard] >= 0) return Status::ok();
    const std::string p = path(shard);
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::errorf("{}: cannot open: {}", p, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      ::close(fd);
      return Status::errorf("{}: cannot read its size: {}", p, std::strerror(errno));
    }
    fds_[shard] = fd;
    sizes_[shard] = static_cast<uint64_t>(st.st_size);
    return Status::ok();
  }

  Status pread_all(int shard, uint64_t offset, uint8_t* dst, uint64_t length) {
    while (length > 0) {
      const ssize_t got = ::pread(fds_[shard], dst, length, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        return Status::errorf("{}: read of {} bytes at offset {} failed: {}", path(shard), length, offset,
                              got == 0 ? "unexpected end of file" : std::strerror(errno));
      dst += got;
      offset += static_cast<uint64_t>(got);
      length -= static_cast<uint64_t>(got);
    }
    return Status::ok();
  }

  const fb::Program& program_;
  std::string dir_;
  std::vector<int> fds_;
  std::vector<uint64_t> sizes_;
};

std::vector<int64_t> longs(const flatbuffers::Vector<int64_t>* v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>{};
}

bool quantized(Encoding e) { return e == Encoding::FP8Block || e == Encoding::FP4Rows || e == Encoding::FP8Rows; }

// The stored dtype an encoding needs for the weight itself (Plain: BF16 or F32).
bool weight_dtype_fits(Encoding e, DType d) {
  switch (e) {
    case Encoding::Plain: return d == DType::BF16 || d == DType::F32;
    case Encoding::BF16: return d == DType::BF16;
    case Encoding::FP8Block:
    case Encoding::FP8Rows: return d == DType::F8_E4M3;
    case Encoding::FP4Rows: return d == DType::I8;
  }
  return false;
}

class Loader {
 public:
  Loader(const fb::Program& program, const std::string& model_dir) : program_(program), files_(program, model_dir) {
    const auto& weights = *program.weights();
    for (uint32_t i = 0; i < weights.size(); ++i) by_name_.emplace(weights.Get(i)->name()->str(), i);
  }

  Result<LoadedWeight> load(int64_t index) {
    const auto& weights = *program_.weights();
    if (index < 0 || index >= static_cast<int64_t>(weights.size()))
      return Status::errorf("weight index {} outside 0..{}", index, static_cast<int64_t>(weights.size()) - 1);
    const fb::PlannedTensor& t = *weights.Get(static_cast<uint32_t>(index));
    const std::string name = t.name()->str();
    const int raw_encoding = static_cast<int>(t.encoding());
    if (raw_encoding < 0 || raw_encoding > static_cast<int>(Encoding::FP8Rows))
      return Status::errorf("{}: encoding {} is not one this runtime reads", name, raw_encoding);
    const auto encoding = static_cast<Encoding>(raw_encoding);
    const auto dtype = static_cast<DType>(t.dtype());
    if (t.host_resident())
      return Status::errorf("{}: a host-resident (Engram) table; Engram is not implemented by the runtime yet", name);
    if (dtype == DType::F8_E8M0)
      return Status::errorf("{}: a scale tensor (F8_E8M0); calls name the weight, whose scale is loaded with it", name);
    if (!weight_dtype_fits(encoding, dtype))
      return Status::errorf("{}: dtype {} does not fit encoding {}", name, dtype_name(dtype), encoding_name(encoding));
    const std::vector<int64_t> local = longs(t.local_shape());
    if (local.empty() || local.size() > 2 || (quantized(encoding) && local.size() != 2))
      return Status::errorf("{}: local shape {} ({} encoding), expected {}", name, shape_text(local),
                            encoding_name(encoding), quantized(encoding) ? "2 dimensions" : "1 or 2 dimensions");
    for (int64_t extent : local)
      if (extent < 1 || extent > (int64_t{1} << 32))
        return Status::errorf("{}: local shape {} has an extent outside 1..2^32", name, shape_text(local));
    const int64_t rows = local.size() == 2 ? local[0] : 1, stored_cols = local.back();
    if (rows * stored_cols > (int64_t{1} << 36))
      return Status::errorf("{}: local shape {} holds more than 2^36 values", name, shape_text(local));
    const int64_t cols = encoding == Encoding::FP4Rows ? stored_cols * 2 : stored_cols;

    std::vector<uint8_t> weight_bytes;
    DSV41_TRY(read_exact(t, static_cast<uint64_t>(rows * stored_cols) * dtype_bytes(dtype), weight_bytes));
    std::vector<uint8_t> scale_bytes;
    if (quantized(encoding)) DSV41_TRY(read_scale(name, encoding, rows, cols, scale_bytes));

    LoadedWeight w;
    w.name = name;
    w.shape = local.size() == 2 ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols};
    w.values.resize(static_cast<size_t>(rows * cols));
    dequantize(encoding, dtype, weight_bytes.data(), scale_bytes.data(), rows, cols, w.values.data());
    return w;
  }

 private:
  // Reads a tensor's runs; their total must be exactly what its local shape needs.
  Status read_exact(const fb::PlannedTensor& t, uint64_t expected, std::vector<uint8_t>& out) {
    uint64_t planned = 0;
    for (const fb::ByteRun* run : *t.runs()) planned += run->length() * run->count();
    if (planned != expected)
      return Status::errorf("{}: its runs hold {} bytes, local shape {} of {} needs {}", t.name()->str(), planned,
                            shape_text(longs(t.local_shape())), dtype_name(static_cast<DType>(t.dtype())), expected);
    out.reserve(expected);
    return files_.read(t, out);
  }

  Status read_scale(const std::string& name, Encoding encoding, int64_t rows, int64_t cols, std::vector<uint8_t>& out) {
    const std::string scale = scale_name(name);
    auto it = by_name_.find(scale);
    if (it == by_name_.end())
      return Status::errorf("{}: encoding {} needs its scale {}, which the program does not plan", name,
                            encoding_name(encoding), scale);
    const fb::PlannedTensor& s = *program_.weights()->Get(it->second);
    if (encoding != Encoding::FP8Block && cols % kScaleBlock != 0)
      return Status::errorf("{}: {} local columns are not whole scale blocks of {}", name, cols, kScaleBlock);
    const std::vector<int64_t> expected = encoding == Encoding::FP8Block
                                              ? std::vector<int64_t>{ceil_div(rows, kScaleBlock), ceil_div(cols, kScaleBlock)}
                                              : std::vector<int64_t>{rows, cols / kScaleBlock};
    const std::vector<int64_t> local = longs(s.local_shape());
    if (static_cast<DType>(s.dtype()) != DType::F8_E8M0 || local != expected)
      return Status::errorf("{}: {} {}, expected F8_E8M0 {} for {} local values [{}, {}]", scale,
                            dtype_name(static_cast<DType>(s.dtype())), shape_text(local), shape_text(expected), name,
                            rows, cols);
    return read_exact(s, static_cast<uint64_t>(expected[0] * expected[1]), out);
  }

  const fb::Program& program_;
  ShardFiles files_;
  std::unordered_map<std::string, uint32_t> by_name_;
};

}  // namespace

Result<WeightStore> WeightStore::load(const fb::Program& program, const std::string& model_dir,
                                      const std::vector<int64_t>& indices) {
  WeightStore store;
  if (!program.weights() || !program.shards()) return Status::error("program: weights or shards missing");
  store.slot_of_.assign(program.weights()->size(), -1);
  Loader loader(program, model_dir);
  for (int64_t index : indices) {
    if (store.loaded(index)) continue;
    DSV41_ASSIGN_OR_RETURN(LoadedWeight w, loader.load(index));
    store.slot_of_[index] = static_cast<int64_t>(store.weights_.size());
    store.weights_.push_back(std::move(w));
  }
  return store;
}

WeightView WeightStore::view(int64_t index) const {
  if (!loaded(index)) return {};
  const LoadedWeight& w = weights_[slot_of_[index]];
  return {w.values.data(), w.shape, w.name};
}

uint64_t WeightStore::value_bytes() const {
  uint64_t total = 0;
  for (const LoadedWeight& w : weights_) total += w.values.size() * sizeof(float);
  return total;
}

}  // namespace dsv41::cpu
