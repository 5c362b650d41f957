// Softmax and log-softmax along one dimension, numerically stable (the row maximum is
// subtracted before exponentiating, so large logits do not overflow).
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// exp(x_i - max) / sum_j exp(x_j - max) along `dim`.
Tensor softmax(const Tensor& x, std::int64_t dim);
/// x_i - max - log sum_j exp(x_j - max) along `dim`.
Tensor log_softmax(const Tensor& x, std::int64_t dim);
/// Gradient of softmax given its output y: y * (g - sum(g * y)).
Tensor softmax_backward(const Tensor& grad, const Tensor& y, std::int64_t dim);
/// Gradient of log_softmax given its output y: g - exp(y) * sum(g).
Tensor log_softmax_backward(const Tensor& grad, const Tensor& y, std::int64_t dim);

}  // namespace ringgrad::kernels
