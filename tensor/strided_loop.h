// The one loop every element-wise kernel shares: walk N strided operands of the same shape
// row by row. Dimensions that are laid out back-to-back in every operand are merged first, so
// contiguous tensors become a single long row the compiler can vectorise.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tensor/shape.h"

namespace ringgrad {

/// Calls row(offsets, n, steps) for each innermost row of `shape`, where offsets[k] is the
/// element offset of operand k at the row's start and steps[k] its stride along the row.
/// strides[k] must have shape.size() entries (0 for broadcast dimensions).
template <std::size_t N, typename RowFn>
void for_each_row(const Shape& shape, std::array<Strides, N> strides,
                  std::array<std::int64_t, N> offsets, RowFn&& row) {
  // Merge dimension d into d+1 when every operand steps over d exactly as one full row of d+1.
  Shape sizes = shape;
  for (std::size_t d = sizes.size(); d-- > 1;) {
    bool mergeable = true;
    for (std::size_t k = 0; k < N; ++k) {
      mergeable &= strides[k][d - 1] == strides[k][d] * sizes[d];
    }
    if (!mergeable) continue;
    sizes[d] *= sizes[d - 1];
    sizes.erase(sizes.begin() + static_cast<std::ptrdiff_t>(d - 1));
    for (auto& s : strides) s.erase(s.begin() + static_cast<std::ptrdiff_t>(d - 1));
  }
  for (std::int64_t s : sizes) {
    if (s == 0) return;
  }
  if (sizes.empty()) {  // a 0-d tensor: one element
    row(offsets, std::int64_t{1}, std::array<std::int64_t, N>{});
    return;
  }

  const std::size_t last = sizes.size() - 1;
  std::array<std::int64_t, N> steps{};
  for (std::size_t k = 0; k < N; ++k) steps[k] = strides[k][last];

  // An odometer over the outer dimensions.
  std::vector<std::int64_t> index(last, 0);
  while (true) {
    row(offsets, sizes[last], steps);
    std::size_t d = last;
    while (d-- > 0) {
      ++index[d];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][d];
      if (index[d] < sizes[d]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][d] * sizes[d];
      index[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

}  // namespace ringgrad
