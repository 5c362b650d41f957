// Group: where a communicator's ranks sit in the job. The world communicator is stream 0 and its
// rank r is the transport's rank r. A communicator made by Communicator::split has a stream of
// its own (every message it sends travels on it, so it shares the parent's connections and may
// run at the same time as the parent and its other groups: transport/stream_demux.h) and the job
// ranks of its members, in group-rank order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringgrad::collectives {

struct Group {
  uint32_t stream = 0;
  int rank = 0;              // this process's rank in the group
  int size = 1;              // ranks in the group
  std::vector<int> members;  // group rank -> job rank; empty for the world (the identity)
  std::string name;          // how errors name the group; empty for the world

  bool is_world() const { return members.empty(); }
  /// The job (transport) rank of group rank `rank`.
  int job_rank(int group_rank) const { return members.empty() ? group_rank : members[static_cast<std::size_t>(group_rank)]; }
};

/// "rank 1" for the world; "rank 1 of group tp (job rank 3; the group is job ranks 2, 3)".
std::string describe_rank(const Group& group);

}  // namespace ringgrad::collectives
