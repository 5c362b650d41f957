// How errors name a rank of a group: its rank there, the group, and the job ranks behind it.
#include "collectives/group.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ringgrad::collectives {

std::string describe_rank(const Group& group) {
  if (group.is_world()) return fmt::format("rank {}", group.rank);
  return fmt::format("rank {} of group {} (job rank {}; the group is job ranks {})", group.rank, group.name,
                     group.job_rank(group.rank), fmt::join(group.members, ", "));
}

}  // namespace ringgrad::collectives
