// runtime/dist/socket.cpp — POSIX sockets behind Status: every failure names the address and errno's text.
#include "runtime/dist/socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace dsv41::dist {
namespace {

std::string errno_text() { return std::strerror(errno); }

Result<addrinfo*> resolve(const HostPort& address, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = getaddrinfo(address.host.empty() ? nullptr : address.host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) return Status::errorf("{}: cannot resolve: {}", address.text(), gai_strerror(rc));
  return found;
}

void tune(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // frames are small and latency-bound
}

std::string describe(const sockaddr_storage& addr) {
  char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
  getnameinfo(reinterpret_cast<const sockaddr*>(&addr), sizeof addr, host, sizeof host, port, sizeof port,
              NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(host) + ":" + port;
}

int millis_until(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

Result<HostPort> parse_host_port(const std::string& text, const std::string& what) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return Status::errorf("{} {}: expected HOST:PORT (e.g. 127.0.0.1:29500)", what, text);
  HostPort out;
  out.host = text.substr(0, colon);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']') out.host = out.host.substr(1, out.host.size() - 2);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return Status::errorf("{} {}: port {} is not a number in 1..65535", what, text, port);
  out.port = std::stoi(port);
  if (out.port < 1 || out.port > 65535) return Status::errorf("{} {}: port {} outside 1..65535", what, text, out.port);
  return out;
}

Socket::~Socket() { close(); }

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::shutdown_send() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<Socket> listen_on(const HostPort& address, int* bound_port) {
  DSV41_ASSIGN_OR_RETURN(addrinfo * found, resolve(address, true));
  std::string last = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) { last = errno_text(); continue; }
    const int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), 64) != 0) { last = errno_text(); continue; }
    if (bound_port) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      getsockname(s.fd(), reinterpret_cast<sockaddr*>(&addr), &len);
      *bound_port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                                : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    }
    freeaddrinfo(found);
    return s;
  }
  freeaddrinfo(found);
  return Status::errorf("{}: cannot listen: {}", address.text(), last);
}

Result<Socket> accept_before(const Socket& listener, Clock::time_point deadline, std::string* peer) {
  for (;;) {
    pollfd p{listener.fd(), POLLIN, 0};
    const int wait = millis_until(deadline);
    const int rc = ::poll(&p, 1, wait);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return Status::errorf("accept: poll: {}", errno_text());
    if (rc == 0) return Status::error("accept: deadline passed");
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    Socket s(::accept4(listener.fd(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC));
    if (!s.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return Status::errorf("accept: {}", errno_text());
    }
    tune(s.fd());
    if (peer) *peer = describe(addr);
    return s;
  }
}

Result<Socket> connect_before(const HostPort& address, Clock::time_point deadline) {
  std::string last = "no attempt";
  int attempts = 0;
  do {
    ++attempts;
    auto found = resolve(address, false);
    if (!found.is_ok()) {
      last = found.status().message();
    } else {
      for (addrinfo* a = found.value(); a; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (!s.valid()) { last = errno_text(); continue; }
        if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) == 0) {
          freeaddrinfo(found.value());
          tune(s.fd());
          return s;
        }
        last = errno_text();
      }
      freeaddrinfo(found.value());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (Clock::now() < deadline);
  return Status::errorf("--master {}: no rank 0 listening after {} attempts: {}", address.text(), attempts, last);
}

Result<int> pick_free_port() {
  int port = 0;
  DSV41_ASSIGN_OR_RETURN(Socket s, listen_on(HostPort{"127.0.0.1", 0}, &port));
  return port;
}

Status send_all(const Socket& socket, const void* data, size_t size, const std::string& peer) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::send(socket.fd(), p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::errorf("{}: send: {}", peer, n < 0 ? errno_text() : std::string("nothing sent"));
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace dsv41::dist
