// Work: the handle of an asynchronous operation (torch.distributed's Work, MPI's request).
#pragma once

#include <exception>
#include <functional>
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
  /// Runs callback(error) once the operation finished (error null when it succeeded), before
  /// wait() returns: on the worker thread that ran it, or at once on this thread when it has
  /// already finished. For a caller with a completion of its own to signal (a torch Work).
  /// Callbacks run in the order they were added; one must not throw, nor wait on this Work.
  void then(std::function<void(std::exception_ptr)> callback);

  struct State;

 private:
  friend class CallQueue;
  explicit Work(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

}  // namespace ringgrad::collectives
