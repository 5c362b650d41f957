// The one place tensors meet the collectives: a contiguous tensor seen as a collectives Buffer.
#pragma once

#include <stdexcept>
#include <string>

#include "collectives/buffer.h"
#include "tensor/cuda_runtime.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::parallel {

inline collectives::DType collective_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return collectives::DType::kFloat32;
    case DType::Float64: return collectives::DType::kFloat64;
    case DType::Int64: return collectives::DType::kInt64;
  }
  throw std::logic_error("collective_dtype: unknown dtype");
}

/// All elements of `t` as a Buffer, in host or GPU memory. Throws std::invalid_argument for a
/// non-contiguous tensor: collectives read memory linearly and would otherwise mix up elements.
/// For a GPU tensor it first waits for the kernels queued on the tensor stream: collectives
/// take device buffers that are ready (they run on their own stream), and a gradient is
/// complete only once the kernels that computed it have run.
inline collectives::Buffer as_buffer(const Tensor& t) {
  if (!t.is_contiguous()) {
    throw std::invalid_argument("as_buffer: tensor of shape " + shape_str(t.shape()) + " is not contiguous");
  }
  const int device = t.is_cuda() ? t.device().index : collectives::kHost;
  if (t.is_cuda()) cuda::synchronize(device);
  return {t.raw_data(), static_cast<std::size_t>(t.numel()), collective_dtype(t.dtype()), 1, device};
}

}  // namespace ringgrad::nn::parallel
