// LayerNorm: weight 1 and bias 0 at initialisation, forward through the fused layer_norm op.
#include "nn/transformer/layer_norm.h"

#include "autograd/transformer_ops.h"

namespace ringgrad::nn {

LayerNorm::LayerNorm(std::int64_t channels, bool with_bias, double eps, DType dtype) : eps_(eps) {
  weight = register_parameter("weight", Tensor::ones({channels}, dtype));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({channels}, dtype));
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps_); }

}  // namespace ringgrad::nn
