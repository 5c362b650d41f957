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
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "collectives/call_runner.h"
#include "collectives/comm_stats.h"
#include "collectives/flight_recorder.h"
#include "collectives/group.h"
#include "collectives/task.h"
#include "collectives/work.h"

namespace ringgrad::collectives {

class CallQueue {
 public:
  /// Starts the worker; `runner` runs the calls, `group` names this rank in errors, `recorder`
  /// is told of every collective. All three must outlive the queue.
  CallQueue(CallRunner& runner, const Group& group, FlightRecorder& recorder);
  /// Runs what is queued, then stops the worker.
  ~CallQueue();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  /// Queues `task` (its algorithm resolved, its arguments valid or left for the argument check
  /// to report) and returns its Work; a blocking call returns once it finished, and rethrows its
  /// error. Throws TransportError when an earlier call broke the communicator.
  Work submit(Task&& task, bool blocking);
  /// Calls and bytes submitted so far (since the last reset).
  CommStats stats() const;
  void reset_stats();
 private:
  void worker_loop();
  [[noreturn]] void throw_broken(CollKind kind) const;  // mutex_ held
  // Runs `task` on this thread and records how it ended; returns its error.
  std::exception_ptr run_and_record(Task& task) noexcept;

  CallRunner& runner_;
  const Group& group_;
  FlightRecorder& recorder_;

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
