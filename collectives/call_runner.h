// CallRunner: runs one call of a communicator, on the thread its CallQueue gives it. In order:
// the argument check (check.h; a stage a reader may skip), then the call's algorithm
// (algorithms/dispatch.cc) over the link its memory takes (host_links.h), or the backend that
// runs it instead: MPI for host memory under RINGGRAD_BACKEND=mpi, device_backend.h for device
// memory. A small call whose data rides in the check's message (algorithms/piggyback.h) is done
// when the check is. A transport failure breaks the communicator: every rank is told at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "collectives/check.h"
#include "collectives/comm_options.h"
#include "collectives/group.h"
#include "collectives/host_layout.h"
#include "collectives/host_links.h"
#include "collectives/task.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class DeviceBackend;
class MpiBackend;

class CallRunner {
 public:
  /// Runs the calls of a communicator of `group` over `transport` (shared with the job's other
  /// communicators); `mpi` runs its host calls when set. Every reference must outlive it.
  CallRunner(std::shared_ptr<transport::Transport> transport, const CommOptions& options, const Group& group,
             const HostLayout& hosts, std::unique_ptr<MpiBackend> mpi);
  ~CallRunner();
  CallRunner(const CallRunner&) = delete;
  CallRunner& operator=(const CallRunner&) = delete;

  /// How a call ended: its error (null: none) and, when that error leaves the ranks out of step
  /// (a transport failure), why; every later call then fails with it.
  struct Outcome {
    std::exception_ptr error;
    std::string breaks;
  };
  /// Runs `task` on this thread; never throws.
  Outcome execute(Task& task) noexcept;
  /// Callers blocked in Work::wait on this runner's calls, counted by Work::wait: a
  /// shared-memory link polls longer while one waits (links/shm_link.h, ShmPoll).
  const std::shared_ptr<std::atomic<int>>& callers_waiting() const { return callers_waiting_; }
  /// How host collectives travel (HostLinks::path).
  std::string host_path() const;
  /// The MPI backend, or nullptr.
  MpiBackend* mpi() const { return mpi_.get(); }

 private:
  // The call, start to end; throws what it fails with.
  void run_call(Task& task);

  std::shared_ptr<transport::Transport> transport_;  // reset when broken
  // Shared with every Work::State, which may outlive the runner; counted without a lock.
  std::shared_ptr<std::atomic<int>> callers_waiting_ = std::make_shared<std::atomic<int>>(0);
  const CommOptions& options_;
  const Group& group_;
  const HostLayout& hosts_;
  std::unique_ptr<HostLinks> links_;
  std::unique_ptr<MpiBackend> mpi_;
  std::unique_ptr<DeviceBackend> device_;  // made by the first device call
  // The check's findings, reused from call to call (their vectors keep their capacity).
  std::vector<CallHeader> heads_;
  std::vector<const std::byte*> bodies_;
};

}  // namespace ringgrad::collectives
