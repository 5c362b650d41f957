// One transformer block with pre-LayerNorm residual branches (GPT-2, Radford et al. 2019):
// x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)).
#pragma once

#include <memory>

#include "nn/transformer/attention.h"
#include "nn/transformer/layer_norm.h"
#include "nn/transformer/mlp.h"
#include "nn/transformer/moe.h"

namespace ringgrad::nn {

/// x: [B, T, C] -> [B, T, C]. Children ln_1, attn, ln_2, mlp (a MoE with config.moe_experts > 0).
/// With config.recompute Blocks, a training forward keeps only x and replays the block during backward.
class Block : public Module {
 public:
  explicit Block(const GPTConfig& config);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;  // null when moe is set
  std::shared_ptr<MoE> moe;  // registered as "mlp"; null without experts

 private:
  Tensor residual_branches(const Tensor& x);
  bool recompute_;
};

}  // namespace ringgrad::nn
