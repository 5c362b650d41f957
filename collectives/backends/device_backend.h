// DeviceBackend: how a Communicator runs calls on device buffers, made by its first device
// call: ringgrad's algorithms over DeviceLink (CUDA IPC / host staging), or NCCL. Host buffers
// never come here.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "collectives/algo.h"
#include "collectives/algorithms/algorithms.h"
#include "collectives/collective_error.h"
#include "collectives/comm_options.h"
#include "collectives/host_layout.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  /// Runs one collective (or send/recv with `peer`) whose buffers are on the backend's device,
  /// with messages tagged `tag`; returns when the result is in device memory. Throws
  /// transport::TransportError (dead peer, timeout), transport::CudaError, CollectiveError
  /// (a dtype/op the backend lacks, found before any data moved).
  virtual void run(CollKind kind, Algo algo, const CollArgs& args, int peer, uint64_t tag) = 0;
  /// Runs a batch of sends and receives as one operation (see Communicator::batch_send_recv).
  virtual void run_batch(std::span<const P2POp> ops, uint64_t tag) = 0;
};

/// Throws CollectiveError naming `rank` when `backend` cannot run here: nccl in a build without
/// NCCL, or with no GPU visible to this process; mpi in a build without MPI.
void check_backend(Backend backend, int rank);

/// The backend options.backend names, bound to CUDA device `device`. Collective: every rank
/// makes it on its first device call (it sets up IPC or NCCL through the store). Throws
/// CollectiveError in a build without CUDA, CudaError, TransportError.
std::unique_ptr<DeviceBackend> make_device_backend(transport::Transport& transport, const CommOptions& options,
                                                   int device, const HostLayout& hosts);

}  // namespace ringgrad::collectives
