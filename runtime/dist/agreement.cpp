// runtime/dist/agreement.cpp — rank facts from a program, their wire form, and the comparison that lists every rank's value.
#include "runtime/dist/agreement.h"

#include <functional>

#include <fmt/ranges.h>

#include "common/hashing.h"
#include "runtime/dist/frame.h"

namespace dsv41::dist {

std::string build_version() {
  return fmt::format("dsv41-rt program format {}, control protocol {}", kProgramFormatVersion, kProtocolVersion);
}

RankFacts facts_of(const ProgramFile& program, const std::string& arch) {
  const fb::Program& p = program.program();
  RankFacts f;
  f.rank = p.rank();
  f.world = p.world();
  f.program_digest = hash_bytes(program.bytes().data(), program.bytes().size());
  f.agreement_digest = p.agreement_digest();
  f.config_digest = p.config_digest();
  f.pack_digest = p.pack_digest();
  if (const fb::Settings* s = p.settings()) {
    auto list = [](const flatbuffers::Vector<int64_t>* v) {
      return v ? fmt::format("[{}]", fmt::join(v->begin(), v->end(), ", ")) : std::string("[]");
    };
    f.settings = fmt::format("context {}, slots {}, prefill {}, decode {}, activations {}", s->context(), s->slots(),
                             list(s->prefill_rows()), list(s->decode_rows()), fb::EnumNameDType(s->activations()));
  }
  f.target = p.target() ? p.target()->str() : "";
  f.arch = arch;
  f.build = build_version();
  return f;
}

std::vector<uint8_t> encode_facts(const RankFacts& f) {
  PayloadWriter w;
  w.u32(static_cast<uint32_t>(f.rank)).u32(static_cast<uint32_t>(f.world));
  w.u64(f.program_digest).u64(f.agreement_digest).u64(f.config_digest).u64(f.pack_digest);
  w.str(f.settings).str(f.target).str(f.arch).str(f.build);
  return w.take();
}

Result<RankFacts> decode_facts(const std::vector<uint8_t>& payload, const std::string& peer) {
  PayloadReader r(payload, peer + ": Hello");
  RankFacts f;
  f.rank = static_cast<int32_t>(r.u32("rank"));
  f.world = static_cast<int32_t>(r.u32("world"));
  f.program_digest = r.u64("program_digest");
  f.agreement_digest = r.u64("agreement_digest");
  f.config_digest = r.u64("config_digest");
  f.pack_digest = r.u64("pack_digest");
  f.settings = r.str("settings");
  f.target = r.str("target");
  f.arch = r.str("arch");
  f.build = r.str("build");
  DSV41_TRY(r.finish());
  return f;
}

Status check_agreement(const std::vector<RankFacts>& facts) {
  using Field = std::pair<const char*, std::function<std::string(const RankFacts&)>>;
  const std::vector<Field> fields = {
      {"world", [](const RankFacts& f) { return std::to_string(f.world); }},
      {"agreement_digest", [](const RankFacts& f) { return hex64(f.agreement_digest); }},
      {"config_digest", [](const RankFacts& f) { return hex64(f.config_digest); }},
      {"pack_digest", [](const RankFacts& f) { return hex64(f.pack_digest); }},
      {"settings", [](const RankFacts& f) { return "(" + f.settings + ")"; }},
      {"target", [](const RankFacts& f) { return f.target; }},
      {"arch", [](const RankFacts& f) { return f.arch; }},
      {"build", [](const RankFacts& f) { return "(" + f.build + ")"; }},
  };
  std::vector<std::string> differences;
  for (const auto& [name, value] : fields) {
    bool same = true;
    for (const RankFacts& f : facts) same = same && value(f) == value(facts[0]);
    if (same) continue;
    std::vector<std::string> each;
    for (size_t i = 0; i < facts.size(); ++i) each.push_back(fmt::format("rank {} {}", i, value(facts[i])));
    differences.push_back(fmt::format("{}: {}", name, fmt::join(each, ", ")));
  }
  if (differences.empty()) return Status::ok();
  std::vector<std::string> programs;
  for (size_t i = 0; i < facts.size(); ++i) programs.push_back(fmt::format("rank {} {}", i, hex64(facts[i].program_digest)));
  return Status::errorf("ranks disagree at start-up: {} (program digests: {}); plan every rank of a world together "
                        "and run one build on every host",
                        fmt::join(differences, "; "), fmt::join(programs, ", "));
}

}  // namespace dsv41::dist
