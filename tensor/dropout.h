// Dropout's random mask (Srivastava et al. 2014), drawn from a seeded Generator so a run
// (and a resumed run) drops the same units, on the CPU or a GPU alike.
#pragma once

#include "tensor/counter_rng.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// A tensor of `shape` and `dtype` (float32/float64) on `device` whose elements are 0 with
/// probability p and 1 / (1 - p) otherwise ("inverted" dropout: the expectation of x * mask is
/// x). Draws numel values from `gen`; element i uses draw gen.offset() + 1 + i, so the mask is
/// the same on every device. Throws std::invalid_argument unless 0 <= p < 1.
Tensor dropout_mask(const Shape& shape, double p, DType dtype, Generator& gen, Device device = kCPU);

/// Element i of the mask for draw `counter` (shared by the CPU loop and the CUDA kernel).
template <typename T>
RINGGRAD_HOST_DEVICE T dropout_mask_value(std::uint64_t seed, std::uint64_t counter, double p, T keep) {
  return uniform_double(seed, counter) < p ? T(0) : keep;
}

}  // namespace ringgrad::kernels
