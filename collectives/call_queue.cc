// CallQueue: submit, the worker, and Work, the handle a caller waits on.
#include "collectives/call_queue.h"

#include <chrono>
#include <functional>
#include <vector>

#include <fmt/format.h>

#include "collectives/enum_format.h"
#include "transport/error.h"

namespace ringgrad::collectives {

struct Work::State {
  std::mutex mutex;
  std::condition_variable cv;
  bool finished = false;  // the operation ended and `error` is final; the callbacks run next
  bool done = false;      // ... and they have run: wait() returns
  double done_at_s = 0;
  std::exception_ptr error;
  std::vector<std::function<void(std::exception_ptr)>> callbacks;  // Work::then's
  std::shared_ptr<std::atomic<int>> callers_waiting;  // the runner's count (it may end first)
};

namespace {

void complete(Work::State& state, std::exception_ptr error) {
  std::vector<std::function<void(std::exception_ptr)>> callbacks;
  {
    std::lock_guard lock(state.mutex);
    state.finished = true;
    state.done_at_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    state.error = error;
    callbacks.swap(state.callbacks);
  }
  for (auto& callback : callbacks) callback(error);
  {
    std::lock_guard lock(state.mutex);
    state.done = true;
  }
  state.cv.notify_all();
}

}  // namespace

void Work::wait() {
  if (!state_) return;
  std::unique_lock lock(state_->mutex);
  if (!state_->done) {  // counted while it waits: the worker may poll for it meanwhile
    state_->callers_waiting->fetch_add(1, std::memory_order_relaxed);
    state_->cv.wait(lock, [&] { return state_->done; });
    state_->callers_waiting->fetch_sub(1, std::memory_order_relaxed);
  }
  if (state_->error) std::rethrow_exception(state_->error);
}

bool Work::completed() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

void Work::then(std::function<void(std::exception_ptr)> callback) {
  if (!state_) return callback(nullptr);
  std::unique_lock lock(state_->mutex);
  if (!state_->finished) {
    state_->callbacks.push_back(std::move(callback));
    return;
  }
  const std::exception_ptr error = state_->error;
  lock.unlock();
  callback(error);
}

double Work::completed_at() const {
  if (!state_) return 0;
  std::lock_guard lock(state_->mutex);
  return state_->done_at_s;
}

CallQueue::CallQueue(CallRunner& runner, const Group& group, FlightRecorder& recorder)
    : runner_(runner), group_(group), recorder_(recorder) {
  worker_ = std::thread([this] { worker_loop(); });
}

CallQueue::~CallQueue() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void CallQueue::throw_broken(CollKind kind) const {
  throw transport::TransportError(fmt::format("{} on {}: the communicator is broken by an earlier error: {}",
                                              kind, describe_rank(group_), broken_));
}

// A small blocking call is mostly this function's own cost, so it takes the lock once on the
// way in, reads the clock once for queued-and-started, and runs inline without a Work::State.
Work CallQueue::submit(Task&& task, bool blocking) {
  std::unique_lock lock(mutex_);
  if (!broken_.empty()) throw_broken(task.kind);
  const bool inline_run = blocking && queue_.empty() && !running_;
  // The Work state, a queued call's largest allocation, is made before the sequence number is
  // taken, so that a call refused for want of it leaves this rank in step with the others.
  std::shared_ptr<Work::State> state = inline_run ? nullptr : std::make_shared<Work::State>();
  CommStats::Entry& counted = stats_.by_kind[task.kind];
  task.seq = next_seq_;  // a send/recv runs before the collective issued after it
  if (is_collective(task.kind)) {
    recorder_.queued(task.seq, task.kind, task.bytes, task.args.dtype, task.algo, inline_run);
    ++next_seq_;
  }
  ++counted.calls;
  counted.bytes += task.bytes;
  if (inline_run) {
    running_ = true;
    lock.unlock();
    const std::exception_ptr error = run_and_record(task);
    lock.lock();
    running_ = false;
    // Only the worker waits on cv_: wake it only if something was queued meanwhile (or the
    // queue is closing). A wake-up per call costs two context switches, and on a machine with
    // as many ranks as cores it takes the CPU from a rank that is polling.
    if (!queue_.empty() || stop_) cv_.notify_all();
    lock.unlock();
    if (error) std::rethrow_exception(error);
    return Work();
  }
  state->callers_waiting = runner_.callers_waiting();
  task.state = state;
  queue_.push_back(std::make_unique<Task>(std::move(task)));
  lock.unlock();
  cv_.notify_all();
  Work work(state);
  if (blocking) work.wait();
  return work;
}

std::exception_ptr CallQueue::run_and_record(Task& task) noexcept {
  CallRunner::Outcome outcome = runner_.execute(task);
  if (is_collective(task.kind)) recorder_.ended(task.seq, !outcome.error);
  if (!outcome.breaks.empty()) {
    {
      std::lock_guard lock(mutex_);
      if (broken_.empty()) broken_ = std::move(outcome.breaks);
    }
    try {
      recorder_.dump();  // what this rank was doing, for the launcher's desync report
    } catch (...) {
      // The call's own error matters more than a report that could not be written.
    }
  }
  return outcome.error;
}

void CallQueue::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return (!queue_.empty() && !running_) || (stop_ && queue_.empty() && !running_); });
    if (queue_.empty()) return;
    std::unique_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    // A queued call may find the communicator broken by the one before it.
    std::exception_ptr error;
    if (!broken_.empty())
      error = std::make_exception_ptr(transport::TransportError(
          fmt::format("{}: the communicator is broken by an earlier error: {}", where(*task, group_), broken_)));
    lock.unlock();
    if (!error) {
      if (is_collective(task->kind)) recorder_.started(task->seq);
      error = run_and_record(*task);
    } else if (is_collective(task->kind)) {
      recorder_.ended(task->seq, false);
    }
    complete(*task->state, error);
    lock.lock();
    running_ = false;
  }
}

CommStats CallQueue::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CallQueue::reset_stats() {
  std::lock_guard lock(mutex_);
  stats_ = {};
}

}  // namespace ringgrad::collectives
