// GELU's tanh approximation (Hendrycks & Gimpel 2016, as GPT-2 uses it) and its derivative,
// written once for the CPU kernels (elementwise.cc) and their CUDA twins (elementwise.cu).
#pragma once

#include <cmath>
#include <type_traits>

#include "tensor/host_device.h"

namespace ringgrad::kernels {

// The two constants of the tanh approximation of GELU.
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

/// tanh for GELU. float: Eigen's 13/6 rational approximation on [-7.9, 7.9] (saturated
/// beyond), within a few ulp; being calls-free it vectorises, where std::tanh made GELU a
/// quarter of a GPT training step. double (gradient checks) keeps std::tanh.
template <typename T>
RINGGRAD_HOST_DEVICE T gelu_tanh(T u) {
  if constexpr (std::is_same_v<T, float>) {
    constexpr float kClamp = 7.90531110763549805f;  // plain selects, which vectorise
    float x = u > kClamp ? kClamp : u;
    x = x < -kClamp ? -kClamp : x;
    const float x2 = x * x;
    float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
    p = p * x2 + -8.60467152213735e-11f;
    p = p * x2 + 5.12229709037114e-08f;
    p = p * x2 + 1.48572235717979e-05f;
    p = p * x2 + 6.37261928875436e-04f;
    p = p * x2 + 4.89352455891786e-03f;
    float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
    q = q * x2 + 2.26843463243900e-03f;
    q = q * x2 + 4.89352518554385e-03f;
    return x * p / q;
  } else {
    return std::tanh(u);
  }
}

/// The argument of GELU's tanh: sqrt(2/pi) (x + 0.044715 x^3).
template <typename T>
RINGGRAD_HOST_DEVICE T gelu_inner(T x) {
  return T(kGeluScale) * (x + T(kGeluCubic) * x * x * x);
}

/// GELU's value, given t = tanh(gelu_inner(x)): 0.5 x (1 + t).
template <typename T>
RINGGRAD_HOST_DEVICE T gelu_value_given_tanh(T x, T t) {
  return T(0.5) * x * (1 + t);
}

/// GELU's slope d gelu(x)/dx, given t = tanh(gelu_inner(x)):
/// d/dx [x/2 (1 + tanh u)] = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) du/dx.
template <typename T>
RINGGRAD_HOST_DEVICE T gelu_slope_given_tanh(T x, T t) {
  const T d_inner = T(kGeluScale) * (1 + 3 * T(kGeluCubic) * x * x);
  return T(0.5) * (1 + t) + T(0.5) * x * (1 - t * t) * d_inner;
}

/// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T>
RINGGRAD_HOST_DEVICE T gelu_value(T x) {
  return gelu_value_given_tanh(x, gelu_tanh(gelu_inner(x)));
}

/// g * d gelu(v) / dv.
template <typename T>
RINGGRAD_HOST_DEVICE T gelu_grad(T g, T v) {
  return g * gelu_slope_given_tanh(v, gelu_tanh(gelu_inner(v)));
}

}  // namespace ringgrad::kernels
