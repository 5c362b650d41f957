// Recursive halving-doubling all-reduce (Rabenseifner; Thakur, Rabenseifner & Gropp 2005):
// reduce-scatter by recursive halving, then all-gather by recursive doubling among the
// largest power of two p' <= p: T = 2 log2(p') alpha + 2(p'-1)/p' n beta + (p'-1)/p' n gamma.
// The p - p' extra ranks first fold into a neighbour and get the result back at the end:
// + 2 (alpha + n beta) + n gamma when p is not a power of two. Runs on segments of p chunks
// (alpha paid per segment). Up to 16 KiB, recursive doubling: log2(p') (alpha + n beta + n gamma).
#include <algorithm>
#include <bit>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

namespace {

// Up to this size the vector is exchanged whole (recursive doubling) instead of halved.
constexpr std::size_t kShortBytes = 16 << 10;

void halving_doubling_segment(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype), bytes = a.count * es;
  const int pow2 = static_cast<int>(std::bit_floor(static_cast<unsigned>(p)));
  const int extra = p - pow2;
  // Fold: among ranks 0..2*extra-1, each even rank hands its vector to the odd rank above.
  const std::byte* src = a.send;
  int vrank;  // rank among the pow2 participants, -1 for a folded-away even rank
  if (r < 2 * extra && r % 2 == 0) {
    link.send(r + 1, a.send, bytes);
    vrank = -1;
  } else if (r < 2 * extra) {
    link.send_recv_reduce(-1, nullptr, 0, r - 1, a.recv, a.send, a.count, a.dtype, a.op);
    src = a.recv;
    vrank = r / 2;
  } else {
    vrank = r - extra;
  }
  auto real = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  // Block i of pow2 blocks: elements [count*i/pow2, count*(i+1)/pow2).
  auto at = [&](int block) { return a.count * static_cast<std::size_t>(block) / static_cast<std::size_t>(pow2); };

  if (vrank >= 0 && bytes <= kShortBytes) {
    // Short vectors: recursive doubling, the whole vector each step (log2(p') alpha), as MPICH.
    link.copy(a.recv, src, bytes);
    std::byte* mine = link.workspace(bytes);
    for (int mask = 1; mask < pow2; mask *= 2) {
      link.copy(mine, a.recv, bytes);  // what is sent must not change under it
      link.send_recv_reduce(real(vrank ^ mask), mine, bytes, real(vrank ^ mask), a.recv, a.recv, a.count,
                            a.dtype, a.op);
    }
    link.divide_for_avg(a.recv, a.count, a.dtype, a.op, p);
  } else if (vrank >= 0) {
    if (pow2 == 1) link.copy(a.recv, src, bytes);
    // Recursive halving: keep the half of [lo, hi) that holds my block, send the other half.
    int lo = 0, hi = pow2;
    for (int mask = pow2 / 2; mask > 0; mask /= 2) {
      const int mid = lo + (hi - lo) / 2;
      const bool upper = vrank & mask;
      const int keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
      const int send_lo = upper ? lo : mid, send_hi = upper ? mid : hi;
      link.send_recv_reduce(real(vrank ^ mask), src + at(send_lo) * es, (at(send_hi) - at(send_lo)) * es,
                            real(vrank ^ mask), a.recv + at(keep_lo) * es, src + at(keep_lo) * es,
                            at(keep_hi) - at(keep_lo), a.dtype, a.op);
      src = a.recv;
      lo = keep_lo;
      hi = keep_hi;
    }
    link.divide_for_avg(a.recv + at(lo) * es, at(hi) - at(lo), a.dtype, a.op, p);
    // Recursive doubling: swap my range for the partner's, doubling it each step.
    for (int mask = 1; mask < pow2; mask *= 2) {
      const int size = hi - lo;
      const bool upper = (vrank & mask) != 0;
      const int other_lo = upper ? lo - size : hi;
      link.send_recv(real(vrank ^ mask), a.recv + at(lo) * es, (at(hi) - at(lo)) * es, real(vrank ^ mask),
                     a.recv + at(other_lo) * es, (at(other_lo + size) - at(other_lo)) * es);
      lo = upper ? other_lo : lo;
      hi = lo + 2 * size;
    }
  }
  // Unfold: odd ranks give the result back to the even rank that folded into them.
  if (r < 2 * extra) {
    if (vrank < 0)
      link.recv(r + 1, a.recv, bytes);
    else
      link.send(r - 1, a.recv, bytes);
  }
}

}  // namespace

void halving_doubling_all_reduce(Link& link, const CollArgs& a) {
  // Segments of one chunk per rank, for the cache reason given in ring_all_reduce.cc.
  const std::size_t es = dtype_size(a.dtype);
  const std::size_t segment = std::max<std::size_t>(1, link.chunk_bytes() / es) * static_cast<std::size_t>(link.world_size());
  std::size_t first = 0;
  do {
    const std::size_t n = std::min(segment, a.count - first);
    halving_doubling_segment(link, CollArgs{a.send + first * es, a.recv + first * es, n, a.dtype, a.op, a.root});
    first += n;
  } while (first < a.count);
}

}  // namespace ringgrad::collectives
