// CallQueue: a communicator's calls, run one at a time in the order they were issued.
// Collectives take the next sequence number, the same on every rank since every rank issues
// them in the same order; it tags their messages, so a message of one call is never taken for
// another's. One worker thread runs the queued calls, so an asynchronous call progresses while
// its caller computes (DDP's buckets during backward).
//
// Trick, inline run: a blocking call that finds nothing queued and nothing running runs on the
// caller's own thread. What it saves: the hand-off to the worker and back, two thread wake-ups,
// which would be most of a small call's time. Chosen for every blocking call it can be.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "collectives/comm_stats.h"
#include "collectives/flight_recorder.h"
#include "collectives/group.h"
#include "collectives/task.h"
#include "collectives/work.h"

namespace ringgrad::collectives {

class CallQueue {
 public:
  /// How a call ended: its error (null: none) and, when that error leaves the ranks out of step
  /// (a transport failure), why; every later call then fails with it.
  struct Outcome {
    std::exception_ptr error;
    std::string breaks;
  };
  /// Runs one call on the calling thread; never throws.
  using RunCall = std::function<Outcome(Task&)>;

  /// Starts the worker. `group` names this rank in errors; `recorder` is told of every
  /// collective; both must outlive the queue.
  CallQueue(RunCall run, const Group& group, FlightRecorder& recorder);
  /// Runs what is queued, then stops the worker.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  /// Queues `task` (its algorithm resolved, its arguments valid or left for the argument check
  /// to report) and returns its Work; a blocking call returns once it finished, and rethrows its
  /// error. Throws TransportError when an earlier call broke the communicator.
  Work submit(Task task, bool blocking);
  /// Throws TransportError naming `kind` when an earlier call broke the communicator.
  void throw_if_broken(CollKind kind) const;

  /// Calls and bytes submitted so far (since the last reset).
  CommStats stats() const;
  void reset_stats();
  /// Callers blocked in Work::wait on this queue's calls (a shared-memory link polls longer
  /// while one waits: links/shm_link.h's ShmPoll).
  const std::atomic<int>* callers_waiting() const { return callers_waiting_.get(); }

 private:
  void worker_loop();
  [[noreturn]] void throw_broken(CollKind kind) const;  // mutex_ held
  // Runs `task` on this thread and records how it ended; returns its error.
  std::exception_ptr run_and_record(Task& task);

  RunCall run_;
  const Group& group_;
  FlightRecorder& recorder_;
  // Shared with every Work::State, which may outlive the queue; counted without the lock.
  std::shared_ptr<std::atomic<int>> callers_waiting_ = std::make_shared<std::atomic<int>>(0);

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Task>> queue_;
  bool running_ = false;  // a task runs (on the worker or inline on a caller)
  bool stop_ = false;
  std::string broken_;    // the first transport error; later calls fail with it
  uint64_t next_seq_ = 0;
  CommStats stats_;
  std::thread worker_;
};

}  // namespace ringgrad::collectives
