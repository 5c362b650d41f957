// Connection: the TCP connection to one peer and its two channels (send, receive). A failure in
// either direction fails both and shuts the socket down, so every thread waiting on this peer
// wakes, and the peer sees the connection close instead of waiting for its timeout.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>

#include "transport/channel.h"
#include "transport/net.h"

namespace ringgrad::transport::detail {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  /// Takes ownership of fd, a connected TCP socket.
  Connection(asio::io_context& io, net::Fd fd, int local_rank, int peer, std::chrono::milliseconds timeout,
             std::chrono::microseconds receive_poll);

  Channel& channel(Direction dir) { return dir == Direction::send ? send_ : recv_; }
  int fd() const { return fd_.get(); }
  int local_rank() const { return local_rank_; }
  int peer() const { return peer_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  /// How long a small blocking receive polls before it sleeps (Config::receive_poll).
  std::chrono::microseconds receive_poll() const { return receive_poll_; }
  asio::io_context& io() { return io_; }

  /// The progress thread's readiness watch on the socket, held while it drives a channel of
  /// this connection (watch() / unwatch() count them); progress thread only.
  void watch();
  void unwatch();
  asio::posix::stream_descriptor& watcher() { return *watcher_; }

  /// Whether the connection is still up: not failed here, and not closed by the peer.
  bool open() const;
  /// Fails both channels with cause and shuts the socket down (thread-safe, idempotent).
  void fail(const std::string& cause);
  /// After the progress thread stopped: completes what is left and releases the socket.
  void close();

 private:
  asio::io_context& io_;
  net::Fd fd_;
  int local_rank_;
  int peer_;
  std::chrono::milliseconds timeout_;
  std::chrono::microseconds receive_poll_;
  std::optional<asio::posix::stream_descriptor> watcher_;
  int watching_ = 0;
  Channel send_{*this, Direction::send};
  Channel recv_{*this, Direction::recv};
};

}  // namespace ringgrad::transport::detail
