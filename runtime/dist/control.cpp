// runtime/dist/control.cpp — join and agreement, heartbeats, and the fail-fast path that tells every rank the first reason.
#include "runtime/dist/control.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace dsv41::dist {
namespace {

std::vector<uint8_t> verdict(const Status& status) {
  return PayloadWriter().u32(status.is_ok() ? 1 : 0).str(status.is_ok() ? "" : status.message()).take();
}

std::vector<uint8_t> failed_payload(const std::string& reason) { return PayloadWriter().str(reason).take(); }

}  // namespace

std::string rank_reason(int rank, const std::string& message) { return fmt::format("rank {}: {}", rank, message); }

Result<std::unique_ptr<Control>> Control::join(const ControlOptions& options, const RankFacts& mine) {
  if (options.world < 1 || options.rank < 0 || options.rank >= options.world)
    return Status::errorf("--rank {}: outside world {} (ranks 0..{})", options.rank, options.world, options.world - 1);
  std::unique_ptr<Control> control(new Control(options));
  control->heartbeat_ = std::thread([c = control.get()] { c->heartbeat_loop(); });
  const Status status = control->leader() ? control->join_as_leader(mine) : control->join_as_follower(mine);
  if (!status.is_ok()) return status;
  return control;
}

Control::~Control() {
  {
    std::lock_guard lock(heartbeat_mutex_);
    stopping_ = true;
  }
  heartbeat_wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  // Every reader ends before any link is freed: a reader telling this control of a failure walks all links.
  for (Link* link : links()) link->stop_reader();
  links_.clear();
}

Status Control::join_as_leader(const RankFacts& mine) {
  int port = 0;
  DSV41_ASSIGN_OR_RETURN(Socket listener, listen_on(options_.master, &port));
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
  std::map<int, RankFacts> joined;
  Status refusal;
  while (static_cast<int>(joined.size()) < options_.world - 1) {
    std::string address;
    auto socket = accept_before(listener, deadline, &address);
    if (!socket.is_ok()) {
      std::vector<int> missing;
      for (int r = 1; r < options_.world; ++r)
        if (!joined.count(r)) missing.push_back(r);
      refusal = Status::errorf("--master {}: ranks {} did not join within {} ms ({} of {} followers joined)",
                               options_.master.text(), fmt::join(missing, ", "), options_.connect_timeout_ms,
                               joined.size(), options_.world - 1);
      break;
    }
    auto link = std::make_unique<Link>(std::move(socket).value(), -1, "peer " + address, options_.watchdog_ms, observer());
    auto hello = link->read_frame_now();
    if (hello.is_ok() && hello->type != FrameType::Hello)
      hello = Status::errorf("peer {}: first frame {}, expected Hello", address,
                             frame_type_name(static_cast<uint16_t>(hello->type)));
    if (!hello.is_ok()) {
      refusal = hello.status();
      break;
    }
    auto facts = decode_facts(hello->payload, "peer " + address);
    if (!facts.is_ok()) {
      refusal = facts.status();
      break;
    }
    if (facts->rank < 1 || facts->rank >= options_.world || joined.count(facts->rank)) {
      refusal = Status::errorf("peer {}: says it is rank {}, but world {} needs ranks 1..{} once each{}", address,
                               facts->rank, options_.world, options_.world - 1,
                               joined.count(facts->rank) ? " (that rank already joined)" : "");
      break;
    }
    link->set_peer(facts->rank, fmt::format("rank {} ({})", facts->rank, address));
    joined[facts->rank] = facts.value();
    link->start();
    std::lock_guard lock(links_mutex_);  // from now on it heartbeats: joined followers wait for the rest
    links_.push_back(std::move(link));
  }
  {
    std::lock_guard lock(links_mutex_);
    std::sort(links_.begin(), links_.end(), [](const auto& a, const auto& b) { return a->peer_rank() < b->peer_rank(); });
  }
  if (refusal.is_ok()) {
    std::vector<RankFacts> all = {mine};
    for (const auto& [rank, facts] : joined) all.push_back(facts);
    refusal = check_agreement(all);
  }
  for (Link* link : links()) {
    if (!refusal.is_ok()) link->expect_close();
    (void)link->send(FrameType::Agreement, verdict(refusal));
  }
  return refusal;
}

