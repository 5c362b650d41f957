// linear as one graph node: the fused forward and backward kernels of tensor/linear.h, timed as
// matmul work by the op profiler; dx is computed only when x requires grad.
#include "autograd/linear.h"

#include "autograd/node.h"
#include "tensor/linear.h"
#include "tensor/op_profile.h"

namespace ringgrad {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  profile::ProfileScope scope(profile::OpKind::Matmul);
  return autograd::record(
      "linear", kernels::linear(x, weight, bias), {x, weight, bias},
      [x = x.detach(), w = weight.detach(), has_bias = bias.defined(), need_dx = x.requires_grad()](const Tensor& g) {
        profile::ProfileScope backward_scope(profile::OpKind::Matmul);
        kernels::LinearGrads grads = kernels::linear_backward(g, x, w, has_bias, need_dx);
        return std::vector<Tensor>{grads.dx, grads.dweight, grads.dbias};
      });
}

}  // namespace ringgrad
