// tests/cuda/cuda_draft_test.cpp — drafted rounds on the CUDA backend (label gpu; skips without a
// driver): the tiny draft fixture planned with --draft-tokens 5 (longer window rings and compressor
// tails, addressed by their own row counts in window_store, sparse_attention and compress), worlds 1
// and 2 as threads, check mode; with 1..5 drafts a round and planted mistakes (so drafts are both
// kept and rewound, also into an open compressor group) the tokens are serial decoding's on the CPU
// and every step's logits within 1e-3·max|logit| of them.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "runtime/generate.h"
#include "runtime/gpu/cuda_backend.h"
#include "tests/cuda/cuda_test_device.h"
#include "tests/draft/oracle_drafter.h"
#include "tests/runtime/runtime_fixtures.h"

namespace dsv41::cuda_test {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kDrafts = 5;

GenerateOptions draft_options(const fs::path& programs, const fs::path& pack, int64_t drafts) {
  GenerateOptions o;
  o.program_dir = programs.string();
  o.model_dir = pack.string();
  o.prompt = prompt();  // the window wraps, compressed entries outnumber index_topk
  o.max_tokens = 16;
  o.stop_at_eos = false;
  o.draft_tokens = drafts;
  return o;
}

using CudaDraft = DeviceTest;

TEST_F(CudaDraft, DraftedRoundsGiveSerialDecodingsTokens) {
  test::TempDir dir("cuda_draft");
  const fs::path& pack = test::fixture_pack("dsv41-tiny-draft", "release");
  for (int world : {1, 2}) {
    ServingSettings s;
    s.context = 128;
    s.slots = 2;
    s.prefill_rows = {16};
    s.decode_rows = {1, 2, 4, 8};
    s.activations = DType::F32;
    s.draft_tokens = kDrafts;
    const fs::path programs = dir / ("w" + std::to_string(world));
    plan_h200(pack, world, s, programs);
    auto serial = generate(draft_options(programs, pack, 0));  // the CPU backend, no drafts
    ASSERT_TRUE(serial.is_ok()) << serial.status().message();
    std::vector<int32_t> whole = prompt();
    whole.insert(whole.end(), serial->tokens.begin(), serial->tokens.end());
    int64_t accepted = 0, rewound = 0;
    for (int64_t k = 1; k <= kDrafts; ++k) {
      GenerateOptions o = draft_options(programs, pack, k);
      o.drafter = test::oracle_drafter({whole}, 1280);
      gpu::CudaBackendOptions cuda;
      cuda.model_dir = o.model_dir;
      cuda.log = nullptr;
      o.backend = [cuda](int w) -> Result<std::unique_ptr<Backend>> {
        DSV41_ASSIGN_OR_RETURN(auto backend, gpu::CudaBackend::open(w, cuda));
        return std::unique_ptr<Backend>(std::move(backend));
      };
      auto drafted = generate(o);
      ASSERT_TRUE(drafted.is_ok()) << "world " << world << ", " << k << " drafts: " << drafted.status().message();
      EXPECT_EQ(drafted->tokens, serial->tokens) << "world " << world << ", " << k << " drafts";
      ASSERT_EQ(drafted->logits.size(), serial->logits.size());
      double worst = 0;
      for (size_t i = 0; i < serial->logits.size(); ++i) {
        const float scale = max_abs(serial->logits[i]);
        for (size_t v = 0; v < serial->logits[i].size(); ++v)
          worst = std::max(worst, static_cast<double>(std::fabs(drafted->logits[i][v] - serial->logits[i][v]) / scale));
      }
      EXPECT_LE(worst, 1e-3) << "world " << world << ", " << k << " drafts";
      accepted += drafted->drafting.accepted;
      rewound += drafted->drafting.drafted - drafted->drafting.accepted;
      std::printf("[measured] world %d, %lld drafts a round on the GPU: %zu tokens equal to serial decoding on the CPU, "
                  "worst |diff|/max|logit| %.2e, %lld drafted, %lld accepted\n",
                  world, static_cast<long long>(k), drafted->tokens.size(), worst,
                  static_cast<long long>(drafted->drafting.drafted), static_cast<long long>(drafted->drafting.accepted));
    }
    EXPECT_GT(accepted, 0) << "world " << world;
    EXPECT_GT(rewound, 0) << "world " << world;
  }
}

}  // namespace
}  // namespace dsv41::cuda_test
