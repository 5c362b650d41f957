// Column- and row-parallel Linear: slices of one process's Linear, and the forward that puts
// the conjugate ops around the local matmul.
#include "nn/parallel/tensor_parallel_linear.h"

#include <stdexcept>

#include <fmt/format.h>

#include "autograd/linear.h"
#include "autograd/ops.h"
#include "nn/parallel/tensor_parallel_ops.h"
#include "tensor/view.h"

namespace ringgrad::nn::parallel {
namespace {

// This rank's 1/p of `t` along `dim`, as a tensor of its own.
Tensor shard(const Tensor& t, std::int64_t dim, collectives::Communicator& group, const char* layer, const char* what) {
  const std::int64_t n = t.size(dim), p = group.world_size();
  if (n % p != 0)
    throw std::invalid_argument(fmt::format("{} on rank {}: {} = {} does not divide into {} tensor-parallel ranks",
                                            layer, group.rank(), what, n, p));
  return kernels::clone(kernels::narrow(t.detach(), dim, group.rank() * (n / p), n / p));
}

}  // namespace

ColumnParallelLinear::ColumnParallelLinear(const Linear& full, collectives::Communicator& group, bool gather_output)
    : group_(group), gather_output_(gather_output) {
  weight = register_parameter("weight", shard(full.weight, 0, group, "ColumnParallelLinear", "out_features"));
  if (full.bias.defined()) bias = register_parameter("bias", shard(full.bias, 0, group, "ColumnParallelLinear", "out_features"));
}

ColumnParallelLinear::ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                           collectives::Communicator& group, bool with_bias, bool gather_output,
                                           DType dtype)
    : ColumnParallelLinear(Linear(in_features, out_features, with_bias, dtype), group, gather_output) {}

Tensor ColumnParallelLinear::forward(const Tensor& x) {
  const Tensor y = linear(copy_to_group(x, group_), weight, bias);
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
  const Tensor y = reduce_from_group(linear(mine, weight), group_);
  return bias.defined() ? y + bias : y;
}

}  // namespace ringgrad::nn::parallel
