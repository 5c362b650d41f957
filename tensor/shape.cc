// Shape arithmetic: element counts, row-major strides, broadcast shapes (NumPy's rule, aligned
// from the last dimension) and their printed form "[2, 3]".
#include "tensor/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace ringgrad {

std::int64_t numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t s : shape) n *= s;
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<std::int64_t>(shape[i], 1);
  }
  return strides;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::int64_t normalize_dim(std::int64_t dim, std::int64_t ndim, const char* op) {
  const std::int64_t d = dim < 0 ? dim + ndim : dim;
  if (d < 0 || d >= ndim) {
    throw std::out_of_range(
        fmt::format("{}: dimension {} out of range for a {}-d tensor", op, dim, ndim));
  }
  return d;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Walk from the right; a missing dimension behaves as size 1.
    const std::int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      throw std::invalid_argument(fmt::format("{}: shapes {} and {} cannot be broadcast together",
                                              op, shape_str(a), shape_str(b)));
    }
    out[n - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

}  // namespace ringgrad
