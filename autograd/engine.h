// Reverse-mode differentiation: the walk from an output back to the leaves.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad {

/// Computes d(root)/d(leaf) for every leaf that requires grad and adds it into leaf.grad().
/// `grad` is d(loss)/d(root); it may be omitted when root has one element (it is then 1).
/// Each node runs once, after all gradients flowing into it are summed (reverse topological
/// order by dependency counting); the graph is freed as it is walked.
/// Throws std::invalid_argument when root does not require grad or grad is missing/mis-shaped.
void backward(const Tensor& root, const Tensor& grad = Tensor());

}  // namespace ringgrad
