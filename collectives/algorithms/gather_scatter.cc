// Linear gather and scatter: the root receives every rank's block (gather) or sends every rank
// its block (scatter) directly, all p-1 transfers in flight at once. With n the root's whole
// buffer: T = (p-1) alpha + (p-1)/p n beta, the root's link carrying every byte (MPI's linear
// algorithms; a binomial tree would pay log2(p) alpha for the same bytes).
#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void linear_gather(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t block = a.count * dtype_size(a.dtype);
  std::vector<Pending> pending;
  if (r == a.root) {
    for (int q = 0; q < p; ++q)
      if (q != r) link.irecv(q, a.recv + static_cast<std::size_t>(q) * block, block, pending);
    link.copy(a.recv + static_cast<std::size_t>(r) * block, a.send, block);
  } else {
    link.isend(a.root, a.send, block, pending);
  }
  wait_all(pending);
}

void linear_scatter(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t block = a.count * dtype_size(a.dtype);
  std::vector<Pending> pending;
  if (r == a.root) {
    for (int q = 0; q < p; ++q)
      if (q != r) link.isend(q, a.send + static_cast<std::size_t>(q) * block, block, pending);
    link.copy(a.recv, a.send + static_cast<std::size_t>(r) * block, block);
  } else {
    link.irecv(a.root, a.recv, block, pending);
  }
  wait_all(pending);
}

}  // namespace ringgrad::collectives
