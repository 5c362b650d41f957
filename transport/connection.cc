// Connection: owns the socket of one peer; failing it wakes both directions.

#include "transport/connection.h"

#include <sys/socket.h>

namespace ringgrad::transport::detail {

Connection::Connection(asio::io_context& io, int fd, int local_rank, int peer, std::chrono::milliseconds timeout)
    : io_(io), socket_(std::in_place, io), fd_(fd), local_rank_(local_rank), peer_(peer), timeout_(timeout) {
  asio::ip::tcp::endpoint local;
  socklen_t len = static_cast<socklen_t>(local.capacity());
  ::getsockname(fd, local.data(), &len);
  socket_->assign(local.protocol(), fd);
  // Every send and receive is a non-blocking attempt; drivers wait with poll() or Asio.
  socket_->non_blocking(true);
}

void Connection::fail(const std::string& cause) {
  send_.fail(cause);
  recv_.fail(cause);
  ::shutdown(fd_, SHUT_RDWR);  // wakes a driver blocked in poll() or an Asio wait on this socket
}

void Connection::close() {
  send_.abandon();
  recv_.abandon();
  socket_.reset();
}

}  // namespace ringgrad::transport::detail
