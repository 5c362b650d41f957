// all_reduce_grads: one in-place all-reduce per parameter's gradient.
#include "nn/parallel/model_parallel/grad_reduce.h"

#include "nn/parallel/tensor_buffer.h"

namespace ringgrad::nn::parallel {

void all_reduce_grads(const std::vector<Tensor>& params, collectives::Communicator& group, collectives::ReduceOp op) {
  for (Tensor p : params) {
    if (!p.grad().defined()) p.set_grad(Tensor::zeros(p.shape(), p.dtype(), p.device()));
    const Tensor g = p.grad();
    group.all_reduce(synced_buffer(g), synced_buffer(g), op);
  }
}

}  // namespace ringgrad::nn::parallel
