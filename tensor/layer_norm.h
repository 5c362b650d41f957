// Layer normalisation (Ba, Kiros & Hinton 2016) over the last dimension, forward and backward
// fused: one pass per row for the statistics, one for the output; the backward pass needs only
// the saved per-row mean and 1/std. Cost O(N C) for N rows of C channels, memory-bound.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad::kernels {

struct LayerNormOutput {
  Tensor y;     // [..., C], x's shape and dtype
  Tensor mean;  // [N] per-row mean, N = numel / C
  Tensor rstd;  // [N] per-row 1 / sqrt(var + eps), biased variance as in PyTorch
};

/// y = (x - mean) / sqrt(var + eps) * weight + bias along the last dim C.
/// x: [..., C] float32/float64; weight: [C]; bias: [C] or undefined (no bias); one device
/// (CUDA twin in layer_norm.cu). Throws std::invalid_argument when weight/bias are not [C] or
/// dtypes or devices differ.
LayerNormOutput layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps);

struct LayerNormGrads {
  Tensor dx;       // [..., C]
  Tensor dweight;  // [C]
  Tensor dbias;    // [C], undefined when has_bias is false
};

/// Gradients of layer_norm given dy (x's shape) and the saved mean and rstd:
/// xhat = (x - mean) rstd, g = dy weight,
/// dx = rstd (g - mean(g) - xhat mean(g xhat)), dweight = sum dy xhat, dbias = sum dy.
LayerNormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd, bool has_bias);

}  // namespace ringgrad::kernels
