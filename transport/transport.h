// Transport: point-to-point messages between the ranks of a job over a full mesh of TCP
// connections, one per pair of ranks, set up through the rendezvous Store that rank 0 serves.
// Blocking calls run on the caller's thread straight on the socket; asynchronous ones are
// driven by one progress thread per process. Each message carries a 32-byte header (stream,
// sequence, tag, length), so a receive that does not match what was sent fails instead of
// corrupting. Streams let several communicators share the connections (see stream_demux.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "transport/config.h"
#include "transport/error.h"
#include "transport/store.h"

namespace ringgrad::transport {

class StoreServer;

namespace detail {
struct Op;
class Engine;
}  // namespace detail

/// Handle of an asynchronous send or receive; move-only. The caller's buffer must stay valid
/// until wait() returns (or test() returns true). A Request destroyed before completion waits
/// for it (and drops any error), so a buffer is never written after its owner is gone; when
/// that happens during stack unwinding (an error elsewhere), the request's connection is
/// failed first, so neither side waits out the timeout for a message that will not come.
class Request {
 public:
  Request();  // an empty request: already complete (defined where Op is complete)
  explicit Request(std::unique_ptr<detail::Op> op);
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  ~Request();

  /// Blocks until the operation completes. Throws TransportError if it failed: the peer closed
  /// or died, stayed silent past the timeout, or the message's length or tag did not match.
  void wait();
  /// Returns whether the operation has completed, without blocking; throws as wait() does if
  /// it failed.
  bool test();

 private:
  std::unique_ptr<detail::Op> op_;
};

class Transport {
 public:
  /// Joins the job: rank 0 serves the Store at master_addr:master_port; every rank listens on
  /// an ephemeral port of bind_addr, publishes it, and connects to the lower ranks while
  /// accepting the higher ones; every connection carries config.job_token. Returns when this
  /// rank is connected to every peer. Throws TransportError on an invalid config (no
  /// master_port in a job of several ranks; no job token in a job that is not loopback_only())
  /// or when the mesh is not complete within config.timeout.
  explicit Transport(const Config& config);
  /// The same, where rank 0 passes the store's server already listening (on master_port): for a
  /// caller that publishes the port elsewhere first, through MPI (collectives/backends/mpi_bootstrap.h)
  /// or through a torch process group's own store (collectives/torch/). The transport owns it.
  Transport(const Config& config, std::unique_ptr<StoreServer> server);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const;
  int world_size() const;
  /// How long an operation may make no progress before it fails.
  std::chrono::milliseconds timeout() const;
  /// Whether the connection to peer is still up: not failed here (abort, an error) and not
  /// closed by the peer (it exited, died or aborted). For waits that do not read the socket.
  bool connected(int peer) const;

  /// Sends data (any size, 0 bytes to more than 4 GiB) to peer with a user tag on `stream`.
  /// Returns when the bytes are handed to the kernel: the buffer may be reused, the peer may
  /// not have them. Messages to one peer on one stream are matched with its receives on that
  /// stream in issue order, sync and async alike; streams are independent of each other.
  void send(int peer, std::span<const std::byte> data, uint64_t tag, uint32_t stream = 0);
  /// Receives exactly data.size() bytes from peer. Throws TransportError if the next message
  /// from peer on `stream` has a different length or tag (the connection to peer is then closed).
  void recv(int peer, std::span<std::byte> data, uint64_t tag, uint32_t stream = 0);
  /// Receives the next message from peer on `stream` into the start of data, whatever its length
  /// up to data.size() bytes, and returns that length. Throws TransportError as recv does when the
  /// tag differs or the message is longer than data.
  std::size_t recv_up_to(int peer, std::span<std::byte> data, uint64_t tag, uint32_t stream = 0);
  /// Asynchronous versions: start the operation and return at once.
  Request isend(int peer, std::span<const std::byte> data, uint64_t tag, uint32_t stream = 0);
  Request irecv(int peer, std::span<std::byte> data, uint64_t tag, uint32_t stream = 0);

  /// The rendezvous store, for small out-of-band agreement (e.g. a barrier by add + wait).
  Store& store();

  /// Fails every pending and later operation with `cause` and closes every connection now,
  /// so peers blocked on this rank fail at once rather than at their timeout. For a rank that
  /// cannot go on (a collective broke); the Transport is unusable afterwards.
  void abort(const std::string& cause);

 private:
  std::unique_ptr<detail::Engine> engine_;
};

}  // namespace ringgrad::transport
