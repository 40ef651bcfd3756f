// runtime/dist/control.h — the control connection of a world of rank processes: rank 0 listens, followers join, agree, then follow.
//
// A star: every follower holds one link to rank 0, rank 0 one link to each follower. The links carry
// the start-up agreement, rank 0's commands (each round's plan, generate's or serve's; stop), the
// socket exchange's partials, heartbeats and failure reports. docs/distributed.md.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/dist/agreement.h"
#include "runtime/dist/link.h"

namespace dsv41::dist {

// The exit code of a rank that stops because another rank failed (docs/distributed.md).
constexpr int kExitRankFailed = 3;

struct ControlOptions {
  int rank = 0, world = 1;
  HostPort master;                 // rank 0 listens here; followers connect here
  int connect_timeout_ms = 60000;  // how long followers retry and rank 0 waits for every follower
  int heartbeat_ms = 200;
  int watchdog_ms = 1500;  // silence after which a peer is taken for dead (heartbeat + watchdog < 2 s)
  // Called once, on a reader thread, with the reason when another rank failed (vanished, went silent,
  // sent garbage or reported its own failure); before any waiter wakes. May end the process.
  std::function<void(const std::string& reason)> on_peer_failure;
};

class Control final : private LinkObserver {
 public:
  // Joins the world: rank 0 accepts world - 1 followers, each sending its Hello; rank 0 checks the
  // agreement and sends each the verdict. Refused (or timed out) on every rank with one message.
  static Result<std::unique_ptr<Control>> join(const ControlOptions& options, const RankFacts& mine);
  ~Control() override;

  int rank() const { return options_.rank; }
  int world() const { return options_.world; }
  bool leader() const { return options_.rank == 0; }

  // Rank 0: one frame to every follower.
  Status broadcast(FrameType type, const std::vector<uint8_t>& payload);
  // Rank 0: the link to follower `rank` (1..world-1); a follower: the link to rank 0 (`rank` 0).
  Link& link(int rank);
  // A follower: rank 0's next command (RoundPlan or Stop; follow_rounds refuses any other).
  Result<Frame> next_command();

  // Every rank at the same point after the agreement: rank 0 sends `id` (its communicator's unique
  // id) to every follower and returns it; a follower returns the id rank 0 sent (its next frame must be
  // CommId, of `id.size()` bytes).
  Result<std::vector<uint8_t>> share_comm_id(const std::vector<uint8_t>& id);

  // This rank failed with `reason` (which names it): every peer is told and every waiter wakes.
  void fail(const std::string& reason);
  // Rank 0: Stop to every follower, then waits (up to 2 s) for each to close. A follower: marks the
  // link closing (call after receiving Stop).
  Status stop();

 private:
  explicit Control(const ControlOptions& options) : options_(options) {}
  Status join_as_leader(const RankFacts& mine);
  Status join_as_follower(const RankFacts& mine);
  void on_link_failure(int peer_rank, const std::string& reason) override;
  void abort_all(const std::string& reason);
  void heartbeat_loop();
  LinkObserver* observer() { return this; }

  // The links as they are now (they join one by one while rank 0 waits for the others); a link lives
  // until the destructor, which first stops every thread that uses one.
  std::vector<Link*> links() const;

  ControlOptions options_;
  mutable std::mutex links_mutex_;
  std::vector<std::unique_ptr<Link>> links_;  // rank 0: sorted by rank once all joined; a follower: one link
  std::mutex failure_mutex_;
  bool failed_ = false, stopping_ = false;
  std::thread heartbeat_;
  std::mutex heartbeat_mutex_;
  std::condition_variable heartbeat_wake_;
};

// "rank N: " + message: how a failing rank names itself in the reason the others print.
std::string rank_reason(int rank, const std::string& message);

}  // namespace dsv41::dist
