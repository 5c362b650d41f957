// Causal multi-head self-attention (Vaswani et al. 2017) as in GPT-2: one Linear makes q, k
// and v together ([B, T, 3C]), the fused op attends causally per head, one Linear projects back.
#pragma once

#include <memory>

#include "nn/linear.h"
#include "nn/transformer/config.h"

namespace ringgrad::nn {

/// x: [B, T, C] -> [B, T, C]. Children c_attn (C -> 3C) and c_proj (C -> C), nanoGPT's names.
/// Dropout (config.dropout) is applied to the output projection in training mode. With
/// config.recompute Attention, the attention core keeps only qkv and recomputes its
/// probabilities during backward.
class CausalSelfAttention : public Module {
 public:
  explicit CausalSelfAttention(const GPTConfig& config);
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<Linear> c_attn, c_proj;

 private:
  std::int64_t n_head_;
  double dropout_;
  bool rotary_, qk_norm_, recompute_;
};

}  // namespace ringgrad::nn
