// runtime/dist/socket.h — TCP for the control connection: listen, accept and connect with deadlines, whole sends and receives.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/status.h"

namespace dsv41::dist {

using Clock = std::chrono::steady_clock;

struct HostPort {
  std::string host;
  int port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};

// "HOST:PORT" with PORT in 1..65535 (the last colon splits, so "[::1]:80" keeps its brackets off).
Result<HostPort> parse_host_port(const std::string& text, const std::string& what);

// An owned file descriptor of a TCP socket; closed on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Ends our sending side (the peer reads end-of-stream after the bytes already sent).
  void shutdown_send();
  void close();

 private:
  int fd_ = -1;
};

// Listens on host:port (port 0: an ephemeral port; `bound_port` receives the port chosen).
Result<Socket> listen_on(const HostPort& address, int* bound_port = nullptr);
// Accepts one connection before `deadline`; `peer` receives "IP:PORT".
Result<Socket> accept_before(const Socket& listener, Clock::time_point deadline, std::string* peer);
// Connects to `address`, retrying every 50 ms (rank 0 may not listen yet) until `deadline`.
Result<Socket> connect_before(const HostPort& address, Clock::time_point deadline);
// A port free on the loopback now (bound, read, released): for launchers and tests that pick --master.
Result<int> pick_free_port();

// Sends every byte (a peer that closed: an error naming `peer`).
Status send_all(const Socket& socket, const void* data, size_t size, const std::string& peer);

}  // namespace dsv41::dist
