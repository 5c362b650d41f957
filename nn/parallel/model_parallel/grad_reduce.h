// Gradients all-reduced over a group, parameter by parameter: what the model-parallel code does
// where a parameter's gradient is split across ranks that saw different data (data- and
// context-parallel replicas average; sequence-parallel replicas of a LayerNorm sum).
#pragma once

#include <vector>

#include "collectives/communicator.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::parallel {

/// Every rank of `group` passes the same parameters in the same order; each gradient (float32
/// or float64, contiguous) is all-reduced with `op` in place. A parameter without a gradient
/// takes part with zeros, set on it. Throws what the collective throws.
void all_reduce_grads(const std::vector<Tensor>& params, collectives::Communicator& group, collectives::ReduceOp op);

}  // namespace ringgrad::nn::parallel
