// TorchWork: c10d's Work (what `dist.all_reduce(..., async_op=True)` returns) for one call that
// ringgrad runs. It completes on ringgrad's worker thread (collectives::Work::then): there it
// copies the results into the caller's tensors where the call wrote copies, records the error
// if any, and wakes wait(). Its Future (DDP's buckets wait on it, comm hooks chain on it) is
// completed there too while nobody holds it, else on one of the process group's FutureThreads:
// a hook chained on it may issue a collective and wait for it, which the worker would have to
// run while it waits.
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "collectives/torch/future_threads.h"
#include "collectives/work.h"

namespace ringgrad::torch_backend {

class TorchWork : public c10d::Work {
 public:
  /// `outputs`: what result() and the Future hold; `buffers`: every tensor the call reads or
  /// writes, held until it ends (staged copies the caller never sees); `finish`: run on
  /// ringgrad's worker when the call succeeded, before anyone is woken (copies into the
  /// caller's tensors). `rank` and `type` are c10d's bookkeeping (this rank, the OpType), and
  /// with `inputs` what torch's profiler records ("ringgrad:all_reduce", the input shapes);
  /// `threads` (the process group's) complete a Future handed out before the call ended.
  TorchWork(int rank, c10d::OpType type, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor> outputs,
            std::vector<at::Tensor> buffers, std::function<void()> finish, FutureThreads& threads);

  /// Binds the ringgrad call this Work stands for; called once, right after the call is issued.
  void start(collectives::Work call);

  /// Blocks until the call finished, or at most `timeout` (then throws "Operation timed out");
  /// rethrows the call's error. kNoTimeout waits as long as the call runs.
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  // On ringgrad's worker (or on start's thread when the call already ended).
  void complete(std::exception_ptr error) noexcept;
  // Completes future_ with the outputs or the error.
  void complete_future(std::exception_ptr error);

  collectives::Work call_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> buffers_;
  std::function<void()> finish_;
  FutureThreads& threads_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex future_mutex_;
  bool future_handed_out_ = false;  // getFuture was called: callbacks may be on future_
};

}  // namespace ringgrad::torch_backend
