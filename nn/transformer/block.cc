// Block: the two pre-LayerNorm residual branches of a GPT-2 layer, attention then MLP, each
// added onto the stream x of shape [B, T, C]; checkpointed whole when blocks are recomputed.
#include "nn/transformer/block.h"

#include <stdexcept>

#include "autograd/checkpoint.h"
#include "autograd/ops.h"

namespace ringgrad::nn {

Block::Block(const GPTConfig& config) : recompute_(config.recompute == Recompute::Blocks) {
  // The router's load-balancing loss is kept from the forward that the loss reads: a
  // checkpointed block's first forward runs without a graph, so that loss would have no gradient.
  if (recompute_ && config.moe_experts > 0)
    throw std::invalid_argument("Block: recompute blocks with mixture-of-experts layers is not supported (the "
                                "load-balancing loss would lose its gradient); recompute attention instead");
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
  if (!recompute_) return residual_branches(x);
  return checkpoint([this](const std::vector<Tensor>& in) { return residual_branches(in[0]); }, {x});
}

Tensor Block::residual_branches(const Tensor& x) {
  const Tensor h = x + (*attn)((*ln_1)(x));
  const Tensor x2 = (*ln_2)(h);
  return h + (moe ? (*moe)(x2) : (*mlp)(x2));
}

}  // namespace ringgrad::nn
