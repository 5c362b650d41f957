// DeviceLink: the Link for device buffers, so ring, tree, chain and halving-doubling run on
// GPU memory unchanged. Per piece to an IPC peer: wait for a free slot of its inbox (a credit),
// copy into it on our stream, record an IPC event, tell it "slot k ready" over TCP; it makes its
// stream wait on that event, copies or reduces (dst = a op slot) out of the slot, records its
// own event and returns the credit. With 4 slots, copying piece k+1 overlaps reducing piece k.
// Peers on other hosts get pieces through pinned host memory over TCP. Every wait polls with
// the transport's timeout: a dead peer ends in TransportError, never a hang.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/links/device_peers.h"
#include "collectives/links/polling_link.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class DeviceLink final : public PollingLink<Link> {
 public:
  /// A link for one collective with sequence-number `tag`; the device must be current.
  DeviceLink(DevicePeers& peers, transport::Transport& transport, uint64_t tag);

  void copy(void* dst, const void* src, std::size_t bytes) override;
  void reduce(void* dst, const void* a, const void* b, std::size_t count, DType dtype, ReduceOp op) override;
  void divide_for_avg(void* data, std::size_t count, DType dtype, ReduceOp op, int world_size) override;
  std::byte* workspace(std::size_t bytes) override;

  /// Ends the collective: waits until every slot lent to a peer is returned and our stream is
  /// idle, so the result is in device memory and no control message is left in flight.
  /// Throws TransportError on timeout or a dead peer.
  void finish();

 private:
  bool advance_send(Outgoing& out);
  bool advance_recv(Incoming& in);
  bool poll_control(int peer, bool needed);
  void exchange(Outgoing out, Incoming in) override;

  DevicePeers& peers_;
  transport::Transport& transport_;
  uint64_t tag_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ringgrad::collectives
