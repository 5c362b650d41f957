// Host-side helpers of the CUDA kernels, compiled by g++ (nvcc cannot check fmt's compile-time
// format strings): argument checks and the strided index of a view.
#include <fmt/format.h>

#include <stdexcept>

#include "tensor/cuda_indexing.h"
#include "tensor/cuda_kernels.h"

namespace ringgrad::cuda {

StridedIndex strided_index(const Shape& shape, const Strides& strides, std::int64_t offset, const char* op) {
  if (shape.size() > static_cast<std::size_t>(kMaxDims)) {
    throw std::invalid_argument(fmt::format("{} on cuda: {} dimensions, at most {} supported", op, shape.size(), kMaxDims));
  }
  StridedIndex index;
  index.ndim = static_cast<int>(shape.size());
  for (int d = 0; d < index.ndim; ++d) {
    index.sizes[d] = shape[static_cast<std::size_t>(d)];
    index.strides[d] = strides[static_cast<std::size_t>(d)];
  }
  index.offset = offset;
  return index;
}

}  // namespace ringgrad::cuda

namespace ringgrad::kernels::cuda {

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device()) {
    throw std::invalid_argument(fmt::format("{}: tensors on {} and {}", op, a.device().str(), b.device().str()));
  }
}

}  // namespace ringgrad::kernels::cuda
