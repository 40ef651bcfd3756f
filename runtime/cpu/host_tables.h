// runtime/cpu/host_tables.h — host-resident tables (Engram) memory-mapped read-only from the shards, never copied.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/cpu/op_context.h"
#include "schemas/program_generated.h"

namespace dsv41::cpu {

// The tables stay in their stored format (FP8 rows) and in the page cache: every rank process of a
// host that maps the same shard shares one copy, so a 101 GB table costs its bytes once per host.
// A call's gather reads the rows it needs through the mapping.
class HostTables {
 public:
  HostTables() = default;
  HostTables(HostTables&& other) noexcept;
  HostTables& operator=(HostTables&& other) noexcept;
  HostTables(const HostTables&) = delete;
  HostTables& operator=(const HostTables&) = delete;
  ~HostTables();

  // Maps the program weights at `indices` (host-resident FP8-row tables) and their scales. Each must
  // be one contiguous run whose bytes lie inside its shard file and match its shape.
  static Result<HostTables> map(const fb::Program& program, const std::string& model_dir,
                                const std::vector<int64_t>& indices);
  // The table at a program weight index; codes null when it was not mapped.
  HostTableView view(int64_t index) const;
  uint64_t mapped_bytes() const;

 private:
  struct Mapping {
    void* base = nullptr;
    size_t length = 0;
  };
  struct Table {
    int64_t index = -1;
    HostTableView view;
  };
  std::vector<Mapping> mappings_;
  std::vector<Table> tables_;
};

}  // namespace dsv41::cpu
