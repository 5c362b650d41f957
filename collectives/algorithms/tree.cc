// Binomial-tree broadcast and reduce, and all_reduce = reduce to rank 0 + broadcast.
// Broadcast/reduce: ceil(log2 p) rounds, T = log2(p) (alpha + n beta) [+ log2(p) n gamma],
// pipelined in chunk_bytes pieces; all_reduce twice that: few messages, latency-oriented.
#include <vector>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {
namespace {

// Binomial tree over positions v = (rank - root) mod p (MPICH's numbering): the parent of v
// clears its lowest set bit; children are v + m for powers of two m below that bit.
struct Binomial {
  int parent = -1;            // rank, -1 at the root
  std::vector<int> children;  // ranks, smallest subtree first
};

Binomial binomial(int rank, int root, int p) {
  Binomial t;
  const int v = (rank - root + p) % p;
  int m = 1;
  for (; m < p; m <<= 1) {
    if (v & m) {
      t.parent = (v - m + root) % p;
      break;
    }
    if (v + m < p) t.children.push_back((v + m + root) % p);
  }
  return t;
}

}  // namespace

void tree_broadcast(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t bytes = a.count * dtype_size(a.dtype), chunk = link.chunk_bytes();
  if (r == a.root) link.copy(a.recv, a.send, bytes);
  const Binomial t = binomial(r, a.root, p);
  std::vector<Pending> recvs, sends;
  for (std::size_t off = 0; off < bytes; off += chunk)
    link.irecv(t.parent, a.recv + off, std::min(chunk, bytes - off), recvs);
  for (std::size_t off = 0, k = 0; off < bytes; off += chunk, ++k) {
    if (t.parent >= 0) recvs[k].wait();
    // Largest subtree first: it has the longest way to go.
    for (auto c = t.children.rbegin(); c != t.children.rend(); ++c)
      link.isend(*c, a.recv + off, std::min(chunk, bytes - off), sends);
  }
  wait_all(recvs);
  wait_all(sends);
}

void tree_reduce(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype), bytes = a.count * es, chunk = link.chunk_bytes();
  const Binomial t = binomial(r, a.root, p);
  const bool root = t.parent < 0, leaf = t.children.empty();
  std::byte* acc = root ? a.recv : link.workspace(!leaf ? bytes : 0);
  if (root && leaf) link.copy(a.recv, a.send, bytes);  // p == 1
  std::vector<Pending> sends;
  for (std::size_t off = 0; off < bytes; off += chunk) {
    const std::size_t n = std::min(chunk, bytes - off);
    const std::byte* partial = a.send + off;
    for (int c : t.children) {  // smallest subtree first: it is ready first
      link.send_recv_reduce(-1, nullptr, 0, c, acc + off, partial, n / es, a.dtype, a.op);
      partial = acc + off;
    }
    link.isend(t.parent, partial, n, sends);
  }
  wait_all(sends);
  if (root) link.divide_for_avg(a.recv, a.count, a.dtype, a.op, p);
}

void tree_all_reduce(Link& link, const CollArgs& a) {
  tree_reduce(link, CollArgs{a.send, a.recv, a.count, a.dtype, a.op, 0});
  tree_broadcast(link, CollArgs{a.recv, a.recv, a.count, a.dtype, a.op, 0});
}

}  // namespace ringgrad::collectives
