// Block: the two pre-LayerNorm residual branches of a GPT-2 layer, attention then MLP, each
// added onto the stream x of shape [B, T, C].
#include "nn/transformer/block.h"

#include "autograd/ops.h"

namespace ringgrad::nn {

Block::Block(const GPTConfig& config) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(config.n_embd, config.bias, 1e-5, config.dtype));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(config));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(config.n_embd, config.bias, 1e-5, config.dtype));
  if (config.moe_experts > 0) {
    moe = register_module("mlp", std::make_shared<MoE>(config));
  } else {
    mlp = register_module("mlp", std::make_shared<MLP>(config));
  }
}

Tensor Block::forward(const Tensor& x) {
  const Tensor h = x + (*attn)((*ln_1)(x));
  const Tensor x2 = (*ln_2)(h);
  return h + (moe ? (*moe)(x2) : (*mlp)(x2));
}

}  // namespace ringgrad::nn
