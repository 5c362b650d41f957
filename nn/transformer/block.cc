// Block: the two pre-LayerNorm residual branches of a GPT-2 layer, attention then MLP, each
// added onto the stream x of shape [B, T, C]; checkpointed whole when blocks are recomputed.
#include "nn/transformer/block.h"

#include "autograd/checkpoint.h"
#include "autograd/ops.h"

namespace ringgrad::nn {

Block::Block(const GPTConfig& config) : recompute_(config.recompute == Recompute::Blocks) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(config.n_embd, config.bias, 1e-5, config.dtype));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(config));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(config.n_embd, config.bias, 1e-5, config.dtype));
  mlp = register_module("mlp", std::make_shared<MLP>(config));
}

Tensor Block::forward(const Tensor& x) {
  if (!recompute_) return residual_branches(x);
  return checkpoint([this](const std::vector<Tensor>& in) { return residual_branches(in[0]); }, {x});
}

Tensor Block::residual_branches(const Tensor& x) {
  const Tensor h = x + (*attn)((*ln_1)(x));
  return h + (*mlp)((*ln_2)(h));
}

}  // namespace ringgrad::nn
