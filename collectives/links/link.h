// Link: what one collective's algorithm sees of the other ranks and of memory. It is the one
// place that moves bytes: pieces between ranks, local copies, the AVG division and temporary
// buffers. HostLink (host_link.h) does it for host memory over TCP, ShmLink (shm_link.h) for
// host memory through shared memory when every rank is on one host, DeviceLink (device_link.h)
// for device memory (these two and PlainShmLink, plain_shm_link.h, share polling_link.h), so
// every algorithm runs unchanged on each. Calls are per message or per piece of chunk_bytes, never per byte: the virtual
// call costs nothing measurable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "collectives/dtype.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

/// One posted piece: a transport request (host), or a transfer a device link runs when it is
/// waited for. Pieces from one peer must be waited for in the order they were posted.
class Pending {
 public:
  Pending() = default;  // already complete
  explicit Pending(transport::Request request) : request_(std::move(request)) {}
  explicit Pending(std::function<void()> deferred) : deferred_(std::move(deferred)) {}
  /// Blocks until the piece moved; throws transport::TransportError as Request::wait does.
  void wait();

 private:
  transport::Request request_;
  std::function<void()> deferred_;
};

/// Waits for every piece in `pending` and clears it.
void wait_all(std::vector<Pending>& pending);

class Link {
 public:
  virtual ~Link() = default;
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  /// Transfers are cut into pieces of this many bytes, the same cut on both sides.
  std::size_t chunk_bytes() const { return chunk_bytes_; }

  /// Sends `send_bytes` to rank `to` while receiving `recv_bytes` from rank `from` into
  /// `recv`; either side may be skipped with peer -1 or 0 bytes. Blocks until both are done.
  /// Throws transport::TransportError on a dead peer, timeout or size mismatch.
  virtual void send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                         std::size_t recv_bytes) = 0;

  /// Like send_recv, but the `count` elements received are reduced on arrival:
  /// dst[i] = a[i] op received[i] (dst may equal a). Piece k is reduced while piece k+1 is
  /// still on its way.
  virtual void send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst,
                                const void* a, std::size_t count, DType dtype, ReduceOp op) = 0;

  /// Where a received head's body goes: its bytes (empty: no body follows), given the head.
  using BodyDestination = std::function<std::span<std::byte>(std::span<const std::byte> head)>;

  /// A head and a body each way for the wait of one: sends `head`, then `body` (may be empty),
  /// to rank `to`; receives a head of head.size() bytes from rank `from` into `their_head`, then
  /// the body `body_for(their_head)` says. Both sends leave before either receive waits, so a
  /// body costs no round trip of its own, and the receiver learns from the head how much body
  /// to take: ranks whose bodies differ in size stay in step. Head and body are at most one
  /// piece (chunk_bytes) each: both are in the peer's inbox, or on the wire, before it reads.
  /// A small head and body go as one message over TCP (links/host_link.cc) and as one piece
  /// over shared memory (links/shm_link.h).
  virtual void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                                std::span<std::byte> their_head, const BodyDestination& body_for) = 0;

  void send(int to, const void* data, std::size_t bytes) { send_recv(to, data, bytes, -1, nullptr, 0); }
  void recv(int from, void* data, std::size_t bytes) { send_recv(-1, nullptr, 0, from, data, bytes); }

  /// Bytes this link may send one peer, in any number of messages, that complete without that
  /// peer's receives (they fit its socket buffer): irecv_isend_waitall runs a batch within it
  /// on this thread. 0 (the default): no such promise.
  virtual std::size_t eager_bytes() const { return 0; }

  /// Posts the pieces of one message; completion goes to `pending` (peer -1: nothing).
  virtual void isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) = 0;
  virtual void irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) = 0;

  /// dst = src, `bytes` bytes of this link's memory; nothing when dst == src or bytes == 0.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  /// dst = a op b, element by element, all three in this link's memory (dst may equal a or b).
  virtual void reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) = 0;
  /// data[i] /= world_size for AVG (see reduce_kernel.h); nothing for other ops.
  virtual void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) = 0;
  /// A temporary buffer of at least `bytes` in this link's memory, valid until the next call.
  virtual std::byte* workspace(std::size_t bytes) = 0;

 protected:
  Link(int rank, int world_size, std::size_t chunk_bytes)
      : rank_(rank), world_size_(world_size), chunk_bytes_(chunk_bytes) {}

 private:
  int rank_;
  int world_size_;
  std::size_t chunk_bytes_;
};

}  // namespace ringgrad::collectives
