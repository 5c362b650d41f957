// Connection: the TCP connection to one peer and its two channels (send, receive). A failure in
// either direction fails both and shuts the socket down, so every thread waiting on this peer
// wakes, and the peer sees the connection close instead of waiting for its timeout.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include "transport/channel.h"

namespace ringgrad::transport::detail {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  /// Takes ownership of fd, a connected TCP socket (made non-blocking here).
  Connection(asio::io_context& io, int fd, int local_rank, int peer, std::chrono::milliseconds timeout);

  Channel& channel(Direction dir) { return dir == Direction::send ? send_ : recv_; }
  int fd() const { return fd_; }
  int local_rank() const { return local_rank_; }
  int peer() const { return peer_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  asio::io_context& io() { return io_; }
  /// The Asio socket, for waiting on readiness; the progress thread's only.
  asio::ip::tcp::socket& socket() { return *socket_; }

  /// Fails both channels with cause and shuts the socket down (thread-safe, idempotent).
  void fail(const std::string& cause);
  /// After the progress thread stopped: completes what is left and closes the socket.
  void close();

 private:
  asio::io_context& io_;
  std::optional<asio::ip::tcp::socket> socket_;
  int fd_;
  int local_rank_;
  int peer_;
  std::chrono::milliseconds timeout_;
  Channel send_{*this, Direction::send};
  Channel recv_{*this, Direction::recv};
};

}  // namespace ringgrad::transport::detail
