// tests/draft/served_requests.h — serves a batch of requests through the scheduler with or without drafting and
// collects each one's tokens and the drafting metrics (the CPU and CUDA drafted-serving tests share it).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/dspark_drafter.h"
#include "runtime/serve/scheduler.h"
#include "runtime/world.h"

namespace dsv41::test {

struct Served {
  std::vector<std::vector<int32_t>> tokens;  // per request, in submission order
  uint64_t rounds = 0, drafted = 0, accepted = 0;
  std::string metrics;
};

// Request i's prompt: 5-7 ids, distinct per request.
inline std::vector<int32_t> served_prompt(int i) {
  std::vector<int32_t> p;
  for (int t = 0; t < 5 + i % 3; ++t) p.push_back(20 + 7 * i + t);
  return p;
}

// Serves `count` requests at once (all submitted before the first round ends; request i asks 6 + i % 3
// tokens, eos ignored, seed 1000 + i) with up to `drafts` drafts per round from `drafter` (empty: the
// programs' DSpark phases when `dspark` is enabled, else prompt lookup), on a world shared by every run
// (a new request resets its slot). `sampled`: temperature 0.9, top-k 40; else greedy.
inline Served serve_requests(World& world, int count, int64_t drafts, const Drafter& drafter, bool sampled,
                             const DsparkPlan& dspark = {}) {
  Served out;
  serve::Metrics metrics;
  serve::SchedulerOptions options;
  options.draft_tokens = drafts;
  options.drafter = drafter;
  options.dspark = dspark;
  std::vector<std::shared_ptr<serve::RequestStream>> streams;
  {
    serve::Scheduler scheduler(world, metrics, options);
    for (int i = 0; i < count; ++i) {
      serve::GenerationRequest r;
      r.prompt = served_prompt(i);
      r.max_tokens = 6 + i % 3;
      r.ignore_eos = true;
      r.sampling.temperature = sampled ? 0.9f : 0.0f;
      r.sampling.top_k = sampled ? 40 : 0;
      r.sampling.seed = 1000 + i;
      auto submitted = scheduler.submit(r);
      EXPECT_TRUE(std::holds_alternative<std::shared_ptr<serve::RequestStream>>(submitted));
      if (auto* s = std::get_if<std::shared_ptr<serve::RequestStream>>(&submitted)) streams.push_back(*s);
    }
    for (const auto& stream : streams) {
      std::vector<int32_t> ids;
      std::optional<serve::Finish> finished;
      while (!finished)
        for (const auto& t : stream->wait(std::chrono::milliseconds(200), finished)) ids.push_back(t.id);
      EXPECT_EQ(finished->reason, "length") << finished->error;
      out.tokens.push_back(ids);
    }
  }
  out.rounds = metrics.draft_rounds, out.drafted = metrics.drafted_tokens, out.accepted = metrics.accepted_tokens;
  out.metrics = metrics.render();
  return out;
}

}  // namespace dsv41::test
