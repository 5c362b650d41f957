// TorchWork: completion on ringgrad's worker, wait, and the Future.
#include "collectives/torch/torch_work.h"

#include <ATen/core/jit_type.h>

namespace ringgrad::torch_backend {

namespace {

// The profiler's name of a call: gloo's names, under ringgrad's (PyTorch's suite looks for them).
const char* profiling_title(c10d::OpType type) {
  switch (type) {
    case c10d::OpType::BROADCAST: return "ringgrad:broadcast";
    case c10d::OpType::ALLREDUCE:
    case c10d::OpType::ALLREDUCE_COALESCED: return "ringgrad:all_reduce";
    case c10d::OpType::REDUCE: return "ringgrad:reduce";
    case c10d::OpType::ALLGATHER:
    case c10d::OpType::ALLGATHER_COALESCED: return "ringgrad:all_gather";
    case c10d::OpType::_ALLGATHER_BASE: return "ringgrad:all_gather_into_tensor";
    case c10d::OpType::GATHER: return "ringgrad:gather";
    case c10d::OpType::SCATTER: return "ringgrad:scatter";
    case c10d::OpType::REDUCE_SCATTER: return "ringgrad:reduce_scatter";
    case c10d::OpType::_REDUCE_SCATTER_BASE: return "ringgrad:reduce_scatter_tensor";
    case c10d::OpType::ALLTOALL_BASE:
    case c10d::OpType::ALLTOALL: return "ringgrad:all_to_all";
    case c10d::OpType::SEND: return "ringgrad:send";
    case c10d::OpType::RECV: return "ringgrad:recv";
    case c10d::OpType::BARRIER: return "ringgrad:barrier";
    default: return "ringgrad:unknown";
  }
}

}  // namespace

TorchWork::TorchWork(int rank, c10d::OpType type, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor> outputs,
                     std::vector<at::Tensor> buffers, std::function<void()> finish, FutureThreads& threads)
    : c10d::Work(rank, type, profiling_title(type), inputs),
      outputs_(std::move(outputs)),
      buffers_(std::move(buffers)),
      finish_(std::move(finish)),
      threads_(threads),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

void TorchWork::start(collectives::Work call) {
  call_ = std::move(call);
  // The callback holds a reference, so this Work outlives the call even if torch drops it.
  call_.then([self = c10::intrusive_ptr<TorchWork>::reclaim_copy(this)](std::exception_ptr error) {
    self->complete(std::move(error));
  });
}

void TorchWork::complete(std::exception_ptr error) noexcept {
  if (!error && finish_) {
    try {
      finish_();
    } catch (...) {
      error = std::current_exception();
    }
  }
  finish_ = nullptr;  // drops the staged tensors now, not when torch drops this Work
  buffers_.clear();
  {
    // Nobody holds the Future yet: no callback can be on it, so it completes here (getFuture
    // waits on the lock meanwhile, and a callback added later runs on the thread that adds it).
    std::lock_guard lock(future_mutex_);
    if (!future_handed_out_) {
      complete_future(error);
    } else {
      threads_.post([self = c10::intrusive_ptr<TorchWork>::reclaim_copy(this), error] { self->complete_future(error); });
    }
  }
  finish(error);  // c10d::Work: completed_, exception_, and wakes wait()
}

void TorchWork::complete_future(std::exception_ptr error) {
  if (error) future_->setError(error);
  else future_->markCompleted(c10::IValue(outputs_));
}

bool TorchWork::wait(std::chrono::milliseconds timeout) {
  if (timeout == kNoTimeout) {
    try {
      call_.wait();  // counts as a waiting caller: a shared-memory link polls while one waits
    } catch (...) {
      // The same error is rethrown below, from c10d's record of it.
    }
  }
  c10d::Work::wait(timeout);
  bool handed_out = false;
  {
    std::lock_guard lock(future_mutex_);
    handed_out = future_handed_out_;
  }
  if (handed_out) future_->wait();  // so that after wait() the Future has its value
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> TorchWork::getFuture() {
  std::lock_guard lock(future_mutex_);
  future_handed_out_ = true;
  return future_;
}

}  // namespace ringgrad::torch_backend
