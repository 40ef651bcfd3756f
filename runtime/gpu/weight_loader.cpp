// runtime/gpu/weight_loader.cpp — checks, the chunking of byte runs, parallel preads and the progress report.
#include "runtime/gpu/weight_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "common/pack_index.h"
#include "common/tensor_inventory.h"

namespace dsv41::gpu {
namespace {

uint64_t align(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// One piece of work: `repeats` repeats of a run starting at repeat `first`, or, for a contiguous
// run, bytes [first, first + repeats) of it (then the run is treated as one repeat of its whole length).
struct Chunk {
  const fb::ByteRun* run = nullptr;
  bool contiguous = false;
  uint64_t first = 0, repeats = 0;
  uint64_t dest = 0;  // region offset of the chunk's first byte
  uint64_t bytes = 0;
};

std::vector<Chunk> make_chunks(const fb::Program& p, const StoredLayout& layout, uint64_t chunk_bytes) {
  std::vector<Chunk> chunks;
  for (size_t t = 0; t < layout.offset.size(); ++t) {
    if (layout.offset[t] < 0) continue;
    uint64_t dest = static_cast<uint64_t>(layout.offset[t]);
    for (const fb::ByteRun* run : *p.weights()->Get(t)->runs()) {
      const uint64_t n = run->length() * run->count();
      if (run->count() == 1 || run->stride() == run->length()) {
        for (uint64_t at = 0; at < n; at += chunk_bytes)
          chunks.push_back({run, true, at, std::min(chunk_bytes, n - at), dest + at, std::min(chunk_bytes, n - at)});
      } else {
        // Strided: read spans of whole strides (sequential on disk) and keep each repeat's run.
        const uint64_t per = std::max<uint64_t>(1, chunk_bytes / std::max<uint64_t>(run->stride(), 1));
        for (uint64_t r = 0; r < run->count(); r += per) {
          const uint64_t k = std::min(per, run->count() - r);
          chunks.push_back({run, false, r, k, dest + r * run->length(), k * run->length()});
        }
      }
      dest += n;
    }
  }
  return chunks;
}

Status pread_all(int fd, const std::string& path, uint64_t offset, uint8_t* out, uint64_t bytes) {
  while (bytes > 0) {
    const ssize_t got = ::pread(fd, out, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return Status::errorf("{}: read of {} bytes at offset {} failed: {}", path, bytes, offset,
                            got == 0 ? "end of file" : std::strerror(errno));
    out += got;
    offset += static_cast<uint64_t>(got);
    bytes -= static_cast<uint64_t>(got);
  }
  return Status::ok();
}

class Progress {
 public:
  Progress(std::FILE* out, uint64_t total) : out_(out), total_(total), tty_(out && isatty(fileno(out))) {}
  void add(uint64_t bytes) {
    if (!out_ || total_ == 0) return;
    std::lock_guard lock(mutex_);
    done_ += bytes;
    const int tenth = static_cast<int>(done_ * 10 / total_);
    if (tty_) {
      const int width = 40, filled = static_cast<int>(done_ * width / total_);
      std::fprintf(out_, "\rweights [%s%s] %5.1f%%", std::string(filled, '#').c_str(),
                   std::string(width - filled, ' ').c_str(), 100.0 * done_ / total_);
      std::fflush(out_);
    } else if (tenth > printed_) {
      printed_ = tenth;
      std::fprintf(out_, "weights: %d%% (%.3f of %.3f GB)\n", tenth * 10, done_ / 1e9, total_ / 1e9);
      std::fflush(out_);
    }
  }
  void end(const LoadStats& stats) {
    if (!out_) return;
    std::fprintf(out_, "%sweights: %.3f GB in %.2f s, %.2f GB/s\n", tty_ ? "\n" : "", stats.bytes / 1e9, stats.seconds,
                 stats.gb_per_s());
  }

 private:
  std::FILE* out_;
  uint64_t total_, done_ = 0;
  bool tty_;
  int printed_ = 0;
  std::mutex mutex_;
};

}  // namespace

StoredLayout plan_stored_layout(const fb::Program& p, const std::vector<int64_t>& indices) {
  StoredLayout layout;
  const auto& weights = *p.weights();
  layout.offset.assign(weights.size(), -1);
  layout.bytes.assign(weights.size(), 0);
  std::unordered_map<std::string, uint32_t> by_name;
  for (uint32_t i = 0; i < weights.size(); ++i) by_name[weights.Get(i)->name()->str()] = i;
  auto add = [&](uint32_t i) {
    if (layout.offset[i] >= 0 || weights.Get(i)->host_resident()) return;
    uint64_t bytes = 0;
    for (const fb::ByteRun* run : *weights.Get(i)->runs()) bytes += run->length() * run->count();
    layout.offset[i] = static_cast<int64_t>(layout.total);
    layout.bytes[i] = bytes;
    layout.total += align(bytes);
  };
  for (int64_t index : indices) {
    if (index < 0 || index >= static_cast<int64_t>(weights.size())) continue;
    add(static_cast<uint32_t>(index));
    if (auto it = by_name.find(scale_name(weights.Get(index)->name()->str())); it != by_name.end()) add(it->second);
  }
  return layout;
}

Status HostSink::begin(int workers, size_t chunk_bytes) {
  staging_.assign(static_cast<size_t>(workers) * 2, std::vector<uint8_t>(chunk_bytes));
  return Status::ok();
}

Status HostSink::submit(int worker, int which, uint64_t offset, size_t bytes) {
  if (offset > region_.size() || bytes > region_.size() - offset)
    return Status::errorf("host sink: {} bytes at {} outside a {}-byte region", bytes, offset, region_.size());
  std::memcpy(region_.data() + offset, staging_[worker * 2 + which].data(), bytes);
  return Status::ok();
}

Result<LoadStats> load_stored_weights(const fb::Program& p, const std::string& model_dir, const StoredLayout& layout,
                                      ByteSink& sink, const LoadOptions& options) {
  // Checks before the first byte: the pack (headers only) and every shard file's size.
  DSV41_ASSIGN_OR_RETURN(PackIndex pack, PackIndex::open(model_dir));
  if (pack.digest() != p.pack_digest())
    return Status::errorf("{}: pack digest {:016x} differs from the program's pack_digest {:016x}; re-plan for this "
                          "folder", model_dir, pack.digest(), p.pack_digest());
  std::vector<int> fds;
  std::vector<std::string> paths;
  auto close_all = [&] {
    for (int fd : fds) ::close(fd);
  };
  for (const fb::Shard* shard : *p.shards()) {
    const std::string path = (std::filesystem::path(model_dir) / shard->file_name()->str()).string();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st{};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      close_all();
      return Status::errorf("{}: cannot open: {}", path, why);
    }
    fds.push_back(fd);
    paths.push_back(path);
    const uint64_t expected = 8 + shard->header_length() + shard->data_bytes();
    if (static_cast<uint64_t>(st.st_size) != expected) {
      close_all();
      return Status::errorf("{}: {} bytes, the program's shard says {} (8 + header {} + data {}): truncated or another "
                            "file", path, st.st_size, expected, shard->header_length(), shard->data_bytes());
    }
  }

  const uint64_t chunk_bytes = std::max<uint64_t>(options.chunk_bytes, 4096);
  const std::vector<Chunk> chunks = make_chunks(p, layout, chunk_bytes);
  std::vector<SinkChunk> pieces;
  for (const Chunk& c : chunks) pieces.push_back({c.dest, c.bytes});
  auto produce = [&](size_t i, uint8_t* buffer) -> Status {
    const Chunk& c = chunks[i];
    const fb::ByteRun& run = *c.run;
    if (c.contiguous) return pread_all(fds[run.shard()], paths[run.shard()], run.offset() + c.first, buffer, c.bytes);
    // Strided: the whole strides (sequential on disk), then each repeat's run kept.
    thread_local std::vector<uint8_t> span;
    const uint64_t span_bytes = (c.repeats - 1) * run.stride() + run.length();
    span.resize(span_bytes);
    DSV41_TRY(pread_all(fds[run.shard()], paths[run.shard()], run.offset() + c.first * run.stride(), span.data(), span_bytes));
    for (uint64_t k = 0; k < c.repeats; ++k) std::memcpy(buffer + k * run.length(), span.data() + k * run.stride(), run.length());
    return Status::ok();
  };
  LoadOptions chunked = options;
  chunked.chunk_bytes = chunk_bytes;
  auto stats = pump_chunks(pieces, produce, sink, chunked);
  close_all();
  return stats;
}

Result<LoadStats> pump_chunks(const std::vector<SinkChunk>& chunks, const ChunkProducer& produce, ByteSink& sink,
                              const LoadOptions& options) {
  const int threads = std::max(1, options.threads);
  uint64_t total = 0;
  for (const SinkChunk& c : chunks) {
    if (c.bytes > options.chunk_bytes)
      return Status::errorf("chunk of {} bytes exceeds the staging size {}", c.bytes, options.chunk_bytes);
    total += c.bytes;
  }
  DSV41_TRY(sink.begin(threads, options.chunk_bytes));
  Progress progress(options.progress, total);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  Status first_error;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&](int w) {
    int which = 0;
    for (size_t i = next++; i < chunks.size() && !failed; i = next++, which ^= 1) {
      Status status;
      auto buffer = sink.acquire(w, which);
      status = buffer.is_ok() ? produce(i, *buffer) : buffer.status();
      if (status.is_ok()) status = sink.submit(w, which, chunks[i].dest, chunks[i].bytes);
      if (!status.is_ok()) {
        std::lock_guard lock(error_mutex);
        if (!failed.exchange(true)) first_error = status;
        return;
      }
      progress.add(chunks[i].bytes);
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w) pool.emplace_back(worker, w);
  for (std::thread& t : pool) t.join();
  if (failed) return first_error;
  DSV41_TRY(sink.finish());
  LoadStats stats;
  stats.bytes = total;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.end(stats);
  return stats;
}

}  // namespace dsv41::gpu
