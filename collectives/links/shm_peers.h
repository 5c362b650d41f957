// ShmPeers: the shared-memory path between ranks of one host. Each rank owns one segment: a
// doorbell, then an inbox per sender of kShmSlots pieces of chunk_bytes. Every rank maps every
// segment, so a sender copies a piece straight into the receiver's inbox and the receiver
// reduces it from there: two memory copies per piece and no system call while both sides are
// busy, where loopback TCP costs two copies through the kernel plus a system call per send and
// per receive. (NCCL moves data between local processes the same way when peer-to-peer is not
// possible: its SHM transport.) Two Links run the collectives over it: PlainShmLink
// (plain_shm_link.h, one slot a pair) and ShmLink (shm_link.h, every slot and its tricks).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectives/links/shm_copy.h"
#include "transport/shared_memory.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

/// Which Link runs over the inboxes: ShmLink (shm_link.h, the default) or PlainShmLink
/// (plain_shm_link.h, its plain reference): RINGGRAD_SHM_LINK=fast|plain. Every rank must run
/// the same one (ShmPeers::connect compares).
enum class ShmLinkKind { kFast, kPlain };

/// Pieces an inbox holds: the sender runs at most this far ahead of the receiver (ShmLink; the
/// plain link uses the first slot only).
constexpr int kShmSlots = 4;
// A sender's first pass over an inbox's slots faults their pages in (one slow copy per slot at
// most): the rule that picks the stores must not take that for slow memory (shm_copy.h).
static_assert(InboxWriter::kSlowInRow > kShmSlots);

/// The words two processes meet on. Each is written by one side only, except `rings` and
/// `aborted`. `rings` and `sleepers` serve ShmLink's trick "a doorbell rung only for sleepers"
/// (shm_link.cc); the plain link naps instead, and reads `aborted` only.
struct alignas(64) ShmDoorbell {
  std::uint32_t rings;     // bumped to wake this rank's sleepers (the futex word)
  std::uint32_t sleepers;  // this rank's threads asleep, or about to sleep, on `rings`
  std::uint64_t aborted;   // 0 while no rank failed, else an ShmAbort packed into one word
};

/// A rank that failed: it runs no collective from sequence number `first` on. Waits in those
/// collectives fail at once; an earlier collective, which that rank finished before it failed,
/// still finishes on the ranks that are behind.
struct ShmAbort {
  int rank = -1;
  std::uint64_t first = 0;
};

/// Bytes of a piece that cross inside its slot's head line (below): a piece this small reaches
/// the receiver in one cache-line transfer, together with its number, size and tag (ShmLink's
/// trick "small pieces in the head line", shm_link.h).
constexpr std::size_t kShmInlineBytes = 48;

/// What one sender writes into one receiver's segment. The receiver writes `consumed` only.
struct ShmInbox {
  // A slot's head, one cache line: which piece the slot holds, its size, its operation's tag
  // and, under ShmLink, when it fits, the piece itself (else it goes in the slot's chunk_bytes).
  // `number` is stored last, with release: a receiver that sees it sees the rest.
  struct alignas(64) Head {
    std::uint32_t number;  // 1 + the piece's index in this inbox; 0 before the first piece
    std::uint32_t bytes;   // its size (chunks are <= 1 GiB)
    std::uint64_t tag;     // the operation it belongs to (as TCP frames carry)
    std::byte data[kShmInlineBytes];  // the piece when bytes <= kShmInlineBytes
  } heads[kShmSlots];
  static_assert(sizeof(Head) == 64);
  struct alignas(64) Receiver {
    std::uint32_t consumed;  // pieces taken out; piece k's slot (k % kShmSlots) is free again
  } receiver;
};

class ShmPeers {
 public:
  /// Called by every rank together (it meets through the store): creates this rank's segment
  /// and maps every other rank's. Returns nullptr when some rank cannot map some segment
  /// (ranks on several hosts, or separate /dev/shm) or has it turned off (`enabled` false),
  /// with the first reason in `why`: the caller keeps TCP. Throws TransportError when ranks
  /// use different chunk sizes or links (`link`), or a peer is gone. `stores` picks how this
  /// rank writes pieces under ShmLink (shm_copy.h); ranks may differ in it.
  static std::unique_ptr<ShmPeers> connect(transport::Transport& transport, std::size_t chunk_bytes, bool enabled,
                                           ShmStores stores, ShmLinkKind link, std::string& why);

  std::size_t chunk_bytes() const { return chunk_bytes_; }
  /// CPUs the ranks may run on together: the union of their affinity masks (taskset, cpusets,
  /// a launcher's binding), so that ranks bound to a CPU each still count as having one.
  int cpus() const { return cpus_; }
  ShmDoorbell& doorbell(int rank) const;
  /// The inbox in `owner`'s segment that `sender` writes into.
  ShmInbox& inbox(int owner, int sender) const;
  /// Slot k of that inbox: chunk_bytes bytes, starting on a cache line.
  std::byte* slot(int owner, int sender, std::uint32_t k) const;
  /// Wakes `rank` if it sleeps (call after giving it a piece or a free slot).
  void ring(int rank) const;
  /// Marks every rank's doorbell: `rank` (this one) runs no collective from `first` on. Rings
  /// them, so their waits in those collectives fail now. Of several failures each doorbell keeps
  /// the earliest `first`.
  void abort(int rank, std::uint64_t first) const;
  /// What `rank`'s doorbell says failed, if anything.
  std::optional<ShmAbort> aborted(int rank) const;
  /// For a wait of this rank in collective `seq` on peers `to` and `from` (-1: not waited on)
  /// that saw no progress since `last`: throws TransportError when a rank failed at or before
  /// `seq` (its abort), `to` or `from` closed its connection (exited or died), or `last` is the
  /// transport's timeout ago. `what` says what the wait was for, for the message.
  void fail_if_stuck(const transport::Transport& transport, std::uint64_t seq, int to, int from,
                     std::chrono::steady_clock::time_point last, const std::function<std::string()>& what) const;

  /// ShmLink's own count of the pieces this rank put in `to`'s inbox, and the last `consumed` it
  /// read there (the trick "four slots a pair, and the sender's own count of them",
  /// shm_link.cc), and how it writes them there (shm_copy.h). Only the thread running a task
  /// touches it; the plain link does not.
  struct Sent {
    std::uint32_t written = 0, consumed = 0;
    InboxWriter writer;
  };
  Sent& sent(int to) { return sent_[static_cast<std::size_t>(to)]; }

 private:
  void wake(ShmDoorbell& bell) const;
  ShmPeers(int world_size, std::size_t chunk_bytes) : world_size_(world_size), chunk_bytes_(chunk_bytes) {}
  int world_size_;
  std::size_t chunk_bytes_;
  int cpus_ = 1;
  std::vector<transport::SharedMemory> segments_;  // by rank, this rank's own included
  std::vector<Sent> sent_;                         // by receiver
};

}  // namespace ringgrad::collectives
