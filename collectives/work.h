// Work: the handle of an asynchronous operation (torch.distributed's Work, MPI's request).
#pragma once

#include <memory>
#include <utility>

namespace ringgrad::collectives {

/// Handle of an asynchronous operation. The buffers must stay valid until wait() returns.
class Work {
 public:
  Work() = default;  // already complete
  /// Blocks until the operation finished; rethrows its error (CollectiveError, TransportError).
  void wait();
  /// Whether it finished (successfully or not), without blocking.
  bool completed() const;
  /// When it finished, in steady-clock seconds; 0 while it runs (and for a default Work).
  double completed_at() const;

  struct State;

 private:
  friend class CallQueue;
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace ringgrad::collectives
