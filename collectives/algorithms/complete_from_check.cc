// Completing a call whose data rode with the argument check (check.h: data_rides). The check's
// one exchange already brought this rank what every peer sends it, so what is left is local:
// the one-shot all-reduce's reduction in rank order, or copies into place. A small all-gather,
// broadcast or all-to-all is then one exchange of headers in all, as the all-reduce is.
#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void complete_from_check(Link& link, CollKind kind, const CollArgs& a, std::span<const std::byte* const> from,
                         std::byte* scratch) {
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  switch (kind) {
    case CollKind::kAllReduce: return reduce_in_rank_order(link, from, a.recv, a.count, a.dtype, a.op, scratch);
    case CollKind::kBroadcast: return link.copy(a.recv, from[static_cast<std::size_t>(a.root)], bytes);
    default:  // all-gather and all-to-all: rank q's block lands in block q (in place, ours is there already)
      for (std::size_t q = 0; q < from.size(); ++q) link.copy(a.recv + q * bytes, from[q], bytes);
  }
}

}  // namespace ringgrad::collectives
