// ShmLink: the fast shared-memory Link. Read PlainShmLink (plain_shm_link.h) first: the same
// inboxes (shm_peers.h), counts and failure checks. ShmLink adds six tricks, each named once
// where it lives ("Trick: ..."), with what it buys and when it is chosen:
//   - four slots a pair, and the sender's own count of them (shm_link.cc, advance_send);
//   - small pieces in the head line (shm_link.cc, advance_send; kShmInlineBytes);
//   - streaming stores when plain ones measure slow (shm_copy.h, InboxWriter);
//   - a doorbell rung only for sleepers (shm_link.cc, ShmLink::wait; ShmPeers::ring);
//   - a poll as long as the CPUs and the caller allow (ShmPoll, below);
//   - a head and its body as one piece (kShmFramedBytes, below).
// Both links side by side, 2 ranks: docs/collectives.md, "The plain shared-memory link beside
// the fast one".
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/links/host_memory_link.h"
#include "collectives/links/polling_link.h"
#include "collectives/links/shm_peers.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

/// Trick: a poll as long as the CPUs and the caller allow. Where the plain link spins a fixed
/// 50 us, a wait here polls (after the last progress) for as long as no one else needs the CPU
/// (shm_poll_default), then sleeps. A collective run on the communicator's worker thread shares
/// the rank's CPU with the caller, who may be computing meanwhile (DDP's backward): it polls
/// `beside_caller` then, and `alone` while a caller waits for it (`callers_waiting` > 0). A
/// collective run on the caller's thread has callers_waiting null and polls `alone`. Buys: on
/// baby GPT DDP over 2 ranks, the worker's share of CPU samples fell from 3.6-3.8% to 0.5-0.6%
/// and the median tokens/s rose 1.12x (docs/journal.md, Collectives).
struct ShmPoll {
  std::chrono::microseconds alone{0}, beside_caller{0};
  const std::atomic<int>* callers_waiting = nullptr;
  /// The poll for a wait that begins now: `beside_caller` on the worker while no caller waits,
  /// else `alone`.
  std::chrono::microseconds now() const {
    return callers_waiting != nullptr && callers_waiting->load(std::memory_order_relaxed) == 0 ? beside_caller : alone;
  }
};

/// Trick: a head and its body as one piece. Head and body of a framed exchange that together fit
/// this many bytes go as one piece, staged through HostBuffers::framed: the receiver waits for
/// one piece, not two (the plain link runs two exchanges): a small checked call waits once
/// (docs/collectives.md, the fast link's tricks). Above it the sender's staging copy of the body
/// would cost more than the piece it saves.
constexpr std::size_t kShmFramedBytes = 4 << 10;

class ShmLink final : public PollingLink<HostMemoryLink> {
 public:
  /// A link for collective number `seq`, whose pieces carry `tag` (the sequence number, or the
  /// argument check's tag): a piece of another operation is an error. `transport` tells whether
  /// peers are alive. A wait polls for up to `poll` after the last progress before it sleeps.
  ShmLink(ShmPeers& peers, transport::Transport& transport, uint64_t seq, uint64_t tag, const ShmPoll& poll,
          HostBuffers& buffers);

  /// Head and body as one piece when they fit kShmFramedBytes and one piece, else as two. The
  /// receiver tells the two apart by the piece's length: a piece longer than a head carries the
  /// body, which must be as long as body_for() says (else TransportError).
  void send_recv_framed(int to, std::span<const std::byte> head, std::span<const std::byte> body, int from,
                        std::span<std::byte> their_head, const BodyDestination& body_for) override;

 private:
  bool advance_send(Outgoing& out);
  bool advance_recv(Incoming& in);
  // The head of the next piece from `from` when it has arrived (nullptr before); throws when
  // it belongs to another operation.
  const ShmInbox::Head* arrived(int from) const;
  // Where the piece under `head` lies: in the head line or in its slot.
  const std::byte* piece(const ShmInbox::Head& head, int from) const;
  // Frees the slot of the piece just taken from `from`.
  void consume(int from);
  void exchange(Outgoing out, Incoming in) override;
  // Whether the send has a free slot or the receive a piece waiting.
  bool ready(const Outgoing& out, const Incoming& in) const;
  // Polls, then sleeps, until ready(); throws on a peer's failure at or before this collective,
  // a dead peer or the timeout.
  void wait(const Outgoing& out, const Incoming& in, std::chrono::steady_clock::time_point last_progress);

  ShmPeers& peers_;
  transport::Transport& transport_;
  uint64_t seq_;
  uint64_t tag_;
  ShmPoll poll_;
};

/// The shortest poll: enough for a peer inside the same collective to hand over its next piece.
constexpr std::chrono::microseconds kShmPollBrief{20};

/// How long a waiting thread polls before it sleeps, for `threads` busy threads on this host's
/// ranks that may run on `cpus` CPUs together (ShmPeers::cpus): 5 ms while threads <= cpus,
/// kShmPollBrief when the threads outnumber the CPUs (polling then takes the CPU from the rank
/// waited for, or from the caller's computation). A rank counts one thread while its
/// collective runs on the caller's thread or the caller waits for it, two while the caller
/// computes beside it. It compares counts only: ranks pinned to {0}, {0} and {1, 2} count 3
/// CPUs and poll.
std::chrono::microseconds shm_poll_default(int threads, int cpus);

}  // namespace ringgrad::collectives
