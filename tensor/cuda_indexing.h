// How a CUDA kernel finds element i of a strided tensor: the row-major index i is split into
// coordinates, which the strides turn into an element offset. Broadcast dimensions have
// stride 0. Passed to kernels by value, so it has a fixed capacity of kMaxDims dimensions.
#pragma once

#include <cstdint>

#include "tensor/host_device.h"
#include "tensor/shape.h"

namespace ringgrad::cuda {

constexpr int kMaxDims = 8;

struct StridedIndex {
  int ndim = 0;
  std::int64_t sizes[kMaxDims] = {};
  std::int64_t strides[kMaxDims] = {};
  std::int64_t offset = 0;

  /// Element offset of the row-major index `i`.
  RINGGRAD_HOST_DEVICE std::int64_t operator()(std::int64_t i) const {
    std::int64_t at = offset;
    for (int d = ndim - 1; d >= 0; --d) {
      at += (i % sizes[d]) * strides[d];
      i /= sizes[d];
    }
    return at;
  }
};

/// The index of a view with `shape` and `strides` starting at element `offset`; throws
/// std::invalid_argument naming `op` above kMaxDims dimensions.
StridedIndex strided_index(const Shape& shape, const Strides& strides, std::int64_t offset, const char* op);

}  // namespace ringgrad::cuda
