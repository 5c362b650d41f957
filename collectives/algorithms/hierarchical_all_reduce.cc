// Hierarchical all-reduce for ranks on several hosts (NCCL's and Open MPI HAN's two levels):
// H hosts of L ranks each (p = H L), local links fast (shared memory, loopback), the links
// between hosts slow. Three phases, each a ring among a subset of the ranks:
//   1. reduce-scatter inside each host: local rank i holds block i (n/L) of its host's sum;
//   2. all-reduce of block i across hosts, among the ranks at position i on every host;
//   3. all-gather inside each host.
// T = 2(L-1) alpha_l + 2(L-1)/L n beta_l + 2(H-1) alpha + 2(H-1)/H n beta (+ reductions):
// a host's links to others carry 2(H-1)/H n in all, where a flat ring across hosts carries
// 2(p-1)/p n on its one link out of each host, and pays 2(p-1) latencies instead of 2(H-1).
#include "collectives/algorithms/algorithms.h"
#include "collectives/links/group_link.h"

namespace ringgrad::collectives {

void hierarchical_all_reduce(Link& link, const CollArgs& a, const HostLayout& hosts) {
  if (hosts.hosts() <= 1 || !hosts.uniform() || hosts.world_size() != link.world_size()) {
    ring_all_reduce(link, a);  // one host, or hosts of different sizes: nothing to gain, or no rails
    return;
  }
  const int p = link.world_size();
  GroupLink local(link, hosts.local_ranks(link.rank())), cross(link, hosts.cross_ranks(link.rank()));
  // AVG sums in every phase and divides by p once, at the end of phase 2.
  const ReduceOp op = a.op == ReduceOp::AVG ? ReduceOp::SUM : a.op;
  ring_reduce_scatter_blocks(local, CollArgs{a.send, a.recv, a.count, a.dtype, op, a.root});
  const Blocks blocks{a.count, local.world_size()};
  std::byte* mine = a.recv + blocks.begin(local.rank()) * dtype_size(a.dtype);
  const std::size_t n = blocks.size(local.rank());
  ring_all_reduce(cross, CollArgs{mine, mine, n, a.dtype, op, a.root});
  link.divide_for_avg(mine, n, a.dtype, a.op, p);
  ring_all_gather_blocks(local, a.recv, a.count, a.dtype);
}

}  // namespace ringgrad::collectives
