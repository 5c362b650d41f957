// linear(x, W, b) = x W^T + b as one differentiable op: the forward is one GEMM onto the bias
// rows, the backward two GEMMs (dx = dy W, dW = dy^T x) and a column sum (db), with no
// transposed copies of W or of its gradient. nn::Linear and the transformer use it.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad {

/// x: [..., in], weight: [out, in], bias: [out] or undefined -> [..., out] (torch.nn.functional.linear).
/// Throws std::invalid_argument when shapes or dtypes do not fit (see kernels::linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace ringgrad
