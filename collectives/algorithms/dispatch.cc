// From (collective, algorithm) to the algorithm files; the same for every Link.
#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void run_collective(Link& link, CollKind kind, Algo algo, const CollArgs& a, int peer, const HostLayout& hosts) {
  switch (kind) {
    case CollKind::kBroadcast: return (algo == Algo::kTree ? tree_broadcast : chain_broadcast)(link, a);
    case CollKind::kReduce: return (algo == Algo::kTree ? tree_reduce : chain_reduce)(link, a);
    case CollKind::kAllReduce:
      if (algo == Algo::kTree) return tree_all_reduce(link, a);
      if (algo == Algo::kHalvingDoubling) return halving_doubling_all_reduce(link, a);
      if (algo == Algo::kHierarchical) return hierarchical_all_reduce(link, a, hosts);
      if (algo == Algo::kOneShot) return one_shot_all_reduce(link, a);
      return ring_all_reduce(link, a);
    case CollKind::kAllGather: return ring_all_gather(link, a);
    case CollKind::kReduceScatter: return ring_reduce_scatter(link, a);
    case CollKind::kGather: return linear_gather(link, a);
    case CollKind::kScatter: return linear_scatter(link, a);
    case CollKind::kAllToAll: return (algo == Algo::kBruck ? bruck_all_to_all : pairwise_all_to_all)(link, a);
    case CollKind::kBarrier: return dissemination_barrier(link);
    case CollKind::kSend: return link.send(peer, a.send, a.count * dtype_size(a.dtype));
    case CollKind::kRecv: return link.recv(peer, a.recv, a.count * dtype_size(a.dtype));
    case CollKind::kBatchSendRecv:  // its ops are not CollArgs: irecv_isend_waitall
    case CollKind::kAllToAllV: return;  // nor its counts: pairwise_all_to_all_v
  }
}

}  // namespace ringgrad::collectives
