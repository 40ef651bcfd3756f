// runtime/gpu/weight_loader.h — a rank's stored weight bytes (weights and their scales, as the pack
// holds them) read from the original shards by the program's byte runs, with parallel positional
// reads into staging buffers that a sink copies on (to the device: pinned buffers, async copies),
// so reading and copying overlap. What lands is what the ledger counts; nothing is dequantized.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "schemas/program_generated.h"

namespace dsv41::gpu {

// Where each stored tensor lands in one region: offset[i] for program tensor i (a weight or a
// scale), -1 when not loaded; each tensor 256-byte aligned.
struct StoredLayout {
  std::vector<int64_t> offset;
  std::vector<uint64_t> bytes;  // per tensor: Σ run length × count
  uint64_t total = 0;
};

// The weights at `indices` (as calls name them) plus the scale of each quantized one, host-resident
// tensors left out.
StoredLayout plan_stored_layout(const fb::Program& program, const std::vector<int64_t>& indices);

// Receives the bytes. Each worker alternates between two staging buffers of `chunk_bytes`.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status begin(int workers, size_t chunk_bytes) = 0;
  // Staging buffer `which` (0 or 1) of `worker`, once what was last submitted from it is copied.
  virtual Result<uint8_t*> acquire(int worker, int which) = 0;
  // Copies `bytes` from that buffer to region offset `offset` (may return before the copy is done).
  virtual Status submit(int worker, int which, uint64_t offset, size_t bytes) = 0;
  // Every copy done.
  virtual Status finish() = 0;
};

// Host memory (tests, the CPU side).
class HostSink final : public ByteSink {
 public:
  explicit HostSink(uint64_t total) : region_(total, 0) {}
  Status begin(int workers, size_t chunk_bytes) override;
  Result<uint8_t*> acquire(int worker, int which) override { return staging_[worker * 2 + which].data(); }
  Status submit(int worker, int which, uint64_t offset, size_t bytes) override;
  Status finish() override { return Status::ok(); }
  const std::vector<uint8_t>& region() const { return region_; }

 private:
  std::vector<uint8_t> region_;
  std::vector<std::vector<uint8_t>> staging_;
};

struct LoadOptions {
  int threads = 8;                     // parallel readers
  size_t chunk_bytes = size_t{16} << 20;
  std::FILE* progress = nullptr;       // a bar on a terminal, else a line per 10%; nullptr: quiet
};

struct LoadStats {
  uint64_t bytes = 0;
  double seconds = 0;
  double gb_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
};

// One piece of the region: `bytes` bytes at region offset `dest`, at most the chunk size.
struct SinkChunk {
  uint64_t dest = 0, bytes = 0;
};
// Fills `buffer` (chunk.bytes) with chunk `index`'s bytes; called from the reader threads.
using ChunkProducer = std::function<Status(size_t index, uint8_t* buffer)>;

// Runs `produce` for every chunk on options.threads threads, each alternating between its two
// staging buffers of the sink, with the progress report; the first failure stops every thread.
Result<LoadStats> pump_chunks(const std::vector<SinkChunk>& chunks, const ChunkProducer& produce, ByteSink& sink,
                              const LoadOptions& options);

// Checks first (before any byte is read) that each shard file of `model_dir` has the size the
// program's shards say and that the folder's pack digest is the program's; then reads every run of
// the layout's tensors into `sink`.
Result<LoadStats> load_stored_weights(const fb::Program& program, const std::string& model_dir,
                                      const StoredLayout& layout, ByteSink& sink, const LoadOptions& options);

}  // namespace dsv41::gpu
