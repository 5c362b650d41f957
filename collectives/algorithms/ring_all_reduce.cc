// Ring all-reduce = ring reduce-scatter + ring all-gather (Patarasuk & Yuan 2009), p ranks,
// n bytes: T = 2(p-1) alpha + 2(p-1)/p n beta + (p-1)/p n gamma. Each rank sends
// 2(p-1)/p n bytes, the lower bound, so it is bandwidth-optimal; latency grows with p.
// reduce_scatter and all_gather are the two halves: (p-1) alpha + (p-1)/p n beta each.
//
// The buffer is cut into p blocks; rank r sends to r+1 and receives from r-1. In the
// reduce-scatter half a block's partial sum travels once around the ring, gaining one rank's
// input per step, until rank r holds block r complete; in the all-gather half each complete
// block travels around once more.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {
namespace {

int mod(int a, int p) { return ((a % p) + p) % p; }

// One reduce-scatter step: `partial` (our partial sum of block sb, or at the first step our
// input of it) goes to the right while the left neighbour's partial sum of block rb arrives and
// is added to our input of rb, into `into`.
void reduce_step(Link& link, const CollArgs& a, const Blocks& blocks, const std::byte* partial, int sb, std::byte* into,
                 int rb) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  link.send_recv_reduce(mod(r + 1, p), partial, blocks.size(sb) * es, mod(r - 1, p), into,
                        a.send + blocks.begin(rb) * es, blocks.size(rb), a.dtype, a.op);
}

// The all-gather half, p-1 steps: at step s rank r forwards complete block r-s to r+1 and
// receives block r-s-1 from r-1, both in place in `out`.
void all_gather_steps(Link& link, std::byte* out, const Blocks& blocks, std::size_t es) {
  const int p = link.world_size(), r = link.rank();
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - s, p), rb = mod(r - s - 1, p);
    link.send_recv(mod(r + 1, p), out + blocks.begin(sb) * es, blocks.size(sb) * es, mod(r - 1, p),
                   out + blocks.begin(rb) * es, blocks.size(rb) * es);
  }
}

}  // namespace

void ring_reduce_scatter_blocks(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  const Blocks blocks{a.count, p};
  auto out = [&](int b) { return a.recv + blocks.begin(b) * es; };
  if (p == 1) link.copy(a.recv, a.send, a.count * es);
  // p-1 steps: at step s send block r-1-s, receive and reduce block r-2-s.
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - 1 - s, p), rb = mod(r - 2 - s, p);
    reduce_step(link, a, blocks, s == 0 ? a.send + blocks.begin(sb) * es : out(sb), sb, out(rb), rb);
  }
}

void ring_all_gather_blocks(Link& link, std::byte* buffer, std::size_t count, DType dtype) {
  all_gather_steps(link, buffer, Blocks{count, link.world_size()}, dtype_size(dtype));
}

namespace {

// The textbook ring over the whole of a.count elements: the reduce-scatter half leaves block r
// complete in the output, the all-gather half spreads it.
void ring_all_reduce_whole(Link& link, const CollArgs& a) {
  const Blocks blocks{a.count, link.world_size()};
  const std::size_t es = dtype_size(a.dtype);
  const int r = link.rank();
  ring_reduce_scatter_blocks(link, a);
  link.divide_for_avg(a.recv + blocks.begin(r) * es, blocks.size(r), a.dtype, a.op, link.world_size());  // AVG: / p
  ring_all_gather_blocks(link, a.recv, a.count, a.dtype);
}

}  // namespace

void ring_all_reduce(Link& link, const CollArgs& a) {
  const int p = link.world_size();
  const std::size_t es = dtype_size(a.dtype);
  if (p == 1) {
    link.copy(a.recv, a.send, a.count * es);
    return;
  }
  // The ring runs on segments of one chunk per rank (as NCCL's loop does): a block reduced in
  // reduce-scatter is forwarded by all-gather while still in cache, which at 16-64 MiB gives
  // 2-3x the busbw of one reduce-scatter + all-gather over the whole buffer (2 ranks over
  // loopback TCP). The price: 2(p-1) alpha per segment instead of once.
  const std::size_t segment = std::max<std::size_t>(1, link.chunk_bytes() / es) * static_cast<std::size_t>(p);
  for (std::size_t first = 0; first < a.count; first += segment) {
    const std::size_t n = std::min(segment, a.count - first);
    ring_all_reduce_whole(link, CollArgs{a.send + first * es, a.recv + first * es, n, a.dtype, a.op, a.root});
  }
}

void ring_reduce_scatter(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype), block_bytes = a.count * es;
  if (p == 1) {
    link.copy(a.recv, a.send, block_bytes);
    return;
  }
  const Blocks blocks{a.count * static_cast<std::size_t>(p), p};
  // The output holds one block, so partial sums alternate between two temporary blocks; the
  // last step reduces into the output.
  std::byte* partial = link.workspace(p > 2 ? 2 * block_bytes : 0);
  auto temp = [&](int s) { return partial + static_cast<std::size_t>(s % 2) * block_bytes; };
  for (int s = 0; s < p - 1; ++s) {
    const int sb = mod(r - 1 - s, p), rb = mod(r - 2 - s, p);
    reduce_step(link, a, blocks, s == 0 ? a.send + blocks.begin(sb) * es : temp(s - 1), sb, s == p - 2 ? a.recv : temp(s),
                rb);
  }
  link.divide_for_avg(a.recv, a.count, a.dtype, a.op, p);
}

void ring_all_gather(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  link.copy(a.recv + static_cast<std::size_t>(r) * a.count * es, a.send, a.count * es);
  all_gather_steps(link, a.recv, Blocks{a.count * static_cast<std::size_t>(p), p}, es);
}

}  // namespace ringgrad::collectives
