// ProcessGroupRinggrad: ringgrad's Communicator as a torch.distributed backend (a c10d
// ProcessGroup, PyTorch 1.13), registered as "ringgrad" by `import ringgrad_torch`
// (module.cc), so that `dist.init_process_group("ringgrad")`, DDP and the rest of a PyTorch
// program run on ringgrad's collectives.
//
// The shape of a c10d backend: torch calls one virtual method per collective with a list of
// tensors and an options struct (root, ReduceOp, timeout) and gets back a Work at once; the
// call runs in the background, in issue order, and Work::wait() or the Work's Future reports
// the end. Each method here checks the tensors, stages them (tensors.h: contiguous copies where
// needed, lists flattened into one buffer) and issues the matching asynchronous Communicator
// call; its TorchWork (torch_work.h) completes on ringgrad's worker.
//
//   broadcast, allreduce, reduce, allgather, gather, scatter, reduce_scatter, barrier
//                          -> the Communicator call of the same name
//   allreduce_coalesced, allgather_coalesced, alltoall (lists)
//                          -> one call on the tensors flattened end to end
//   _allgather_base, _reduce_scatter_base -> all_gather, reduce_scatter on the flat tensors
//   alltoall_base          -> all_to_all, or all_to_all_v with split sizes
//   send, recv (tags)      -> send_async, recv_async; between startCoalescing and
//                             endCoalescing (dist.batch_isend_irecv) one batch_isend_irecv
//
// Refused by name: recv from any source, monitored barrier, ReduceOps and dtypes ringgrad lacks
// (tensors.h), tensors that are sparse or not on the CPU. Every process group, the default one
// and each new_group, is its own Communicator: its members meet through the store torch passes
// in (see the constructor), so `torchrun` needs nothing more.
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "collectives/communicator.h"
#include "collectives/torch/future_threads.h"
#include "collectives/torch/torch_work.h"
#include "collectives/p2p_op.h"

namespace ringgrad::torch_backend {


class ProcessGroupRinggrad : public c10d::ProcessGroup {
 public:
  /// Joins the group of `size` processes as `rank`: rank 0 starts ringgrad's rendezvous store
  /// on a free port and publishes where it is (its host: MASTER_ADDR, else this host's name)
  /// under "ringgrad/store" in `store` (torch's store, already prefixed per group); the others
  /// read it there; then the Communicator connects them. Operations that make no progress for
  /// `timeout` fail. Throws when the group cannot be formed within `timeout`.
  ProcessGroupRinggrad(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout);
  ~ProcessGroupRinggrad() override;

  const std::string getBackendName() const override { return "ringgrad"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void startCoalescing() override;
  void endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>& works) override;
  /// c10d's sequence number (what torch's desync checks compare): rank 0's random start, given
  /// to the others through the store, then one more per collective.
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;

  /// The Communicator underneath (its host path, statistics, flight record).
  collectives::Communicator& communicator() { return *comm_; }

 private:
  // Issues a call and wraps it in a TorchWork: `issue` returns the ringgrad Work; `inputs` are
  // the caller's (for the profiler), `buffers` what the call reads and writes (held until it
  // ends); `finish` runs after it.
  c10::intrusive_ptr<c10d::Work> run(c10d::OpType type, const std::vector<at::Tensor>& inputs,
                                     std::vector<at::Tensor> outputs, std::vector<at::Tensor> buffers,
                                     std::function<void()> finish, const std::function<collectives::Work()>& issue);

  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<FutureThreads> future_threads_ = std::make_unique<FutureThreads>();
  std::unique_ptr<collectives::Communicator> comm_;
  // Between startCoalescing and endCoalescing: the sends and receives so far, each with its
  // tag, and the Works handed out for them.
  bool coalescing_ = false;
  std::vector<collectives::P2POp> batch_;
  std::vector<uint64_t> batch_tags_;
  std::vector<c10::intrusive_ptr<TorchWork>> batch_works_;
};

}  // namespace ringgrad::torch_backend
