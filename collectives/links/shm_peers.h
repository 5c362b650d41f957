// ShmPeers: the shared-memory path between ranks of one host. Each rank owns one segment: a
// doorbell, then an inbox per sender of kShmSlots pieces of chunk_bytes. Every rank maps every
// segment, so a sender copies a piece straight into the receiver's inbox and the receiver
// reduces it from there: two memory copies per piece and no system call while both sides are
// busy, where loopback TCP costs two copies through the kernel plus a system call per send and
// per receive. (NCCL moves data between local processes the same way when peer-to-peer is not
// possible: its SHM transport.) ShmLink (shm_link.h) runs the collectives over it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport/shared_memory.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

/// Pieces an inbox holds: the sender runs at most this far ahead of the receiver.
constexpr int kShmSlots = 4;

/// The words two processes meet on. Each is written by one side only, except `rings` and
/// `aborted`.
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

struct ShmInbox {
  // One cache line: a receiver learns of a piece, its size and its tag in one transfer.
  struct alignas(64) Sender {
    std::uint32_t written;                // pieces put in
    std::uint32_t piece_bytes[kShmSlots]; // size of the piece in each slot (chunks are <= 1 GiB)
    std::uint64_t piece_tag[kShmSlots];   // the operation it belongs to (as TCP frames carry)
  } sender;
  static_assert(sizeof(Sender) == 64);
  struct alignas(64) Receiver {
    std::uint32_t consumed;  // pieces taken out; slot k % kShmSlots is free again
  } receiver;
};

class ShmPeers {
 public:
  /// Called by every rank together (it meets through the store): creates this rank's segment
  /// and maps every other rank's. Returns nullptr when some rank cannot map some segment
  /// (ranks on several hosts, or separate /dev/shm) or has it turned off (`enabled` false),
  /// with the first reason in `why`: the caller keeps TCP. Throws TransportError when ranks
  /// use different chunk sizes or a peer is gone.
  static std::unique_ptr<ShmPeers> connect(transport::Transport& transport, std::size_t chunk_bytes, bool enabled,
                                           std::string& why);

  std::size_t chunk_bytes() const { return chunk_bytes_; }
  /// CPUs the ranks may run on together: the union of their affinity masks (taskset, cpusets,
  /// a launcher's binding), so that ranks bound to a CPU each still count as having one.
  int cpus() const { return cpus_; }
  ShmDoorbell& doorbell(int rank) const;
  /// The inbox in `owner`'s segment that `sender` writes into.
  ShmInbox& inbox(int owner, int sender) const;
  /// Slot k of that inbox: chunk_bytes bytes.
  std::byte* slot(int owner, int sender, std::uint32_t k) const;
  /// Wakes `rank` if it sleeps (call after giving it a piece or a free slot).
  void ring(int rank) const;
  /// Marks every rank's doorbell: `rank` (this one) runs no collective from `first` on. Rings
  /// them, so their waits in those collectives fail now. Of several failures each doorbell keeps
  /// the earliest `first`.
  void abort(int rank, std::uint64_t first) const;
  /// What `rank`'s doorbell says failed, if anything.
  std::optional<ShmAbort> aborted(int rank) const;

 private:
  void wake(ShmDoorbell& bell) const;
  ShmPeers(int world_size, std::size_t chunk_bytes) : world_size_(world_size), chunk_bytes_(chunk_bytes) {}
  int world_size_;
  std::size_t chunk_bytes_;
  int cpus_ = 1;
  std::vector<transport::SharedMemory> segments_;  // by rank, this rank's own included
};

}  // namespace ringgrad::collectives
