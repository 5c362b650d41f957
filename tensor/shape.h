// Shapes and strides: the arithmetic that lets many tensors view one block of memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringgrad {

/// Sizes of each dimension, outermost first. A 0-d tensor (a scalar) has an empty shape.
using Shape = std::vector<std::int64_t>;
/// Elements to skip to move one step along each dimension (in elements, not bytes).
using Strides = std::vector<std::int64_t>;

/// Number of elements: the product of the sizes (1 for a scalar).
std::int64_t numel(const Shape& shape);

/// Row-major ("C-contiguous") strides for `shape`: the last dimension has stride 1.
Strides contiguous_strides(const Shape& shape);

/// "[2, 3, 4]", for error messages.
std::string shape_str(const Shape& shape);

/// Maps a possibly negative dimension index into [0, ndim). Throws std::out_of_range naming `op`.
std::int64_t normalize_dim(std::int64_t dim, std::int64_t ndim, const char* op);

/// NumPy/PyTorch broadcasting: align shapes at the right; sizes must match or be 1.
/// Throws std::invalid_argument naming `op` and both shapes when they cannot broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace ringgrad
