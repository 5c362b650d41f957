// One-shot all-reduce: every rank sends its whole vector to every other rank, then reduces the
// p vectors itself, in rank order: p-1 pairwise exchanges (step s: to r+s, from r-s),
// T = (p-1) (alpha + n beta) + (p-1) n gamma, in p n bytes of workspace. On 2 ranks that is one exchange, as cheap as
// any algorithm can be for a small vector (NCCL and TensorRT-LLM reduce small messages inside
// a node this way); its bytes grow with p, so larger vectors and worlds take the ring or
// halving-doubling. Every rank computes x_0 op x_1 op ... op x_{p-1} in that order, so all
// hold the same bits. With the argument check on, a small vector travels in the check's own
// message and the call is one exchange in all (piggyback.h).
#include <vector>

#include "collectives/algorithms/algorithms.h"

namespace ringgrad::collectives {

void reduce_in_rank_order(Link& link, std::span<const std::byte* const> inputs, std::byte* recv, std::size_t count,
                          DType dtype, ReduceOp op, std::byte* scratch) {
  const std::size_t p = inputs.size();
  if (p == 1) link.copy(recv, inputs[0], count * dtype_size(dtype));
  // One input may be recv itself (in place): the running result stays in scratch until the
  // last step, which reads every input before it writes recv.
  const std::byte* acc = inputs[0];
  for (std::size_t r = 1; r < p; ++r) {
    std::byte* dst = r + 1 == p ? recv : scratch;
    link.reduce(dst, acc, inputs[r], count, dtype, op);
    acc = dst;
  }
  link.divide_for_avg(recv, count, dtype, op, static_cast<int>(p));
}

void one_shot_all_reduce(Link& link, const CollArgs& a) {
  const int p = link.world_size(), r = link.rank();
  const std::size_t bytes = a.count * dtype_size(a.dtype);
  // Rank q's vector in slot q of the workspace; this rank's own slot is the running result's.
  std::byte* slots = link.workspace(static_cast<std::size_t>(p) * bytes);
  const auto slot = [&](int q) { return slots + static_cast<std::size_t>(q) * bytes; };
  for (int s = 1; s < p; ++s) link.send_recv((r + s) % p, a.send, bytes, (r - s + p) % p, slot((r - s + p) % p), bytes);
  std::vector<const std::byte*> inputs;
  for (int q = 0; q < p; ++q) inputs.push_back(q == r ? a.send : slot(q));
  reduce_in_rank_order(link, inputs, a.recv, a.count, a.dtype, a.op, slot(r));
}

}  // namespace ringgrad::collectives
