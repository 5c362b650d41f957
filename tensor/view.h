// Views: new shapes and strides over the same storage, no data copied. Writes through a view
// are seen by its base. These kernels record no autograd history (autograd/ wraps them).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// Same data, new shape (one size may be -1: inferred). Needs a contiguous tensor; throws
/// std::invalid_argument naming both shapes when the element counts differ.
Tensor view(const Tensor& t, Shape shape);
/// As view, but copies first when `t` is not contiguous.
Tensor reshape(const Tensor& t, Shape shape);
/// Swaps dimensions d0 and d1.
Tensor transpose(const Tensor& t, std::int64_t d0, std::int64_t d1);
/// Reorders dimensions: result dim i is input dim dims[i].
Tensor permute(const Tensor& t, const std::vector<std::int64_t>& dims);
/// Elements [start, start + length) along `dim`.
Tensor narrow(const Tensor& t, std::int64_t dim, std::int64_t start, std::int64_t length);
/// Broadcasts size-1 (or missing leading) dimensions to `shape` with stride 0.
Tensor expand(const Tensor& t, const Shape& shape);
/// Inserts a size-1 dimension at `dim`.
Tensor unsqueeze(const Tensor& t, std::int64_t dim);
/// Removes dimension `dim`, which must have size 1.
Tensor squeeze(const Tensor& t, std::int64_t dim);

/// `t` itself when contiguous, else a contiguous copy.
Tensor contiguous(const Tensor& t);
/// A contiguous copy that shares nothing with `t`.
Tensor clone(const Tensor& t);
/// A contiguous copy converted to `dtype`.
Tensor to_dtype(const Tensor& t, DType dtype);
/// Writes `src` (broadcast to dst's shape, converted to dst's dtype) into `dst` in place. The
/// two must not overlap in memory (as in torch's copy_, the result would depend on the layout).
void copy_(const Tensor& dst, const Tensor& src);

}  // namespace ringgrad::kernels
