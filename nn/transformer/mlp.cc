// MLP: c_fc to 4C, GELU (or ReLU squared), c_proj back to C, then dropout (active in training
// mode only).
#include "nn/transformer/mlp.h"

#include "autograd/ops.h"
#include "autograd/transformer_ops.h"

namespace ringgrad::nn {

MLP::MLP(const GPTConfig& config) : dropout_(config.dropout), relu_squared_(config.relu_squared) {
  c_fc = register_module("c_fc", std::make_shared<Linear>(config.n_embd, 4 * config.n_embd, config.bias, config.dtype));
  c_proj = register_module("c_proj", std::make_shared<Linear>(4 * config.n_embd, config.n_embd, config.bias, config.dtype));
}

Tensor MLP::activation(const Tensor& h, bool relu_squared) {
  if (!relu_squared) return gelu(h);
  const Tensor r = relu(h);
  return r * r;
}

Tensor MLP::forward(const Tensor& x) { return dropout((*c_proj)(activation((*c_fc)(x), relu_squared_)), dropout_, is_training()); }

}  // namespace ringgrad::nn
