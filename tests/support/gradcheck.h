// Central-difference gradient checks: the independent reference every backward is tested
// against. Inputs are float64 so the finite differences are accurate to ~1e-8.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::testing {

/// Random float64 tensor of `shape` in [-1, 1) that requires grad.
Tensor random_input(const Shape& shape, std::uint64_t seed);

/// Compares autograd's gradient of sum(f(inputs) * w) (w a fixed random weight, so every
/// output element matters) with central differences (f(x+h) - f(x-h)) / 2h, h = 1e-6.
/// Returns an empty string when every element agrees within atol + rtol * |numeric|, else a
/// message naming the input, element and both values.
std::string gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                      const std::vector<Tensor>& inputs, double atol = 1e-7, double rtol = 1e-5);

}  // namespace ringgrad::testing
