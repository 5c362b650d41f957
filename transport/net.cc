// POSIX socket helpers: poll-based deadlines over non-blocking sockets.

#include "transport/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "transport/error.h"

namespace ringgrad::transport::net {
namespace {

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfo = std::unique_ptr<addrinfo, AddrInfoDeleter>;

AddrInfo resolve(const std::string& host, uint16_t port, int socktype) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = socktype;
  addrinfo* result = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0) throw TransportError(fmt::format("cannot resolve '{}': {}", host, ::gai_strerror(rc)));
  return AddrInfo(result);
}

std::string address_text(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (addr->sa_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(addr)->sin_addr, text, sizeof text);
  else if (addr->sa_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(addr)->sin6_addr, text, sizeof text);
  return text;
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

bool wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms_until(deadline));
    if (n > 0) return true;
    if (n == 0) {
      if (Clock::now() >= deadline) return false;
    } else if (errno != EINTR) {
      return true;  // let the next send/recv report the error
    }
  }
}

void require_known_host(const std::string& host, const std::string& what) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (result != nullptr) ::freeaddrinfo(result);
  if (rc == EAI_NONAME || rc == EAI_FAIL)
    throw TransportError(fmt::format("{}: cannot resolve '{}': {}", what, host, ::gai_strerror(rc)));
}

Fd connect(const std::string& host, uint16_t port, Clock::time_point deadline, const std::string& what) {
  AddrInfo addrs;
  try {
    addrs = resolve(host, port, SOCK_STREAM);
  } catch (const TransportError& e) {
    throw TransportError(fmt::format("{}: {}", what, e.what()));
  }
  std::string last_error = "no address";
  for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw TransportError(fmt::format("{}: socket: {}", what, std::strerror(errno)));
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS && wait_ready(fd, POLLOUT, deadline)) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err == 0 ? ETIMEDOUT : err;
    } else if (rc != 0 && errno == EINPROGRESS) {
      errno = ETIMEDOUT;
    }
    if (rc == 0) {
      tune(fd);
      return Fd(fd);
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  throw TransportError(fmt::format("{}: cannot connect to {}:{}: {}", what, host, port, last_error));
}

void write_all(int fd, std::span<const std::byte> bytes, Clock::time_point deadline, const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_ready(fd, POLLOUT, deadline))
        throw TransportError(fmt::format("{}: timed out after {} of {} bytes", what, done, bytes.size()));
    } else if (errno != EINTR) {
      throw TransportError(fmt::format("{}: {} after {} of {} bytes", what, std::strerror(errno), done, bytes.size()));
    }
  }
}

void read_exact(int fd, std::span<std::byte> bytes, Clock::time_point deadline, const std::string& what) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::recv(fd, bytes.data() + done, bytes.size() - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n == 0) {
      throw TransportError(fmt::format("{}: the other side closed the connection after {} of {} bytes", what, done, bytes.size()));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_ready(fd, POLLIN, deadline))
        throw TransportError(fmt::format("{}: timed out after {} of {} bytes", what, done, bytes.size()));
    } else if (errno != EINTR) {
      throw TransportError(fmt::format("{}: {} after {} of {} bytes", what, std::strerror(errno), done, bytes.size()));
    }
  }
}

std::string local_address_towards(const std::string& host, uint16_t port) {
  AddrInfo addrs = resolve(host, port == 0 ? 9 : port, SOCK_DGRAM);
  int fd = ::socket(addrs->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw TransportError(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  bool ok = ::connect(fd, addrs->ai_addr, addrs->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) throw TransportError(fmt::format("no route from this host to '{}': {}", host, std::strerror(err)));
  return address_text(reinterpret_cast<const sockaddr*>(&local));
}

bool is_loopback(const std::string& host) {
  AddrInfo addrs;
  try {
    addrs = resolve(host, 0, SOCK_STREAM);
  } catch (const TransportError&) {
    return false;
  }
  for (addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      if ((ntohl(reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr.s_addr) >> 24) != 127) return false;
    } else if (a->ai_family != AF_INET6 || !IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr)) {
      return false;
    }
  }
  return true;
}

namespace {

// "host:port" of a socket address filled in by getpeername or getsockname.
std::string name_of(const sockaddr_storage& addr) {
  uint16_t port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port)
                                             : ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  return fmt::format("{}:{}", address_text(reinterpret_cast<const sockaddr*>(&addr)), port);
}

}  // namespace

std::string peer_name(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  return name_of(addr);
}

std::string local_name(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  return name_of(addr);
}

}  // namespace ringgrad::transport::net
