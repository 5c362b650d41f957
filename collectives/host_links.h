// HostLinks: how a communicator's host-memory calls travel, and the Link each one runs over.
// The first host collective decides, on every rank alike: through shared memory when every
// rank is on this host (links/shm_link.h, or links/plain_shm_link.h under
// RINGGRAD_SHM_LINK=plain), else over TCP (links/host_link.h). Point-to-point
// calls and a group's calls always take TCP (a group shares the job's connections).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "collectives/comm_options.h"
#include "collectives/group.h"
#include "collectives/host_layout.h"
#include "collectives/links/host_memory_link.h"
#include "collectives/links/link.h"
#include "collectives/task.h"
#include "transport/transport.h"

namespace ringgrad::collectives {

class ShmPeers;

class HostLinks {
 public:
  /// The links of a communicator of `group` (all must outlive this). A group's are TCP from the
  /// start. `callers_waiting` counts callers blocked on queued calls (links/shm_link.h, ShmPoll).
  HostLinks(transport::Transport& transport, const CommOptions& options, const Group& group, const HostLayout& hosts,
            const std::atomic<int>* callers_waiting);
  ~HostLinks();
  HostLinks(const HostLinks&) = delete;
  HostLinks& operator=(const HostLinks&) = delete;

  /// Decides the path once: every rank calls it when its first host collective passed the
  /// argument check (it meets the others through the store to set up shared memory). Later
  /// calls return at once.
  void choose_path();
  /// The link `task` runs over, its messages tagged `tag`: shared memory for a collective once
  /// chosen, else TCP. Valid for this one call.
  std::unique_ptr<Link> link(const Task& task, uint64_t tag);
  /// "shared memory", or "TCP (why not shared memory)"; empty until decided. Thread-safe.
  std::string path() const;
  /// Tells the ranks waiting in shared memory that this one runs no collective from `first` on.
  void abort(int rank, uint64_t first);

 private:
  transport::Transport& transport_;
  const CommOptions& options_;
  const Group& group_;
  const HostLayout& hosts_;
  const std::atomic<int>* callers_waiting_;
  HostBuffers buffers_;  // reused by every link, one call at a time
  std::unique_ptr<ShmPeers> shm_;
  bool decided_ = false;
  // How shared-memory links wait (ShmPoll): a call on the worker runs beside a caller who may
  // compute meanwhile, two busy threads a rank; one otherwise.
  std::chrono::microseconds poll_alone_{0}, poll_beside_caller_{0};
  mutable std::mutex path_mutex_;
  std::string path_;
};

}  // namespace ringgrad::collectives
