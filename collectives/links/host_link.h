// HostLink: the Link for host memory, over the TCP transport. Pieces of chunk_bytes carry the
// collective's sequence-number tag on the communicator's stream; peers are group ranks, turned
// into job ranks here. Received pieces are reduced from a cache-sized scratch buffer while the
// peer writes the next one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/group.h"
#include "collectives/links/host_memory_link.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class HostLink final : public HostMemoryLink {
 public:
  /// `group` and `buffers` must outlive the HostLink.
  HostLink(transport::Transport& transport, const Group& group, uint64_t tag, std::size_t chunk_bytes,
           HostBuffers& buffers);

  void send_recv(int to, const void* send, std::size_t send_bytes, int from, void* recv,
                 std::size_t recv_bytes) override;
  void send_recv_reduce(int to, const void* send, std::size_t send_bytes, int from, void* dst, const void* a,
                        std::size_t count, DType dtype, ReduceOp op) override;
  /// kEagerBytes (16 KiB): the peer's socket buffer holds that much (loopback: 128 KiB).
  std::size_t eager_bytes() const override;
  void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                        std::span<std::byte> their_head, const BodyDestination& body_for) override;
  void isend(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending) override;
  void irecv(int from, void* data, std::size_t bytes, std::vector<Pending>& pending) override;

 private:
  // A small message is sent at once on this thread, a large one queued to the progress thread.
  void post_send(int to, const void* data, std::size_t bytes, std::vector<Pending>& pending);
  // Blocking receive of `into` from `from`, piece by piece, on this thread.
  void receive(int from, std::span<std::byte> into);

  transport::Transport& transport_;
  const Group& group_;
  uint64_t tag_;
};

}  // namespace ringgrad::collectives
