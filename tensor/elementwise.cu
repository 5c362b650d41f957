// CUDA twins of elementwise.cc: one thread per output element in a grid-stride loop, operands
// read through their (broadcast) strides.
#include "tensor/cuda_common.h"
#include "tensor/cuda_indexing.h"
#include "tensor/cuda_kernels.h"

namespace ringgrad::kernels::cuda {
namespace {

template <typename T>
__global__ void fill_kernel(T* dst, ringgrad::cuda::StridedIndex index, std::int64_t n, T value) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    dst[index(i)] = value;
  }
}

}  // namespace

void fill_(const Tensor& dst, double value) {
  const std::int64_t n = dst.numel();
  if (n == 0) return;
  const int device = dst.device().index;
  ringgrad::cuda::DeviceGuard guard(device);
  const auto index = ringgrad::cuda::strided_index(dst.shape(), dst.strides(), dst.offset(), "fill_");
  dispatch_all(dst.dtype(), [&]<typename T>() {
    fill_kernel<<<ringgrad::cuda::blocks_for(n), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
        reinterpret_cast<T*>(dst.storage()->data()), index, n, static_cast<T>(value));
  });
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ringgrad::kernels::cuda
