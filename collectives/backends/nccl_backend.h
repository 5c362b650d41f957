// NcclBackend: device collectives handed to NCCL, so a program moves from ringgrad's
// algorithms to NCCL by RINGGRAD_BACKEND=nccl and nothing else. Rank 0's ncclUniqueId travels
// through the rendezvous store; calls run on the backend's own stream, and a call that does
// not finish within the timeout aborts the NCCL communicator instead of hanging. Built only
// where CMake found NCCL (RINGGRAD_HAVE_NCCL=1).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "collectives/backends/device_backend.h"
#include "transport/cuda_ipc.h"
#include "transport/store.h"

struct ncclComm;  // nccl.h's ncclComm_t is ncclComm*

namespace ringgrad::collectives {

class NcclBackend final : public DeviceBackend {
 public:
  /// Creates the NCCL communicator of `world_size` ranks on CUDA device `device`; store keys
  /// start with `key_prefix` (one prefix per NCCL communicator of a job). Collective.
  /// Throws CollectiveError when two ranks share a GPU (NCCL needs one GPU per rank),
  /// TransportError when the ranks do not all join within `timeout`, CudaError.
  NcclBackend(transport::Store& store, int rank, int world_size, int device, std::chrono::milliseconds timeout,
              const std::string& key_prefix);
  ~NcclBackend() override;
  NcclBackend(const NcclBackend&) = delete;
  NcclBackend& operator=(const NcclBackend&) = delete;

  /// ncclBroadcast/Reduce/AllReduce/AllGather/ReduceScatter/Send/Recv (gather, scatter and
  /// all_to_all as grouped ncclSend/Recv); `algo` and `tag` are
  /// ignored (NCCL picks its own algorithm; its calls match in issue order). AVG is NCCL's sum
  /// followed by ringgrad's division kernel, so results are bit for bit the ringgrad backend's.
  /// Throws TransportError after ncclCommAbort when NCCL fails or does not finish in time.
  void run(CollKind kind, Algo algo, const CollArgs& args, int peer, uint64_t tag) override;
  /// The batch's ncclSend/ncclRecv between ncclGroupStart and ncclGroupEnd.
  void run_batch(std::span<const P2POp> ops, uint64_t tag) override;

 private:
  // Polls the communicator until its last call is enqueued, then the stream until it is idle.
  void wait(std::string_view what, bool stream_too);
  // `result` (an ncclResult_t) of enqueueing `what`: on an error, aborts the communicator
  // and throws TransportError.
  void check_enqueued(int result, const std::string& what);

  int rank_, world_size_, device_;
  std::chrono::milliseconds timeout_;
  transport::Stream stream_;
  ncclComm* comm_ = nullptr;
};

}  // namespace ringgrad::collectives
