// HostLinks: shared memory or TCP, decided once; a Link per call.
#include "collectives/host_links.h"

#include <fmt/format.h>

#include "collectives/links/host_link.h"
#include "collectives/links/plain_shm_link.h"
#include "collectives/links/shm_link.h"
#include "collectives/links/shm_peers.h"

namespace ringgrad::collectives {

HostLinks::HostLinks(transport::Transport& transport, const CommOptions& options, const Group& group,
                     const HostLayout& hosts, const std::atomic<int>* callers_waiting)
    : transport_(transport), options_(options), group_(group), hosts_(hosts), callers_waiting_(callers_waiting) {
  if (!group_.is_world()) {  // a group's inboxes would be the parent's: it keeps TCP
    decided_ = true;
    path_ = "TCP (a group travels on the job's TCP connections, on a stream of its own)";
  } else if (group_.size == 1) {
    decided_ = true;  // one rank: nothing travels, and path() stays empty
  }
}

HostLinks::~HostLinks() = default;

void HostLinks::choose_path() {
  if (decided_) return;
  decided_ = true;
  std::string why = hosts_.hosts() > 1 ? fmt::format("the ranks are on {} hosts", hosts_.hosts()) : "";
  if (why.empty()) shm_ = ShmPeers::connect(transport_, options_.chunk_bytes, options_.shared_memory, options_.shm_stores,
                                                options_.shm_link, why);
  if (shm_) {
    const int p = group_.size;
    poll_alone_ = options_.shm_poll.value_or(shm_poll_default(p, shm_->cpus()));
    poll_beside_caller_ = options_.shm_poll.value_or(shm_poll_default(2 * p, shm_->cpus()));
  }
  std::lock_guard lock(path_mutex_);
  path_ = !shm_ ? fmt::format("TCP ({})", why)
          : options_.shm_link == ShmLinkKind::kPlain ? "shared memory (the plain link)" : "shared memory";
}

std::unique_ptr<Link> HostLinks::link(const Task& task, uint64_t tag) {
  if (shm_ && is_collective(task.kind) && options_.shm_link == ShmLinkKind::kPlain)
    return std::make_unique<PlainShmLink>(*shm_, transport_, task.seq, tag, buffers_);
  if (shm_ && is_collective(task.kind)) {
    // A queued task runs on the worker: it polls long only while a caller waits for it.
    const ShmPoll poll{poll_alone_, poll_beside_caller_, task.state ? callers_waiting_ : nullptr};
    return std::make_unique<ShmLink>(*shm_, transport_, task.seq, tag, poll, buffers_);
  }
  return std::make_unique<HostLink>(transport_, group_, tag, options_.chunk_bytes, buffers_);
}

std::string HostLinks::path() const {
  std::lock_guard lock(path_mutex_);
  return path_;
}

void HostLinks::abort(int rank, uint64_t first) {
  if (shm_) shm_->abort(rank, first);
}

}  // namespace ringgrad::collectives