Status Control::join_as_follower(const RankFacts& mine) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
  DSV41_ASSIGN_OR_RETURN(Socket socket, connect_before(options_.master, deadline));
  auto leader = std::make_unique<Link>(std::move(socket), 0, fmt::format("rank 0 ({})", options_.master.text()),
                                     options_.watchdog_ms, observer());
  DSV41_TRY(leader->send(FrameType::Hello, encode_facts(mine)));
  leader->start();
  {
    std::lock_guard lock(links_mutex_);
    links_.push_back(std::move(leader));
  }
  // Rank 0 answers once every follower joined: it heartbeats meanwhile, so the watchdog holds.
  DSV41_ASSIGN_OR_RETURN(Frame frame, link(0).receive(FrameType::Agreement));
  PayloadReader r(frame.payload, link(0).peer() + ": Agreement");
  const bool accepted = r.u32("accepted") == 1;
  const std::string message = r.str("message");
  DSV41_TRY(r.finish());
  if (!accepted) {
    link(0).expect_close();
    return Status::error(message);
  }
  return Status::ok();
}

std::vector<Link*> Control::links() const {
  std::lock_guard lock(links_mutex_);
  std::vector<Link*> out;
  for (const auto& link : links_) out.push_back(link.get());
  return out;
}

Link& Control::link(int rank) {
  const size_t index = leader() ? static_cast<size_t>(rank - 1) : 0;
  std::lock_guard lock(links_mutex_);
  DSV41_CHECK(index < links_.size() && links_[index]->peer_rank() == rank);
  return *links_[index];
}

Status Control::broadcast(FrameType type, const std::vector<uint8_t>& payload) {
  DSV41_CHECK(leader());
  for (Link* link : links()) DSV41_TRY(link->send(type, payload));
  return Status::ok();
}

Result<std::vector<uint8_t>> Control::share_comm_id(const std::vector<uint8_t>& id) {
  if (leader()) {
    DSV41_TRY(broadcast(FrameType::CommId, PayloadWriter().raw(id).take()));
    return id;
  }
  DSV41_ASSIGN_OR_RETURN(Frame frame, link(0).receive(FrameType::CommId));
  PayloadReader r(frame.payload, link(0).peer() + ": CommId");
  std::vector<uint8_t> theirs = r.raw("id");
  DSV41_TRY(r.finish());
  if (theirs.size() != id.size())
    return Status::errorf("{}: CommId of {} bytes, expected {}", link(0).peer(), theirs.size(), id.size());
  return theirs;
}

Result<Frame> Control::next_command() {
  DSV41_CHECK(!leader());
  return link(0).receive_any();
}

void Control::heartbeat_loop() {
  std::unique_lock lock(heartbeat_mutex_);
  while (!heartbeat_wake_.wait_for(lock, std::chrono::milliseconds(options_.heartbeat_ms), [&] { return stopping_; }))
    for (Link* link : links()) (void)link->send(FrameType::Heartbeat, {});  // a dead link shows on its reader
}

void Control::on_link_failure(int peer_rank, const std::string& reason) {
  {
    std::lock_guard lock(failure_mutex_);
    if (failed_) return;
    failed_ = true;
  }
  // Rank 0 relays the first reason, so every follower prints the same one.
  if (leader())
    for (Link* link : links())
      if (link->peer_rank() != peer_rank) (void)link->send(FrameType::Failed, failed_payload(reason));
  if (options_.on_peer_failure) options_.on_peer_failure(reason);
  abort_all(reason);
}

void Control::fail(const std::string& reason) {
  {
    std::lock_guard lock(failure_mutex_);
    if (failed_) return;
    failed_ = true;
  }
  for (Link* link : links()) {
    (void)link->send(FrameType::Failed, failed_payload(reason));
    link->expect_close();
  }
  abort_all(reason);
}

void Control::abort_all(const std::string& reason) {
  for (Link* link : links()) link->abort(reason);
}

Status Control::stop() {
  if (!leader()) {
    link(0).expect_close();
    return Status::ok();
  }
  for (Link* link : links()) link->expect_close();
  DSV41_TRY(broadcast(FrameType::Stop, {}));
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  for (Link* link : links())
    if (!link->wait_closed(deadline))
      return Status::errorf("{}: did not close within 2 s of the stop", link->peer());
  return Status::ok();
}

}  // namespace dsv41::dist
