// How the model-parallel examples check themselves against one process: the largest
// element-wise difference of two tensors of the same shape.
#pragma once

#include <algorithm>
#include <cmath>

#include "tensor/tensor.h"
#include "tensor/view.h"

namespace compare {

inline double max_abs_diff(const ringgrad::Tensor& a, const ringgrad::Tensor& b) {
  namespace k = ringgrad::kernels;
  const auto x = k::contiguous(a.detach()).to_vector<double>(), y = k::contiguous(b.detach()).to_vector<double>();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace compare
