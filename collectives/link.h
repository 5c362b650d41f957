// Link: what one collective sees of the transport. Every transfer is cut into pieces of
// chunk_bytes (the same cut on both sides), so a receiver can reduce piece k while piece
// k+1 is still arriving; all messages of one collective carry its sequence-number tag.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collectives/dtype.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class Link {
 public:
  /// `scratch` must outlive the Link; it grows to chunk_bytes on first use.
  Link(transport::Transport& transport, uint64_t tag, std::size_t chunk_bytes,
       std::vector<std::byte>& scratch);

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }

  /// Sends `send_bytes` to rank `to` while receiving `recv_bytes` from rank `from` into
  /// `recv`; either side may be skipped with peer -1 or 0 bytes. Blocks until both are done.
  /// Throws transport::TransportError on a dead peer, timeout or size mismatch.
  void send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                 std::size_t recv_bytes);

  /// Like send_recv, but the `count` elements received are reduced on arrival:
  /// dst[i] = a[i] op received[i] (dst may equal a). Received pieces land in scratch; piece k
  /// is reduced while the peer writes piece k+1.
  void send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst,
                        const void* a, std::size_t count, DType dtype, ReduceOp op);

  void send(int to, const void* data, std::size_t bytes) { send_recv(to, data, bytes, -1, nullptr, 0); }
  void recv(int from, void* data, std::size_t bytes) { send_recv(-1, nullptr, 0, from, data, bytes); }

  /// Posts the pieces of one message without waiting; completion goes to `pending`.
  void isend(int to, const void* data, std::size_t bytes, std::vector<transport::Request>& pending);
  void irecv(int from, void* data, std::size_t bytes, std::vector<transport::Request>& pending);

 private:
  // A small message is sent at once on this thread, a large one queued to the progress thread.
  void post_send(int to, const void* data, std::size_t bytes, std::vector<transport::Request>& pending);

  transport::Transport& transport_;
  uint64_t tag_;
  std::size_t chunk_bytes_;
  std::vector<std::byte>& scratch_;
  int rank_;
  int world_size_;
};

/// Waits for every request in `pending` and clears it.
void wait_all(std::vector<transport::Request>& pending);

}  // namespace ringgrad::collectives
