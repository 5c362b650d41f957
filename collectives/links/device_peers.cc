// Path choice and IPC setup for device collectives. Two rounds through the store: every rank
// publishes who it is (host, boot id, GPU bus id), then, for each peer, its offer (IPC handles
// of its inbox and events, or none). A pair uses CUDA IPC only when both sides offered it.
#include "collectives/links/device_peers.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>

namespace ringgrad::collectives {
namespace {

struct Identity {
  char host[256];     // gethostname
  char boot_id[40];   // the kernel's boot id: same host and same boot id = one machine
  char bus_id[32];    // PCI bus id of the GPU, the same in every process whatever its ordinal
  int device;         // ordinal in its own process, for messages
};

struct Offer {
  uint8_t ipc;  // 1: handles below are valid
  uint64_t chunk_bytes;
  cudaIpcMemHandle_t inbox;                // the offering rank's inbox for the reader's pieces
  cudaIpcEventHandle_t drained[kSlots];    // recorded by the offering rank when a slot is consumed
  cudaIpcEventHandle_t filled[kSlots];     // recorded by the offering rank after filling the reader's slot
};

int set_device(int device) {
  transport::cuda_check(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device));
  return device;
}

Identity identify(int device) {
  Identity id{};
  ::gethostname(id.host, sizeof id.host - 1);
  std::ifstream("/proc/sys/kernel/random/boot_id").getline(id.boot_id, sizeof id.boot_id);
  transport::cuda_check(cudaDeviceGetPCIBusId(id.bus_id, sizeof id.bus_id, device), "cudaDeviceGetPCIBusId");
  id.device = device;
  return id;
}

// Whether this rank can map the peer's device memory, and what the pair's path is called.
bool ipc_possible(const Identity& me, const Identity& other, std::string& description) {
  if (std::string(me.host) != other.host || std::string(me.boot_id) != other.boot_id) {
    description = fmt::format("host staging over TCP (peer on host {})", other.host);
    return false;
  }
  if (std::string(me.bus_id) == other.bus_id) {
    description = "cuda-ipc (same GPU)";
    return true;
  }
  int ordinal = -1, can = 0;
  if (cudaDeviceGetByPCIBusId(&ordinal, other.bus_id) != cudaSuccess) {
    cudaGetLastError();
    description = fmt::format("host staging over TCP (the peer's GPU {} is not visible here)", other.bus_id);
    return false;
  }
  transport::cuda_check(cudaDeviceCanAccessPeer(&can, me.device, ordinal), "cudaDeviceCanAccessPeer");
  if (!can) {
    description = fmt::format("host staging over TCP (GPU {} cannot access GPU {} peer-to-peer)", me.bus_id, other.bus_id);
    return false;
  }
  description = fmt::format("cuda-ipc peer-to-peer (GPU {} -> GPU {}, peer access enabled on mapping)", me.bus_id,
                            other.bus_id);
  return true;
}

std::vector<transport::Event> make_events() {
  std::vector<transport::Event> events;
  for (int k = 0; k < kSlots; ++k) events.emplace_back();
  return events;
}

}  // namespace

DevicePeers::DevicePeers(transport::Transport& transport, int device, std::size_t chunk_bytes)
    : device_(set_device(device)), chunk_bytes_(chunk_bytes) {
  transport::Store& store = transport.store();
  const int r = transport.rank(), p = transport.world_size();
  const Identity me = identify(device);
  transport::store_set(store, fmt::format("collectives/device/id/{}", r), me);
  peers_.resize(static_cast<std::size_t>(p));
  std::vector<uint8_t> offered(static_cast<std::size_t>(p), 0);
  for (int q = 0; q < p; ++q) {
    if (q == r) continue;
    const auto other = transport::store_get<Identity>(store, fmt::format("collectives/device/id/{}", q));
    Peer& peer = peers_[static_cast<std::size_t>(q)];
    Offer offer{};
    offer.chunk_bytes = chunk_bytes;
    if (ipc_possible(me, other, peer.description)) {
      peer.inbox = transport::DeviceMemory(kSlots * chunk_bytes);
      peer.drained = make_events();
      peer.filled = make_events();
      offer.ipc = 1;
      offer.inbox = transport::export_memory(peer.inbox);
      for (int k = 0; k < kSlots; ++k) {
        offer.drained[k] = peer.drained[static_cast<std::size_t>(k)].export_handle();
        offer.filled[k] = peer.filled[static_cast<std::size_t>(k)].export_handle();
      }
    }
    offered[static_cast<std::size_t>(q)] = offer.ipc;
    transport::store_set(store, fmt::format("collectives/device/offer/{}->{}", r, q), offer);
  }
  for (int q = 0; q < p; ++q) {
    if (q == r) continue;
    const auto theirs = transport::store_get<Offer>(store, fmt::format("collectives/device/offer/{}->{}", q, r));
    Peer& peer = peers_[static_cast<std::size_t>(q)];
    if (theirs.chunk_bytes != chunk_bytes)
      throw transport::TransportError(fmt::format("rank {}: device chunk bytes {} but rank {} uses {} "
                                                  "(RINGGRAD_DEVICE_CHUNK_BYTES differs)", r, chunk_bytes, q,
                                                  theirs.chunk_bytes));
    if (offered[static_cast<std::size_t>(q)] && theirs.ipc) {
      peer.path = PeerPath::kIpc;
      peer.peer_inbox = transport::IpcMemory(theirs.inbox);
      for (int k = 0; k < kSlots; ++k) {
        peer.peer_drained.emplace_back(theirs.drained[k]);
        peer.peer_filled.emplace_back(theirs.filled[k]);
      }
    } else {
      if (offered[static_cast<std::size_t>(q)]) peer.description = "host staging over TCP (the peer cannot map this GPU)";
      peer.path = PeerPath::kStaged;
      peer.inbox = {};
      peer.drained.clear();
      peer.filled.clear();
      peer.staged_out = transport::PinnedMemory(chunk_bytes);
      peer.staged_in = transport::PinnedMemory(chunk_bytes);
      if (staging_.get() == nullptr) staging_ = transport::DeviceMemory(chunk_bytes);
    }
    std::fprintf(stderr, "[rank %d] peer %d: %s\n", r, q, peer.description.c_str());
  }
}

std::byte* DevicePeers::workspace(std::size_t bytes) {
  if (workspace_.size() < bytes) {
    workspace_ = {};  // free first: the old and new ones need not fit together
    workspace_ = transport::DeviceMemory(bytes);
  }
  return workspace_.get();
}

}  // namespace ringgrad::collectives
