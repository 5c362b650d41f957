// CUDA twin of dropout.cc's dropout_mask: one thread per element in a grid-stride loop, each
// hashing its own counter (counter_rng.h), so the mask is bit-identical to the CPU's.
#include "tensor/cuda_common.h"
#include "tensor/cuda_kernels.h"
#include "tensor/dropout.h"

namespace ringgrad::kernels::cuda {
namespace {

template <typename T>
__global__ void dropout_mask_kernel(T* mask, std::int64_t n, std::uint64_t seed, std::uint64_t first, double p,
                                    T keep) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    mask[i] = dropout_mask_value(seed, first + static_cast<std::uint64_t>(i), p, keep);
  }
}

}  // namespace

Tensor dropout_mask(const Shape& shape, double p, DType dtype, Generator& gen, Device device) {
  Tensor mask = Tensor::empty(shape, dtype, device);
  const std::int64_t n = mask.numel();
  ringgrad::cuda::DeviceGuard guard(device.index);
  dispatch_floating(dtype, "dropout", [&]<typename T>() {
    if (n == 0) return;
    dropout_mask_kernel<<<ringgrad::cuda::blocks_for(n), ringgrad::cuda::kThreads, 0,
                          ringgrad::cuda::stream(device.index)>>>(mask.data<T>(), n, gen.seed(), gen.offset() + 1, p,
                                                                  static_cast<T>(1 / (1 - p)));
    RINGGRAD_CUDA_CHECK(cudaGetLastError());
  });
  gen.set_offset(gen.offset() + static_cast<std::uint64_t>(n));
  return mask;
}

}  // namespace ringgrad::kernels::cuda
