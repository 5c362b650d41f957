// Reductions over dimensions, with PyTorch's keepdim convention.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// Sum over `dims` (all dimensions when empty). keepdim leaves reduced dims as size 1.
/// Float32 sums accumulate in float64 along the reduced rows.
Tensor sum(const Tensor& a, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// Mean over `dims` (all when empty).
Tensor mean(const Tensor& a, const std::vector<std::int64_t>& dims = {}, bool keepdim = false);
/// Largest value along `dim` and its index (int64; the first index on ties).
std::pair<Tensor, Tensor> max(const Tensor& a, std::int64_t dim, bool keepdim = false);
/// Index of the largest value along `dim`, as int64.
Tensor argmax(const Tensor& a, std::int64_t dim, bool keepdim = false);
/// Sums a broadcast result back to `shape`: the gradient of expand(x, a.shape()) w.r.t. x.
Tensor sum_to(const Tensor& a, const Shape& shape);

}  // namespace ringgrad::kernels
