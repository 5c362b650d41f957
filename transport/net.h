// Small POSIX socket helpers shared by the store, the rendezvous and the channels: socket
// options, connecting and moving bytes with a deadline, and finding the local interface address.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace ringgrad::transport::net {

using Clock = std::chrono::steady_clock;

/// Owns a file descriptor and closes it; move-only.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd();
  int get() const { return fd_; }
  /// Gives up ownership: the caller closes it.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

/// TCP_NODELAY (a small message leaves at once) and close-on-exec on a connected socket.
void tune(int fd);
/// Blocks until fd is readable (POLLIN) or writable (POLLOUT), or has an error or hang-up.
/// Returns false if the deadline passed first.
bool wait_ready(int fd, short events, Clock::time_point deadline);
/// Throws TransportError starting with `what` when the resolver answers that `host` names no
/// address (a typo, or an invalid IP): waiting would not change that answer. A resolver that
/// cannot answer yet (EAI_AGAIN) passes: connect() tries again.
void require_known_host(const std::string& host, const std::string& what);
/// A non-blocking TCP connection to host:port established before the deadline, or throws
/// TransportError starting with `what`. the connected fd (the caller owns it).
Fd connect(const std::string& host, uint16_t port, Clock::time_point deadline, const std::string& what);
/// Write or read exactly bytes.size() bytes on a non-blocking socket before the deadline, or
/// throw TransportError starting with `what` (peer closed, socket error, or timeout).
void write_all(int fd, std::span<const std::byte> bytes, Clock::time_point deadline, const std::string& what);
void read_exact(int fd, std::span<std::byte> bytes, Clock::time_point deadline, const std::string& what);
/// The local address this host would use to reach host (no packet is sent): a UDP socket
/// "connected" to it, then getsockname. Throws TransportError if host does not resolve.
std::string local_address_towards(const std::string& host, uint16_t port);
/// Whether host resolves to loopback addresses only (127.0.0.0/8, ::1): a job that meets there
/// never leaves this host. False when host does not resolve.
bool is_loopback(const std::string& host);
/// "host:port" of the peer of a connected socket, for log lines.
std::string peer_name(int fd);
/// "host:port" of this end of a connected socket: how the peer's log names it.
std::string local_name(int fd);

}  // namespace ringgrad::transport::net
