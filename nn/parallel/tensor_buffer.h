// The one place tensors meet the collectives: a contiguous tensor seen as a collectives Buffer,
// after the GPU has finished writing it.
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

/// All elements of `t` as a Buffer, in host or GPU memory, once they are ready to be read: for a
/// GPU tensor it first blocks until every kernel queued on the device's tensor stream has run
/// (cuda::synchronize), because collectives take device buffers that are ready (they run on
/// their own stream) and a gradient is complete only once the kernels that computed it have
/// run. For a host tensor there is nothing to wait for. Throws std::invalid_argument for a non-contiguous
/// tensor: collectives read memory linearly and would otherwise mix up elements.
inline collectives::Buffer synced_buffer(const Tensor& t) {
  if (!t.is_contiguous()) {
    throw std::invalid_argument("synced_buffer: tensor of shape " + shape_str(t.shape()) + " is not contiguous");
  }
  const int device = t.is_cuda() ? t.device().index : collectives::kHost;
  if (t.is_cuda()) cuda::synchronize(device);
  return {t.raw_data(), static_cast<std::size_t>(t.numel()), collective_dtype(t.dtype()), 1, device};
}

}  // namespace ringgrad::nn::parallel
