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
  group.all_reduce(synced_buffer(y), synced_buffer(y), ReduceOp::SUM);
  return y;
}

// x's shape folded to three dimensions [outer, n, inner]: those before `dim`, dim itself (n),
// those after it.
struct OuterDimInner {
  std::int64_t outer = 1, n, inner = 1;
};
OuterDimInner outer_dim_inner(const Tensor& x, std::int64_t dim) {
  OuterDimInner s{1, x.size(dim), 1};
  for (std::int64_t d = 0; d < dim; ++d) s.outer *= x.size(d);
  for (std::int64_t d = dim + 1; d < x.dim(); ++d) s.inner *= x.size(d);
  return s;
}

// [.., n, ..] -> [.., n p, ..] along dim: all_gather lays the ranks' blocks end to end
// ([p, outer, n, inner]); moving the rank dimension in front of dim puts rank q's block at
// [q n, (q+1) n).
Tensor all_gather_dim(const Tensor& x, std::int64_t dim, Communicator& group) {
  const Tensor mine = k::contiguous(x);
  const OuterDimInner s = outer_dim_inner(x, dim);
  const std::int64_t p = group.world_size();
  Tensor blocks = Tensor::empty({p, s.outer, s.n, s.inner}, x.dtype(), x.device());
  group.all_gather(synced_buffer(mine), synced_buffer(blocks));
  Shape out = x.shape();
  out[static_cast<std::size_t>(dim)] = s.n * p;
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
  const OuterDimInner s = outer_dim_inner(x, dim);
  const std::int64_t p = group.world_size(), n = s.n / p;
  const Tensor blocks = k::contiguous(k::transpose(k::reshape(k::contiguous(x), {s.outer, p, n, s.inner}), 0, 1));
  Shape out = x.shape();
  out[static_cast<std::size_t>(dim)] = n;
  Tensor mine = Tensor::empty(out, x.dtype(), x.device());
  group.reduce_scatter(synced_buffer(blocks), synced_buffer(mine), ReduceOp::SUM);
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
