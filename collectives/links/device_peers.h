// DevicePeers: what a communicator keeps for device collectives, set up once by the first one:
// its stream, a growable device workspace, and a path to every peer, chosen per pair and
// printed: CUDA IPC for a peer on this host (same GPU, or another GPU it can access
// peer-to-peer), else host staging through pinned buffers over TCP. For each IPC peer this rank
// owns an inbox of kSlots pieces in device memory that the peer writes, plus IPC events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "transport/cuda_ipc.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

/// Pieces in flight per IPC peer and direction: each is one slot of the receiver's inbox.
/// Four rather than two: a piece costs a control message each way (tens of microseconds over
/// loopback TCP), about what copying 4 MiB costs on the device, so two would leave it idle.
inline constexpr int kSlots = 4;

enum class PeerPath { kSelf, kIpc, kStaged };

/// A control message of the IPC protocol (sent over TCP): piece ready in slot, or slot free.
struct ControlMessage {
  uint32_t kind;  // kReady or kCredit
  uint32_t slot;
  uint64_t bytes;  // kReady: bytes in the slot
};
inline constexpr uint32_t kReady = 1, kCredit = 2;

/// This rank's state for one peer. Counters run over the communicator's life and are balanced
/// at the end of every collective (acked == sent, consumed == announced), so no control message
/// is left in flight between collectives.
struct Peer {
  PeerPath path = PeerPath::kSelf;
  std::string description;  // "cuda-ipc (same GPU)", ...

  // kIpc, receiving from the peer: the inbox it writes, events it records when a slot is
  // filled (opened here), events recorded here when a slot was consumed (it waits on them).
  transport::DeviceMemory inbox;
  std::vector<transport::Event> peer_filled, drained;
  // kIpc, sending to the peer: its inbox mapped here, events recorded here after filling a
  // slot, and its events that say a slot was consumed.
  transport::IpcMemory peer_inbox;
  std::vector<transport::Event> filled, peer_drained;
  uint64_t sent = 0, acked = 0;      // pieces written into the peer's inbox; credits back
  std::deque<uint64_t> announced;    // sizes of pieces the peer said are ready, not yet consumed
  uint64_t consumed = 0;             // pieces consumed from the inbox
  transport::Request control;        // the receive of the next control message, when posted
  bool control_posted = false;
  ControlMessage control_message{};

  // kStaged: one piece each way in pinned memory, and the transfers in flight.
  transport::PinnedMemory staged_out, staged_in;
  transport::Request staged_send, staged_recv;
  bool staged_send_busy = false, staged_recv_posted = false;
};

class DevicePeers {
 public:
  /// Chooses and sets up the path to every peer through the transport's store, and prints it
  /// ("[rank 0] peer 1: cuda-ipc (same GPU)") to stderr. Collective: every rank calls it, on its
  /// first device call. `device`: this rank's CUDA ordinal. Throws CudaError, TransportError.
  DevicePeers(transport::Transport& transport, int device, std::size_t chunk_bytes);
  DevicePeers(const DevicePeers&) = delete;
  DevicePeers& operator=(const DevicePeers&) = delete;

  int device() const { return device_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  cudaStream_t stream() const { return stream_.get(); }
  Peer& peer(int rank) { return peers_[static_cast<std::size_t>(rank)]; }
  /// Device memory of at least `bytes`, kept and grown across calls (cudaMalloc on growth).
  std::byte* workspace(std::size_t bytes);
  /// One piece of device memory where a staged piece is put before it is reduced.
  std::byte* staging() const { return staging_.get(); }

 private:
  int device_;
  std::size_t chunk_bytes_;
  transport::Stream stream_;
  transport::DeviceMemory workspace_, staging_;
  std::vector<Peer> peers_;
};

}  // namespace ringgrad::collectives
