// runtime/dist/link.h — one control connection to one peer: a reader thread with a watchdog, and a queue of the frames that matter.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/dist/frame.h"
#include "runtime/dist/socket.h"

namespace dsv41::dist {

// Told once per link, on its reader thread, when the peer vanished, went silent, sent garbage or
// reported its own failure (a Failed frame): before any waiter on the link wakes, so the observer's
// reaction (forward the reason, end the process) comes first.
class LinkObserver {
 public:
  virtual ~LinkObserver() = default;
  virtual void on_link_failure(int peer_rank, const std::string& reason) = 0;
};

class Link {
 public:
  // `peer` names the other end in every message ("rank 1 (127.0.0.1:40112)"); `watchdog_ms`: the
  // longest silence (no byte, heartbeats included) taken for a live peer.
  Link(Socket socket, int peer_rank, std::string peer, int watchdog_ms, LinkObserver* observer);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  int peer_rank() const { return peer_rank_; }
  const std::string& peer() const { return peer_; }
  void set_peer(int peer_rank, std::string peer);

  // Reads one frame on the calling thread (the handshake, before start()).
  Result<Frame> read_frame_now();
  // Starts the reader thread: from then on frames arrive through receive().
  void start();

  Status send(FrameType type, const std::vector<uint8_t>& payload);
  // The next frame other than a heartbeat; a frame of another type is an error naming both types.
  Result<Frame> receive(FrameType expected);
  Result<Frame> receive_any();

  // A stop was sent or received: the peer's end-of-stream is expected, not a failure.
  void expect_close() { closing_ = true; }
  // Waits until the peer closed (after expect_close), up to `deadline`.
  bool wait_closed(Clock::time_point deadline);
  // Wakes every waiter with `reason` (the world failed elsewhere); the observer is not told.
  void abort(const std::string& reason);
  void shutdown_send() { socket_.shutdown_send(); }
  // Ends the reader thread (the observer is not told of anything after this returns).
  void stop_reader();

 private:
  void read_loop();
  Status read_exact(uint8_t* out, size_t n);
  void fail(const std::string& reason, bool tell_observer);

  Socket socket_;
  int peer_rank_;
  std::string peer_;
  const int watchdog_ms_;
  LinkObserver* observer_;
  std::mutex send_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Frame> frames_;
  bool failed_ = false, closed_ = false;
  std::string reason_;
  std::atomic<bool> stopping_{false}, closing_{false};
  Clock::time_point last_heard_;
  std::thread reader_;
};

}  // namespace dsv41::dist
