// The CUDA side of bf16 matmul precision: a float32 array rounded to bfloat16 bits, one
// thread per element in a grid-stride loop (the same rounding function as the CPU's).
#include "tensor/cublas.h"
#include "tensor/cuda_common.h"
#include "tensor/precision.h"

namespace ringgrad::cuda {
namespace {

__global__ void to_bfloat16_kernel(const float* src, std::uint16_t* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    dst[i] = bfloat16_bits(src[i]);
  }
}

}  // namespace

void to_bfloat16(const float* src, std::uint16_t* dst, std::int64_t n, int device) {
  if (n == 0) return;
  DeviceGuard guard(device);
  to_bfloat16_kernel<<<blocks_for(n), kThreads, 0, stream(device)>>>(src, dst, n);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ringgrad::cuda
