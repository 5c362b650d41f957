// Dissemination barrier (Hensgen, Finkel & Manber 1988): in round k every rank signals rank
// + 2^k and waits for rank - 2^k; ceil(log2 p) rounds, T = ceil(log2 p) alpha, any p.
#include <cstddef>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void dissemination_barrier(Link& link) {
  const int p = link.world_size(), r = link.rank();
  std::byte out{1}, in{0};
  for (int k = 1; k < p; k *= 2) link.send_recv((r + k) % p, &out, 1, (r - k + p) % p, &in, 1);
}

}  // namespace ringgrad::collectives
