// Element-wise math with NumPy/PyTorch broadcasting. Inputs of a binary op must share a dtype;
// shapes that cannot broadcast throw std::invalid_argument naming the op and both shapes.
// No autograd here: autograd/ records these for backward.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad::kernels {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// a ** b, element-wise.
Tensor pow(const Tensor& a, const Tensor& b);
/// 1 where a == b, else 0, in a's dtype.
Tensor eq(const Tensor& a, const Tensor& b);
/// Scalar forms: the scalar is converted to a's dtype.
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor pow(const Tensor& a, double exponent);

Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
/// GELU, tanh approximation as in GPT-2 (Hendrycks & Gimpel 2016):
/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Tensor gelu(const Tensor& a);

/// grad * d relu(x)/dx.
Tensor relu_backward(const Tensor& grad, const Tensor& x);
/// grad * d gelu(x)/dx for the tanh approximation above.
Tensor gelu_backward(const Tensor& grad, const Tensor& x);
/// GELU of x and its slope d gelu(x)/dx, both shaped as x (contiguous, x's dtype and device),
/// from one tanh per element: what a training forward keeps so that backward is one multiply,
/// grad * slope, bit for bit gelu_backward(grad, x). x: float32 or float64, any device. Float32
/// on the CPU takes one fused loop; float64, strided or GPU inputs compute gelu and
/// gelu_backward of a broadcast 1, and raise what those raise.
struct GeluWithSlope {
  Tensor y, slope;
};
GeluWithSlope gelu_with_slope(const Tensor& x);

// In place (the first argument is written; it is never broadcast).
/// dst += alpha * src, src broadcast to dst's shape.
void add_(const Tensor& dst, const Tensor& src, double alpha = 1.0);
/// dst *= value.
void mul_(const Tensor& dst, double value);
/// Every element of dst = value.
void fill_(const Tensor& dst, double value);

}  // namespace ringgrad::kernels
