// The four tensor-parallel ops: each a collective in one direction and nothing (or a slice) in
// the other, recorded with autograd::record so backward runs the conjugate.
#include "nn/parallel/tensor_parallel_ops.h"

#include <stdexcept>

#include <fmt/format.h>

#include "autograd/node.h"
#include "nn/parallel/tensor_buffer.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

using collectives::Communicator;
using collectives::ReduceOp;
namespace k = kernels;

Tensor all_reduce_sum(const Tensor& x, Communicator& group) {
  Tensor y = k::clone(x);  // contiguous, and the caller's tensor stays as it was
  group.all_reduce(as_buffer(y), as_buffer(y), ReduceOp::SUM);
  return y;
}

// [..., n] -> [..., n p]: all_gather lays the ranks' blocks end to end ([p, M, n] for M rows);
// moving the rank dimension next to the columns puts rank q's block at columns [q n, (q+1) n).
Tensor all_gather_last(const Tensor& x, Communicator& group) {
  const Tensor mine = k::contiguous(x);
  const std::int64_t p = group.world_size(), n = x.shape().back(), rows = x.numel() / std::max<std::int64_t>(n, 1);
  Tensor blocks = Tensor::empty({p, rows, n}, x.dtype(), x.device());
  group.all_gather(as_buffer(mine), as_buffer(blocks));
  Shape out = x.shape();
  out.back() = n * p;
  return k::reshape(k::contiguous(k::transpose(blocks, 0, 1)), out);
}

Tensor my_slice_last(const Tensor& x, Communicator& group) {
  const std::int64_t p = group.world_size(), n = x.shape().back();
  if (n % p != 0)
    throw std::invalid_argument(fmt::format("scatter_to_group on rank {}: the last dim ({}) does not divide into {} ranks",
                                            group.rank(), n, p));
  return k::contiguous(k::narrow(x, x.dim() - 1, group.rank() * (n / p), n / p));
}

}  // namespace

Tensor copy_to_group(const Tensor& x, Communicator& group) {
  return autograd::record("copy_to_group", x.detach(), {x}, [&group](const Tensor& g) -> std::vector<Tensor> {
    return {all_reduce_sum(g, group)};
  });
}

Tensor reduce_from_group(const Tensor& x, Communicator& group) {
  return autograd::record("reduce_from_group", all_reduce_sum(x, group), {x},
                          [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
}

Tensor gather_from_group(const Tensor& x, Communicator& group) {
  return autograd::record("gather_from_group", all_gather_last(x, group), {x},
                          [&group](const Tensor& g) -> std::vector<Tensor> { return {my_slice_last(g, group)}; });
}

Tensor scatter_to_group(const Tensor& x, Communicator& group) {
  return autograd::record("scatter_to_group", my_slice_last(x, group), {x},
                          [&group](const Tensor& g) -> std::vector<Tensor> { return {all_gather_last(g, group)}; });
}

}  // namespace ringgrad::nn::parallel
