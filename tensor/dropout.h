// Dropout's random mask (Srivastava et al. 2014), drawn from a seeded Generator so a run
// (and a resumed run) drops the same units.
#pragma once

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// A tensor of `shape` and `dtype` (float32/float64) whose elements are 0 with probability p
/// and 1 / (1 - p) otherwise ("inverted" dropout: the expectation of x * mask is x).
/// Draws numel values from `gen`. Throws std::invalid_argument unless 0 <= p < 1.
Tensor dropout_mask(const Shape& shape, double p, DType dtype, Generator& gen);

}  // namespace ringgrad::kernels
