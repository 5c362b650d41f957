// 08: causal attention over a sequence cut into one block per rank. Each rank keeps the queries
// of its T/c positions and passes key/value blocks around the ring, merging each block's partial
// attention with the online-softmax rule (ring attention). Every rank also computes full causal
// attention on the whole sequence and compares its rows, forward and backward, and prints what
// the ring moved (the communicator's own counts) beside the formula.
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/08_ring_attention
#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/transformer_ops.h"
#include "collectives/communicator.h"
#include "examples/distributed/compare.h"
#include "examples/distributed/launch.h"
#include "nn/parallel/model_parallel/ring_attention.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using compare::max_abs_diff;

int main() try {
  collectives::Communicator cp(launch::job_or_exit("08_ring_attention"));
  const int rank = cp.rank(), c = cp.world_size();
  constexpr std::int64_t kB = 2, kT = 48, kC = 32, kH = 4;
  if (kT % c != 0) {
    if (rank == 0) fmt::print("run on a number of ranks that divides T = {}\n", kT);
    return 2;
  }
  manual_seed(3);
  Tensor qkv = Tensor::zeros({kB, kT, 3 * kC}, DType::Float64), upstream = Tensor::zeros({kB, kT, kC}, DType::Float64);
  kernels::uniform_(qkv, -1, 1);
  kernels::uniform_(upstream, -1, 1);
  qkv.set_requires_grad(true);
  const Tensor full = causal_self_attention(qkv, kH);  // what one rank would compute on everything
  backward(sum(full * upstream));

  const std::int64_t t = kT / c, first = rank * t;
  Tensor mine = kernels::clone(kernels::narrow(qkv.detach(), 1, first, t)).set_requires_grad(true);
  cp.reset_stats();
  const Tensor ring = nn::parallel::ring_attention(mine, kH, cp);
  backward(sum(ring * kernels::contiguous(kernels::narrow(upstream, 1, first, t))));
  fmt::print("rank {}: positions [{}, {}): output differs from full attention by {:.1e}, gradient by {:.1e}\n", rank, first,
             first + t, max_abs_diff(ring, kernels::narrow(full, 1, first, t)),
             max_abs_diff(mine.grad(), kernels::narrow(qkv.grad(), 1, first, t)));
  if (rank == 0) {
    const double block = 2.0 * kB * t * kC * 8;  // one k and v block in doubles, bytes
    fmt::print("the ring moved (sent + received, this rank): {}\n", cp.stats().describe());
    fmt::print("formula: a block of k, v or of dk, dv is {:.0f} bytes; forward {} pass{} of k, v each way, backward {} "
               "of k, v and {} of dk, dv: {:.3f} MB\n", block, c - 1, c == 2 ? "" : "es", c - 1, c,
               (2 * (c - 1) * 2 * block + c * 2 * block) / 1e6);
  }
} catch (const std::exception& e) {
  return launch::report("08_ring_attention", e);
}
