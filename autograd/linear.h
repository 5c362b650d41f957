// linear(x, W, b) = x W^T + b as one differentiable op: the forward is one GEMM onto the bias
// rows, the backward two GEMMs (dx = dy W, dW = dy^T x) and a column sum (db), with no
// transposed copies of W or of its gradient. nn::Linear and the transformer use it.
//
// Backward split in two (zero-bubble pipelines, Qi et al. 2023, "Zero Bubble Pipeline
// Parallelism"): inside a DeferWeightGrads scope, linear's backward computes dx and db at once
// and queues dW = dy^T x, keeping dy and x alive, instead of computing it. Running the queue
// later (the W pass) adds each dW into its weight's grad() as backward would have. Only linear
// defers: its dW is half of a layer's backward GEMMs; the small rest (norms, embeddings) stays in B.
#pragma once

#include <functional>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad {

/// x: [..., in], weight: [out, in], bias: [out] or undefined -> [..., out] (torch.nn.functional.linear).
/// Throws std::invalid_argument when shapes or dtypes do not fit (see kernels::linear).
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

/// One deferred weight-gradient computation: computes dW and accumulates it into the weight.
using WeightGradPass = std::function<void()>;

/// While alive, backward through linear on this thread appends the dW of every weight that is a
/// leaf (a parameter) to `into` instead of computing it. Scopes do not nest.
class DeferWeightGrads {
 public:
  explicit DeferWeightGrads(std::vector<WeightGradPass>& into);
  ~DeferWeightGrads();
  DeferWeightGrads(const DeferWeightGrads&) = delete;
  DeferWeightGrads& operator=(const DeferWeightGrads&) = delete;
};

}  // namespace ringgrad
