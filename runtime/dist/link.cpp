// runtime/dist/link.cpp — frames in and out of one connection; silence, end-of-stream and garbage become one failure reason.
#include "runtime/dist/link.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace dsv41::dist {

Link::Link(Socket socket, int peer_rank, std::string peer, int watchdog_ms, LinkObserver* observer)
    : socket_(std::move(socket)), peer_rank_(peer_rank), peer_(std::move(peer)), watchdog_ms_(watchdog_ms),
      observer_(observer), last_heard_(Clock::now()) {}

Link::~Link() { stop_reader(); }

void Link::stop_reader() {
  closing_ = true;
  stopping_ = true;  // the reader polls in short steps and sees this within one
  if (reader_.joinable()) reader_.join();
}

void Link::set_peer(int peer_rank, std::string peer) {
  peer_rank_ = peer_rank;
  peer_ = std::move(peer);
}

void Link::start() { reader_ = std::thread([this] { read_loop(); }); }

Status Link::read_exact(uint8_t* out, size_t n) {
  while (n > 0) {
    if (stopping_) return Status::errorf("{}: link closed locally", peer_);
    pollfd p{socket_.fd(), POLLIN, 0};
    const int rc = ::poll(&p, 1, 50);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Status::errorf("{}: poll: {}", peer_, std::strerror(errno));
    if (rc == 0) {
      const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_heard_).count();
      if (silent > watchdog_ms_)
        return Status::errorf("{}: nothing received for {} ms (watchdog limit {} ms): the rank hangs or the network "
                              "is down", peer_, silent, watchdog_ms_);
      continue;
    }
    const ssize_t got = ::recv(socket_.fd(), out, n, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got == 0) return Status::errorf("{}: connection closed without a stop (the process ended or was killed)", peer_);
    // A peer that dies with bytes unread resets the connection instead of closing it: the same event.
    if (got < 0 && errno == ECONNRESET)
      return Status::errorf("{}: connection closed without a stop (the process ended or was killed; reset)", peer_);
    if (got < 0) return Status::errorf("{}: connection lost: {}", peer_, std::strerror(errno));
    last_heard_ = Clock::now();
    out += got;
    n -= static_cast<size_t>(got);
  }
  return Status::ok();
}

Result<Frame> Link::read_frame_now() {
  uint8_t header[kFrameHeaderBytes];
  DSV41_TRY(read_exact(header, sizeof header));
  DSV41_ASSIGN_OR_RETURN(FrameHeader h, decode_header(header, peer_));
  Frame frame;
  frame.type = h.type;
  frame.payload.resize(h.length);
  DSV41_TRY(read_exact(frame.payload.data(), h.length));
  return frame;
}

void Link::read_loop() {
  for (;;) {
    Result<Frame> frame = read_frame_now();
    if (!frame.is_ok()) {
      if (stopping_) return;
      // End-of-stream after a stop is the orderly close.
      if (closing_) {
        std::lock_guard lock(mutex_);
        closed_ = true;
        wake_.notify_all();
        return;
      }
      fail(frame.status().message(), true);
      return;
    }
    if (frame->type == FrameType::Heartbeat) continue;
    if (frame->type == FrameType::Failed) {
      PayloadReader reader(frame->payload, peer_ + ": Failed frame");
      std::string reason = reader.str("reason");
      if (!reader.finish().is_ok()) reason = reader.finish().message();
      fail(reason, true);
      return;
    }
    // The last frame before an orderly close: a stop, or a refused agreement (rank 0 exits right after
    // sending it, so the end of the stream may arrive before this rank's main thread reads the refusal).
    if (frame->type == FrameType::Stop) closing_ = true;
    if (frame->type == FrameType::Agreement && PayloadReader(frame->payload, peer_ + ": Agreement").u32("accepted") != 1)
      closing_ = true;
    std::lock_guard lock(mutex_);
    frames_.push_back(std::move(frame).value());
    wake_.notify_all();
  }
}

void Link::fail(const std::string& reason, bool tell_observer) {
  {
    std::lock_guard lock(mutex_);
    if (failed_) return;
  }
  // The observer first: a waiter that woke before it could report this as its own error.
  if (tell_observer && observer_ && !closing_) observer_->on_link_failure(peer_rank_, reason);
  std::lock_guard lock(mutex_);
  if (failed_) return;
  failed_ = true;
  reason_ = reason;
  wake_.notify_all();
}

void Link::abort(const std::string& reason) { fail(reason, false); }

Status Link::send(FrameType type, const std::vector<uint8_t>& payload) {
  DSV41_CHECK(payload.size() <= kMaxFramePayload);
  const auto header = encode_header(type, static_cast<uint32_t>(payload.size()));
  std::lock_guard lock(send_mutex_);
  DSV41_TRY(send_all(socket_, header.data(), header.size(), peer_));
  return send_all(socket_, payload.data(), payload.size(), peer_);
}

Result<Frame> Link::receive_any() {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [&] { return !frames_.empty() || failed_ || closed_; });
  if (!frames_.empty()) {
    Frame frame = std::move(frames_.front());
    frames_.pop_front();
    return frame;
  }
  if (failed_) return Status::error(reason_);
  return Status::errorf("{}: connection closed after a stop", peer_);
}

Result<Frame> Link::receive(FrameType expected) {
  DSV41_ASSIGN_OR_RETURN(Frame frame, receive_any());
  if (frame.type != expected)
    return Status::errorf("{}: sent {}, expected {} (ranks out of step: different call lists or a protocol bug)", peer_,
                          frame_type_name(static_cast<uint16_t>(frame.type)),
                          frame_type_name(static_cast<uint16_t>(expected)));
  return frame;
}

bool Link::wait_closed(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  return wake_.wait_until(lock, deadline, [&] { return closed_ || failed_; }) && closed_;
}

}  // namespace dsv41::dist
