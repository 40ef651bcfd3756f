// common/program_calls.h — call lists between their in-memory form (common/call_list.h) and the program file.
#pragma once

#include <vector>

#include "common/call_list.h"
#include "common/status.h"
#include "schemas/program_generated.h"

namespace dsv41 {

struct CallLists {
  std::vector<BufferDecl> state_buffers;
  uint64_t state_bytes_per_slot = 0;
  std::vector<Phase> phases;
};

// The buffer a Scratch argument names in `phase`, or a State argument in `lists`; nullptr for any other
// argument or an index out of range (the launch environments' CallEnv::buffer).
const BufferDecl* buffer_of(const CallLists& lists, const Phase& phase, const Arg& a);

// Reads the program's call lists, checking every call against the op set and every index, buffer
// size and offset against its bounds, so backends can trust what they get.
Result<CallLists> read_call_lists(const fb::Program& program);

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>>> write_buffers(
    flatbuffers::FlatBufferBuilder& builder, const std::vector<BufferDecl>& buffers);
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Phase>>> write_phases(
    flatbuffers::FlatBufferBuilder& builder, const std::vector<Phase>& phases);

}  // namespace dsv41
