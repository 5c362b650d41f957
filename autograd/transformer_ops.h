// The differentiable ops a GPT is built from beyond ops.h: fused layer norm, fused causal
// self-attention and dropout. Each forward calls one tensor/ kernel and each backward is
// written out by hand (see tensor/layer_norm.h, tensor/attention.h); all are gradient-checked
// in tests/transformer. Letters: B batch, T time, C channels, H heads.
#pragma once

#include <cstdint>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace ringgrad {

/// Layer normalisation over the last dim (Ba et al. 2016). x: [..., C]; weight: [C];
/// bias: [C] or undefined. Statistics in x's dtype; biased variance, as torch.nn.LayerNorm.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

/// Causal multi-head self-attention on the fused projection: qkv [B, T, 3C] -> y [B, T, C],
/// y_t = sum_{j <= t} softmax_j(q_t . k_j / sqrt(C/H)) v_j per head (Vaswani et al. 2017).
/// Saves the [B, H, T, T] probabilities for backward. Throws std::invalid_argument when the
/// last dim is not 3C with C divisible by n_head.
Tensor causal_self_attention(const Tensor& qkv, std::int64_t n_head);

/// Rotary position embeddings on the fused projection (tensor/rotary.h): qkv [B, T, 3C] with
/// q and k rotated by position (offset + t: offset where this slice of the sequence starts);
/// backward rotates the gradient back (a rotation's inverse is its transpose). Throws what
/// kernels::rotary throws.
Tensor rotary_qk(const Tensor& qkv, std::int64_t n_head, std::int64_t offset = 0);

/// QK-norm on the fused projection (tensor/qk_norm.h): qkv [B, T, 3C] with each head's q and k
/// scaled to unit root-mean-square, v unchanged. Throws what kernels::qk_norm throws.
Tensor qk_norm(const Tensor& qkv, std::int64_t n_head);

/// Inverted dropout: when `training` and p > 0, zeroes each element with probability p and
/// scales the rest by 1 / (1 - p), the mask drawn from `gen`; else returns x unchanged.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());

}  // namespace ringgrad
