// ShmLink: the Link for host memory when every rank is on this host. A piece goes into a slot of
// the receiver's inbox (shm_peers.h) and is announced by its number in the slot's head line; a
// piece of at most kShmInlineBytes rides in that line itself, so it crosses in one cache-line
// transfer (Open MPI's shared-memory "fast boxes" do the same). A larger piece goes into its
// slot by plain or streaming stores, as the sender's InboxWriter measures (shm_copy.h). The
// receiver copies or reduces it out and bumps `consumed`, which frees the slot. Each word has
// one writer, so no locks: release/acquire on the numbers and counts orders the data. A rank
// with nothing to do polls for a while (shm_poll_default), then sleeps on its doorbell (a futex)
// until a peer rings it, checking every few milliseconds that its peers are alive. A peer that
// polls is never rung: a small piece costs its cache line and nothing else.
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

/// How long a wait polls (after the last progress) before it sleeps. A collective run on the
/// communicator's worker thread shares the rank's CPU with the caller, who may be computing
/// meanwhile (DDP's backward): it polls `beside_caller` then, and `alone` while a caller waits
/// for it (`callers_waiting` > 0). A collective run on the caller's thread has callers_waiting
/// null and polls `alone`.
struct ShmPoll {
  std::chrono::microseconds alone{0}, beside_caller{0};
  const std::atomic<int>* callers_waiting = nullptr;
  /// The poll for a wait that begins now: `beside_caller` on the worker while no caller waits,
  /// else `alone`.
  std::chrono::microseconds now() const {
    return callers_waiting != nullptr && callers_waiting->load(std::memory_order_relaxed) == 0 ? beside_caller : alone;
  }
};

/// Head and body of a framed exchange that together fit this many bytes go as one piece: the
/// receiver then waits for one piece, not two. Above it the sender's staging copy of the body
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
                        std::span<std::byte> their_head, const BodyFor& body_for) override;

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
/// kShmPollBrief when the threads outnumber the CPUs. A rank counts one thread while its
/// collective runs on the caller's thread or the caller waits for it, two while the caller
/// computes beside it. It compares counts only: ranks pinned to {0}, {0} and {1, 2} count 3
/// CPUs and poll.
std::chrono::microseconds shm_poll_default(int threads, int cpus);

}  // namespace ringgrad::collectives
