// runtime/cli/tokenize_command.cpp — `dsv41-rt tokenize --tokenizer FILE (--text T | --ids a,b,...)`.
#include "runtime/cli/tokenize_command.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "runtime/cli/id_list.h"
#include "runtime/text/tokenizer.h"

namespace dsv41::cli {
namespace {

struct TokenizeFlags {
  std::string tokenizer, text, ids;
  bool has_text = false;
};

Status run_tokenize(const TokenizeFlags& f) {
  std::vector<int64_t> listed;  // parsed before the tokenizer loads: a malformed list fails at once
  if (!f.has_text) {
    DSV41_ASSIGN_OR_RETURN(listed, parse_id_list("--ids", f.ids, "a token id", INT32_MAX));
  }
  DSV41_ASSIGN_OR_RETURN(const text::Tokenizer tokenizer, text::Tokenizer::load(f.tokenizer));
  if (f.has_text) {
    std::printf("%s\n", fmt::format("{}", fmt::join(tokenizer.encode(f.text), ",")).c_str());
    return Status::ok();
  }
  for (const int64_t id : listed) {
    if (id >= tokenizer.vocab_size()) {
      return Status::errorf("--ids: id {} is outside the vocabulary of {} ({} ids)", id, f.tokenizer,
                            tokenizer.vocab_size());
    }
  }
  const std::string text = tokenizer.decode(std::vector<int32_t>(listed.begin(), listed.end()));
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::printf("\n");
  return Status::ok();
}

}  // namespace

Runner add_tokenize_command(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Encodes text to token ids (printed comma separated; added tokens such as <｜User｜> are matched,\n"
      "no BOS is added) or decodes ids to text, with a HF tokenizer.json (byte-level BPE).\n\n"
      "Example:\n"
      "  dsv41-rt tokenize --tokenizer fixtures/dsv41-release/tokenizer.json --text 'Hello world'\n"
      "  dsv41-rt tokenize --tokenizer fixtures/dsv41-release/tokenizer.json --ids 19923,2058");
  cmd->add_option("--tokenizer", f->tokenizer, "tokenizer.json")->required()->check(CLI::ExistingFile);
  auto* text = cmd->add_option("--text", f->text, "text to encode");
  auto* ids = cmd->add_option("--ids", f->ids, "comma-separated ids to decode");
  text->excludes(ids);
  ids->excludes(text);
  cmd->callback([f, text] { f->has_text = text->count() > 0; });
  return [f, text, ids]() -> Status {
    if (text->count() == 0 && ids->count() == 0) return Status::error("tokenize: give --text or --ids");
    return run_tokenize(*f);
  };
}

}  // namespace dsv41::cli
