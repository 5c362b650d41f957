// The naive strategy's whole communication: one blocking all-reduce per parameter, in
// parameter order, once backward has finished.
#include "nn/parallel/data_parallel/ddp_naive.h"

#include "nn/parallel/tensor_buffer.h"

namespace ringgrad::nn::parallel {

void NaiveDataParallel::backward(const Tensor& loss) {
  DataParallel::backward(loss);
  if (sync_enabled_) sync_gradients();
}

void NaiveDataParallel::sync_gradients() {
  if (comm_.world_size() == 1) return;
  timed_wait([&] {
    for (Tensor& p : params_) {
      // A parameter this rank did not use still takes part, with a zero gradient: every rank
      // must issue the same collectives in the same order.
      if (!p.grad().defined()) p.set_grad(Tensor::zeros(p.shape(), p.dtype(), p.device()));
      const Tensor g = p.grad();
      comm_.all_reduce(synced_buffer(g), synced_buffer(g), collectives::ReduceOp::AVG);
      stats_.bytes += static_cast<double>(g.numel()) * static_cast<double>(dtype_size(g.dtype()));
    }
  });
}

}  // namespace ringgrad::nn::parallel
