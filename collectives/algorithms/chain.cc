// Pipelined chain broadcast and reduce: root -> root+1 -> ... -> root+p-1 (reduce: the
// reverse), k pieces of n/k bytes: T = (p-2+k)(alpha + n/k beta) [+ n gamma for reduce],
// about n beta for large n whatever p: bandwidth-optimal for one root, poor latency.
#include <vector>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void chain_broadcast(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const int v = (r - a.root + p) % p;  // position in the chain, root at 0
  const std::size_t bytes = a.count * dtype_size(a.dtype), chunk = link.chunk_bytes();
  if (v == 0) link.copy(a.recv, a.send, bytes);
  const int next = v + 1 < p ? (r + 1) % p : -1;
  std::vector<Pending> recvs, sends;
  if (v > 0)
    for (std::size_t off = 0; off < bytes; off += chunk)
      link.irecv((r - 1 + p) % p, a.recv + off, std::min(chunk, bytes - off), recvs);
  for (std::size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
    if (v > 0) recvs[k].wait();  // forward piece k as soon as it is in
    link.isend(next, a.recv + off, std::min(chunk, bytes - off), sends);
  }
  wait_all(recvs);
  wait_all(sends);
}

void chain_reduce(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const int v = (r - a.root + p) % p;  // root at 0; pieces flow from p-1 down to 0
  const std::size_t es = dtype_size(a.dtype), bytes = a.count * es, chunk = link.chunk_bytes();
  const bool leaf = v == p - 1;
  // The root accumulates in its output; inner ranks in a buffer that outlives their sends.
  std::byte* acc = v == 0 ? a.recv : link.workspace(!leaf ? bytes : 0);
  const std::byte* out = leaf ? a.send : acc;
  std::vector<Pending> sends;
  for (std::size_t off = 0; off < bytes; off += chunk) {
    const std::size_t n = std::min(chunk, bytes - off);
    if (!leaf)
      link.send_recv_reduce(-1, nullptr, 0, (r + 1) % p, acc + off, a.send + off, n / es, a.dtype, a.op);
    if (v > 0) link.isend((r - 1 + p) % p, out + off, n, sends);
  }
  if (v == 0 && leaf) link.copy(a.recv, a.send, bytes);  // p == 1
  wait_all(sends);
  if (v == 0) link.divide_for_avg(a.recv, a.count, a.dtype, a.op, p);
}

}  // namespace ringgrad::collectives
