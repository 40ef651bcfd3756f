// tests/text/tokenize_cli_test.cpp — `dsv41-rt tokenize` encodes and decodes, and refuses bad input by name.
#include <gtest/gtest.h>

#include "tests/support/test_support.h"

namespace dsv41::test {
namespace {

CommandResult tokenize(const std::string& args) {
  return run_command(shell_quote(DSV41RT_PATH) + " tokenize --tokenizer " +
                     shell_quote(std::string(DSV41_SOURCE_DIR) + "/fixtures/dsv41-release/tokenizer.json") + " " + args);
}

TEST(TokenizeCli, EncodesAndDecodes) {
  // The chat-token vector of the serving reference (§1).
  const CommandResult encoded = tokenize(shell_quote("--text=<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>"));
  ASSERT_EQ(encoded.exit_code, 0) << encoded.describe();
  EXPECT_EQ(encoded.out, "128803,30594,128804,128821,36101,128822,7624,1\n");
  const CommandResult decoded = tokenize("--ids 128803,30594,128804,128821,36101,128822,7624,1");
  ASSERT_EQ(decoded.exit_code, 0) << decoded.describe();
  EXPECT_EQ(decoded.out, "<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>\n");
}

TEST(TokenizeCli, RefusesBadIdsAndMissingInput) {
  const CommandResult bad = tokenize("--ids 1,x,3");
  EXPECT_EQ(bad.exit_code, 1) << bad.describe();
  EXPECT_NE(bad.err.find("--ids \"1,x,3\": item \"x\" is not a token id (0..2147483647, comma separated"),
            std::string::npos) << bad.describe();
  // Empty items, signs and values past the limit are refused the same way (one parser: runtime/cli/id_list.h).
  for (const char* list : {"1,,3", "1,", "-1", "+2", "2147483648"}) {
    const CommandResult refused = tokenize(std::string("--ids=") + list);
    EXPECT_EQ(refused.exit_code, 1) << refused.describe();
    EXPECT_NE(refused.err.find("is not a token id"), std::string::npos) << list << ": " << refused.describe();
  }
  const CommandResult outside = tokenize("--ids 129280");
  EXPECT_EQ(outside.exit_code, 1) << outside.describe();
  EXPECT_NE(outside.err.find("id 129280 is outside the vocabulary"), std::string::npos) << outside.describe();
  const CommandResult none = tokenize("");
  EXPECT_EQ(none.exit_code, 1) << none.describe();
  EXPECT_NE(none.err.find("give --text or --ids"), std::string::npos) << none.describe();
}

}  // namespace
}  // namespace dsv41::test
