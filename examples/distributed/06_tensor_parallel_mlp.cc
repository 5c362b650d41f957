// 06: one MLP block split over the ranks, Megatron-style. Every rank makes the same whole
// block (same seed), keeps its columns of the first Linear and its rows of the second, and
// runs them between the two conjugate ops: copy_to_group (identity forward, all-reduce of the
// input's gradient backward) and reduce_from_group (all-reduce of the partial outputs forward,
// identity backward). The output and, after an SGD step, every parameter equal the whole
// block's on one process.
//
//   build/bin/ringgrad-run --nproc-per-node 2 build/bin/06_tensor_parallel_mlp
#include <fmt/format.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "collectives/communicator.h"
#include "examples/distributed/compare.h"
#include "examples/distributed/launch.h"
#include "nn/linear.h"
#include "nn/optim.h"
#include "nn/parallel/model_parallel/tensor_parallel_linear.h"
#include "tensor/random.h"
#include "tensor/view.h"

using namespace ringgrad;
using compare::max_abs_diff;
using nn::parallel::ColumnParallelLinear;
using nn::parallel::RowParallelLinear;

int main() try {
  collectives::Communicator tp(launch::job_or_exit("06_tensor_parallel_mlp"));
  const int rank = tp.rank(), p = tp.world_size();
  constexpr std::int64_t kBatch = 16, kC = 24;  // 4C = 96 hidden units, 96/p per rank
  manual_seed(1);
  nn::Linear fc(kC, 4 * kC, true, DType::Float64), proj(4 * kC, kC, true, DType::Float64);  // one process's block
  ColumnParallelLinear fc_tp(fc, tp);
  RowParallelLinear proj_tp(proj, tp);
  if (rank == 0)
    fmt::print("{} ranks: each holds c_fc rows {} of {} and c_proj columns {} of {} (bias whole)\n", p,
               fc_tp.weight.size(0), 4 * kC, proj_tp.weight.size(1), 4 * kC);

  Tensor x = Tensor::zeros({kBatch, kC}, DType::Float64);
  kernels::uniform_(x, -1, 1);
  x.set_requires_grad(true);  // so the input's gradient (copy_to_group's all-reduce) is needed
  Tensor x_tp = kernels::clone(x.detach()).set_requires_grad(true);
  const Tensor y = proj(gelu(fc(x))), y_tp = proj_tp(gelu(fc_tp(x_tp)));
  backward(sum(y * y));
  backward(sum(y_tp * y_tp));
  nn::SGD whole({{fc.parameters()}, {proj.parameters()}}, 0.1, 0.0);
  nn::SGD split({{fc_tp.parameters()}, {proj_tp.parameters()}}, 0.1, 0.0);
  whole.step();
  split.step();

  const std::int64_t cols = fc_tp.weight.size(0);
  const double out = max_abs_diff(y, y_tp), dx = max_abs_diff(x.grad(), x_tp.grad());
  const double w1 = max_abs_diff(kernels::narrow(fc.weight, 0, rank * cols, cols), fc_tp.weight);
  const double w2 = max_abs_diff(kernels::narrow(proj.weight, 1, rank * cols, cols), proj_tp.weight);
  fmt::print("rank {}: output differs from one process by {:.1e}, input gradient by {:.1e}, c_fc after the step by "
             "{:.1e}, c_proj by {:.1e}\n", rank, out, dx, w1, w2);
  if (rank == 0)
    fmt::print("communication: one all-reduce of {} x {} forward (the outputs) and one backward (the input "
               "gradient): 2 x {} bytes in float64, whatever the hidden size\n", kBatch, kC, kBatch * kC * 8);
} catch (const std::exception& e) {
  return launch::report("06_tensor_parallel_mlp", e);
}
