// The one launcher behind the element-wise CUDA kernels: f(i) for every i < n, one thread per
// element in a grid-stride loop on the tensor stream. f is a small struct holding raw pointers
// and StridedIndex values, copied to the GPU as the kernel's argument. Included by .cu files.
#pragma once

#include <cstdint>

#include "tensor/cuda_common.h"
#include "tensor/cuda_indexing.h"
#include "tensor/tensor.h"

namespace ringgrad::cuda {

template <typename F>
__global__ void for_each_kernel(std::int64_t n, F f) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    f(i);
  }
}

/// Runs f(i) (a functor with a __device__ operator()) for 0 <= i < n on GPU `device`.
template <typename F>
void for_each(int device, std::int64_t n, const F& f) {
  if (n == 0) return;
  DeviceGuard guard(device);
  for_each_kernel<<<blocks_for(n), kThreads, 0, stream(device)>>>(n, f);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

/// The index of t's element i (row-major over t's shape). Dimensions that t steps over as one
/// (size 1, or laid out back to back) are merged first: a contiguous tensor becomes one
/// dimension, so a thread does one division instead of one per dimension.
inline StridedIndex index_of(const Tensor& t, const char* op) {
  Shape sizes;
  Strides strides;
  for (std::size_t d = 0; d < t.shape().size(); ++d) {
    const std::int64_t size = t.shape()[d], stride = t.strides()[d];
    if (size == 1) continue;  // never moves the offset
    if (!sizes.empty() && strides.back() == stride * size) {
      sizes.back() *= size;
      strides.back() = stride;
    } else {
      sizes.push_back(size);
      strides.push_back(stride);
    }
  }
  return strided_index(sizes, strides, t.offset(), op);
}

/// The start of t's storage as T (an index from index_of includes t's offset).
template <typename T>
T* base(const Tensor& t) {
  return reinterpret_cast<T*>(t.storage()->data());
}

}  // namespace ringgrad::cuda
