// Connection: owns the socket of one peer; failing it wakes both directions.
//
// The socket stays in blocking mode: a blocking call on the caller's thread is then one
// sendmsg/recvmsg per message, as on a plain socket, bounded by SO_SNDTIMEO/SO_RCVTIMEO; the
// progress thread passes MSG_DONTWAIT instead. Asio only waits for readiness, on a duplicate
// of the descriptor registered with its epoll set just while the progress thread drives this
// connection: an always-registered socket would wake the progress thread on every message
// and cost the blocking path about a microsecond per message.

#include "transport/connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace ringgrad::transport::detail {

Connection::Connection(asio::io_context& io, net::Fd fd, int local_rank, int peer, std::chrono::milliseconds timeout,
                       std::chrono::microseconds receive_poll)
    : io_(io), fd_(std::move(fd)), local_rank_(local_rank), peer_(peer), timeout_(timeout), receive_poll_(receive_poll) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000);
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int blocking = 0;
  ::ioctl(fd_.get(), FIONBIO, &blocking);
}

void Connection::watch() {
  if (watching_++ > 0) return;
  int dup = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return fail(fmt::format("cannot watch the socket: {}", std::strerror(errno)));
  watcher_.emplace(io_, dup);
  // Told the descriptor is non-blocking, Asio never switches the mode itself (it would switch
  // the shared socket); async_wait moves no bytes, so the mode is ours to keep blocking.
  watcher_->non_blocking(true);
  int blocking = 0;
  ::ioctl(dup, FIONBIO, &blocking);
}

void Connection::unwatch() {
  if (--watching_ == 0) watcher_.reset();
}

bool Connection::open() const {
  pollfd p{fd_.get(), POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 0;  // any event (peer's FIN, hang-up, error) means closed
}

void Connection::fail(const std::string& cause) {
  send_.fail(cause);
  recv_.fail(cause);
  ::shutdown(fd_.get(), SHUT_RDWR);  // ends a blocked sendmsg/recvmsg and wakes Asio's wait
}

void Connection::close() {
  send_.abandon();
  recv_.abandon();
  watcher_.reset();
}

}  // namespace ringgrad::transport::detail
