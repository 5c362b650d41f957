// Column- and row-parallel Linear: slices of one process's Linear, and the forward that puts
// the conjugate ops around the local matmul.
#include "nn/parallel/model_parallel/tensor_parallel_linear.h"

#include <stdexcept>

#include <fmt/format.h>

#include "autograd/linear.h"
#include "autograd/ops.h"
#include "nn/parallel/model_parallel/tensor_parallel_ops.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

// This rank's shard, or an error naming the layer and the size that does not divide.
Tensor shard(const Tensor& t, std::int64_t dim, collectives::Communicator& group, const char* layer, const char* what,
             int parts = 1) {
  const std::int64_t part = t.size(dim) / parts, p = group.world_size();
  if (t.size(dim) % parts != 0 || part % p != 0)
    throw std::invalid_argument(fmt::format("{} on rank {}: {} = {}{} does not divide into {} tensor-parallel ranks",
                                            layer, group.rank(), what, part, parts > 1 ? " per part" : "", p));
  return shard_along(t, dim, group.rank(), static_cast<int>(p), parts);
}

}  // namespace

Tensor shard_along(const Tensor& t, std::int64_t dim, int rank, int p, int parts) {
  const std::int64_t part = t.size(dim) / parts, n = part / p;
  Shape shape = t.shape();
  shape[static_cast<std::size_t>(dim)] = n * parts;
  Tensor mine = Tensor::empty(shape, t.dtype(), t.device());
  for (int i = 0; i < parts; ++i)
    kernels::copy_(kernels::narrow(mine, dim, i * n, n), kernels::narrow(t.detach(), dim, i * part + rank * n, n));
  return mine;
}

ColumnParallelLinear::ColumnParallelLinear(const Linear& full, collectives::Communicator& group, bool gather_output,
                                           int parts)
    : group_(group), gather_output_(gather_output) {
  if (parts < 1 || (gather_output && parts != 1))
    throw std::invalid_argument(fmt::format("ColumnParallelLinear: parts {} (at least 1, and 1 with gather_output)", parts));
  weight = register_parameter("weight", shard(full.weight, 0, group, "ColumnParallelLinear", "out_features", parts));
  if (full.bias.defined())
    bias = register_parameter("bias", shard(full.bias, 0, group, "ColumnParallelLinear", "out_features", parts));
}

ColumnParallelLinear::ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                           collectives::Communicator& group, bool with_bias, bool gather_output,
                                           DType dtype)
    : ColumnParallelLinear(Linear(in_features, out_features, with_bias, dtype), group, gather_output) {}

Tensor ColumnParallelLinear::forward(const Tensor& x) {
  const Tensor y = linear(sequence_parallel ? gather_sequence(x, group_) : copy_to_group(x, group_), weight, bias);
  return gather_output_ ? gather_from_group(y, group_) : y;
}

RowParallelLinear::RowParallelLinear(const Linear& full, collectives::Communicator& group, bool input_is_parallel)
    : group_(group), input_is_parallel_(input_is_parallel) {
  weight = register_parameter("weight", shard(full.weight, 1, group, "RowParallelLinear", "in_features"));
  if (full.bias.defined()) bias = register_parameter("bias", kernels::clone(full.bias.detach()));
}

RowParallelLinear::RowParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                     collectives::Communicator& group, bool with_bias, bool input_is_parallel,
                                     DType dtype)
    : RowParallelLinear(Linear(in_features, out_features, with_bias, dtype), group, input_is_parallel) {}

Tensor RowParallelLinear::forward(const Tensor& x) {
  const Tensor mine = input_is_parallel_ ? x : scatter_to_group(x, group_);
  const Tensor partial = linear(mine, weight);
  const Tensor y = sequence_parallel ? reduce_scatter_sequence(partial, group_) : reduce_from_group(partial, group_);
  return bias.defined() ? y + bias : y;
}

}  // namespace ringgrad::nn::parallel
