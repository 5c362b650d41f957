// PlainShmLink: the plain shared-memory Link. One slot per (sender, receiver) pair in the
// receiver's segment (shm_peers.h): memcpy in, raise a count; the receiver copies or reduces out
// and raises its own. Two copies a byte; no system call but a 100 us nap once a wait outlasts its
// 50 us spin. Its fast twin ShmLink (shm_link.h) adds: four slots (the sender runs ahead), small
// pieces in the head line (one line crosses, not two), streaming stores (when plain ones measure
// slow), a futex rung only for sleepers (woken at once, no nap), a poll fitted to the CPUs and
// the caller, and a head with its body as one piece (one wait, not two).
#pragma once

#include <chrono>
#include <cstdint>

#include "collectives/links/host_memory_link.h"
#include "collectives/links/polling_link.h"
#include "collectives/links/shm_peers.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class PlainShmLink final : public PollingLink<HostMemoryLink> {
 public:
  /// A wait spins this long after the last progress (a peer inside the same collective answers
  /// within a piece's copy), then naps kNap at a time until the piece or slot comes.
  static constexpr std::chrono::microseconds kSpin{50}, kNap{100};

  /// A link for collective number `seq`, whose pieces carry `tag` (the sequence number, or the
  /// argument check's tag): a piece of another operation is an error. `transport` tells whether
  /// peers are alive and the timeout.
  PlainShmLink(ShmPeers& peers, transport::Transport& transport, std::uint64_t seq, std::uint64_t tag,
               HostBuffers& buffers);

  /// The heads cross in one exchange, then the bodies in another: with one slot a peer, a head
  /// and its body cannot both wait in the peer's inbox.
  void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                        std::span<std::byte> their_head, const BodyDestination& body_for) override;

 private:
  // One piece into `out.to`'s slot if it is free; false if the peer has not taken the last one.
  bool put(Outgoing& out);
  // One piece out of the slot `in.from` fills, if it is there; throws on a piece of another
  // operation or size.
  bool take(Incoming& in);
  // Whether put() or take() would make progress now.
  bool ready(const Outgoing& out, const Incoming& in) const;
  void exchange(Outgoing out, Incoming in) override;

  ShmPeers& peers_;
  transport::Transport& transport_;
  std::uint64_t seq_;
  std::uint64_t tag_;
};

}  // namespace ringgrad::collectives
