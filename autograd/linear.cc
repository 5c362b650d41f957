// linear as one graph node: the fused forward and backward kernels of tensor/linear.h, timed as
// matmul work by the op profiler; dx is computed only when x requires grad, dW later when a
// DeferWeightGrads scope is open during backward.
#include "autograd/linear.h"

#include <memory>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "tensor/linear.h"
#include "tensor/op_profile.h"

namespace ringgrad {
namespace {

thread_local std::vector<WeightGradPass>* deferred_weight_grads = nullptr;

}  // namespace

DeferWeightGrads::DeferWeightGrads(std::vector<WeightGradPass>& into) { deferred_weight_grads = &into; }
DeferWeightGrads::~DeferWeightGrads() { deferred_weight_grads = nullptr; }

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  profile::ProfileScope scope(profile::OpKind::Matmul);
  // Where a deferred dW goes: the weight's AccumulateGrad, the node backward would have sent it to.
  std::shared_ptr<autograd::Node> weight_sink;
  if (GradMode::is_enabled() && weight.requires_grad() && weight.is_leaf()) {
    Tensor w = weight;
    weight_sink = autograd::grad_accumulator(w);
  }
  return autograd::record(
      "linear", kernels::linear(x, weight, bias), {x, weight, bias},
      [x = x.detach(), w = weight.detach(), has_bias = bias.defined(), need_dx = x.requires_grad(),
       weight_sink](const Tensor& g) {
        profile::ProfileScope backward_scope(profile::OpKind::Matmul);
        const bool defer = deferred_weight_grads != nullptr && weight_sink != nullptr;
        kernels::LinearGrads grads = kernels::linear_backward(g, x, w, has_bias, need_dx, !defer);
        if (defer)
          deferred_weight_grads->push_back([g, x, w, weight_sink] {
            profile::ProfileScope w_scope(profile::OpKind::Matmul);
            weight_sink->apply(kernels::linear_backward(g, x, w, false, false).dweight);
          });
        return std::vector<Tensor>{grads.dx, grads.dweight, grads.dbias};
      });
}

}  // namespace ringgrad
