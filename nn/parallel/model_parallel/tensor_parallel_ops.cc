// The four tensor-parallel ops: each a collective in one direction and nothing (or a slice) in
// the other, recorded with autograd::record so backward runs the conjugate.
#include "nn/parallel/model_parallel/tensor_parallel_ops.h"

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

// x as [outer, n, inner] around dimension `dim` of size n.
struct Around {
  std::int64_t outer = 1, n, inner = 1;
};
Around around(const Tensor& x, std::int64_t dim) {
  Around a{1, x.size(dim), 1};
  for (std::int64_t d = 0; d < dim; ++d) a.outer *= x.size(d);
  for (std::int64_t d = dim + 1; d < x.dim(); ++d) a.inner *= x.size(d);
  return a;
}

// [.., n, ..] -> [.., n p, ..] along dim: all_gather lays the ranks' blocks end to end
// ([p, outer, n, inner]); moving the rank dimension in front of dim puts rank q's block at
// [q n, (q+1) n).
Tensor all_gather_dim(const Tensor& x, std::int64_t dim, Communicator& group) {
  const Tensor mine = k::contiguous(x);
  const Around a = around(x, dim);
  const std::int64_t p = group.world_size();
  Tensor blocks = Tensor::empty({p, a.outer, a.n, a.inner}, x.dtype(), x.device());
  group.all_gather(as_buffer(mine), as_buffer(blocks));
  Shape out = x.shape();
  out[static_cast<std::size_t>(dim)] = a.n * p;
  return k::reshape(k::contiguous(k::transpose(blocks, 0, 1)), out);
}

void check_divides(const Tensor& x, std::int64_t dim, const Communicator& group, const char* op) {
  if (x.size(dim) % group.world_size() != 0)
    throw std::invalid_argument(fmt::format("{} on rank {}: dim {} of {} is {}, which does not divide into {} ranks", op,
                                            group.rank(), dim, shape_str(x.shape()), x.size(dim), group.world_size()));
}

// [.., n p, ..] (a partial sum) -> this rank's [.., n, ..] of the sum: the blocks along dim
// moved to the front, then reduce_scatter.
Tensor reduce_scatter_dim(const Tensor& x, std::int64_t dim, Communicator& group, const char* op) {
  check_divides(x, dim, group, op);
  const Around a = around(x, dim);
  const std::int64_t p = group.world_size(), n = a.n / p;
  const Tensor blocks = k::contiguous(k::transpose(k::reshape(k::contiguous(x), {a.outer, p, n, a.inner}), 0, 1));
  Shape out = x.shape();
  out[static_cast<std::size_t>(dim)] = n;
  Tensor mine = Tensor::empty(out, x.dtype(), x.device());
  group.reduce_scatter(as_buffer(blocks), as_buffer(mine), ReduceOp::SUM);
  return mine;
}

Tensor my_slice(const Tensor& x, std::int64_t dim, Communicator& group, const char* op) {
  check_divides(x, dim, group, op);
  const std::int64_t n = x.size(dim) / group.world_size();
  return k::contiguous(k::narrow(x, dim, group.rank() * n, n));
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
  const std::int64_t last = x.dim() - 1;
  return autograd::record("gather_from_group", all_gather_dim(x, last, group), {x},
                          [&group, last](const Tensor& g) -> std::vector<Tensor> {
                            return {my_slice(g, last, group, "gather_from_group")};
                          });
}

Tensor scatter_to_group(const Tensor& x, Communicator& group) {
  const std::int64_t last = x.dim() - 1;
  return autograd::record("scatter_to_group", my_slice(x, last, group, "scatter_to_group"), {x},
                          [&group, last](const Tensor& g) -> std::vector<Tensor> { return {all_gather_dim(g, last, group)}; });
}

Tensor gather_sequence(const Tensor& x, Communicator& group) {
  return autograd::record("gather_sequence", all_gather_dim(x, 1, group), {x}, [&group](const Tensor& g) -> std::vector<Tensor> {
    return {reduce_scatter_dim(g, 1, group, "gather_sequence")};
  });
}

Tensor reduce_scatter_sequence(const Tensor& x, Communicator& group) {
  return autograd::record("reduce_scatter_sequence", reduce_scatter_dim(x, 1, group, "reduce_scatter_sequence"), {x},
                          [&group](const Tensor& g) -> std::vector<Tensor> { return {all_gather_dim(g, 1, group)}; });
}

}  // namespace ringgrad::nn::parallel
