// All-to-all: rank r's block q (count elements) goes to rank q, which stores it as its block r.
// With n = each rank's whole buffer (p blocks):
//   pairwise: p-1 steps; at step s send block r+s to r+s, receive block r-s from r-s.
//             T = (p-1) alpha + (p-1)/p n beta: every byte once, bandwidth-optimal.
//   all_to_all_v: pairwise with a count per peer (blocks back to back, MPI_Alltoallv).
//   Bruck (Bruck et al. 1997): ceil(log2 p) steps; at step k send every block whose index has
//             bit k set to r+2^k. T = log2(p) alpha + log2(p)/2 n beta, plus two local
//             rotations: fewer messages, more bytes, so it wins for small blocks.
#include <algorithm>
#include <vector>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {
namespace {

int mod(int a, int p) { return ((a % p) + p) % p; }

}  // namespace

void pairwise_all_to_all(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t block = a.count * dtype_size(a.dtype), P = static_cast<std::size_t>(p);
  const std::byte* send = a.send;
  if (send == a.recv && p > 1) {  // in place: block r-s arrives where block r-s still waits to go
    std::byte* copy = link.workspace(P * block);
    link.copy(copy, a.send, P * block);
    send = copy;
  }
  link.copy(a.recv + static_cast<std::size_t>(r) * block, send + static_cast<std::size_t>(r) * block, block);
  for (int s = 1; s < p; ++s) {
    const int to = mod(r + s, p), from = mod(r - s, p);
    link.send_recv(to, send + static_cast<std::size_t>(to) * block, block, from,
                   a.recv + static_cast<std::size_t>(from) * block, block);
  }
}

void pairwise_all_to_all_v(Link& link, const CollArgs& a, std::span<const std::size_t> send_counts,
                           std::span<const std::size_t> recv_counts) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t es = dtype_size(a.dtype);
  // Where each block starts: the counts' prefix sums (MPI_Alltoallv's packed displacements).
  std::vector<std::size_t> send_at(static_cast<std::size_t>(p) + 1, 0), recv_at(send_at.size(), 0);
  for (std::size_t q = 0; q < static_cast<std::size_t>(p); ++q) {
    send_at[q + 1] = send_at[q] + send_counts[q];
    recv_at[q + 1] = recv_at[q] + recv_counts[q];
  }
  const auto R = static_cast<std::size_t>(r);
  link.copy(a.recv + recv_at[R] * es, a.send + send_at[R] * es, send_counts[R] * es);
  for (int s = 1; s < p; ++s) {
    const auto to = static_cast<std::size_t>(mod(r + s, p)), from = static_cast<std::size_t>(mod(r - s, p));
    link.send_recv(static_cast<int>(to), a.send + send_at[to] * es, send_counts[to] * es, static_cast<int>(from),
                   a.recv + recv_at[from] * es, recv_counts[from] * es);
  }
}

void bruck_all_to_all(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t block = a.count * dtype_size(a.dtype), P = static_cast<std::size_t>(p);
  // Workspace: the rotated blocks, then the blocks of one step packed to send and received.
  const std::size_t half = (P / 2 + 1) * block;
  std::byte* rotated = link.workspace(P * block + 2 * half);
  std::byte* packed_out = rotated + P * block;
  std::byte* packed_in = packed_out + half;
  auto at = [&](std::byte* base, std::size_t i) { return base + i * block; };
  // Rotate: rotated[i] = the block for rank r+i.
  for (int i = 0; i < p; ++i)
    link.copy(at(rotated, static_cast<std::size_t>(i)), a.send + static_cast<std::size_t>(mod(r + i, p)) * block, block);
  // Step k moves the blocks whose index has bit k set forward by 2^k ranks; after every step
  // rotated[i] holds the block that rank r-i sends to rank r.
  for (int bit = 1; bit < p; bit <<= 1) {
    std::size_t k = 0;
    for (int i = 0; i < p; ++i)
      if (i & bit) link.copy(at(packed_out, k++), at(rotated, static_cast<std::size_t>(i)), block);
    link.send_recv(mod(r + bit, p), packed_out, k * block, mod(r - bit, p), packed_in, k * block);
    k = 0;
    for (int i = 0; i < p; ++i)
      if (i & bit) link.copy(at(rotated, static_cast<std::size_t>(i)), at(packed_in, k++), block);
  }
  // Rotate back: the block from rank r-i is block r-i of the output.
  for (int i = 0; i < p; ++i)
    link.copy(a.recv + static_cast<std::size_t>(mod(r - i, p)) * block, at(rotated, static_cast<std::size_t>(i)), block);
}

}  // namespace ringgrad::collectives
