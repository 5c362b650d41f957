// CUDA twins of the optimizer loops of optim_kernels.h: one thread per element in a grid-stride
// loop, each applying the same per-element step (adam_step, sgd_step) as the CPU.
#include "nn/optim_kernels.h"
#include "tensor/cuda_common.h"

namespace ringgrad::nn::cuda {
namespace {

template <typename T>
__global__ void adam_kernel(T* p, const T* g, T* m, T* v, std::int64_t n, AdamCoefficients<T> c) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    adam_step(p[i], g[i], m[i], v[i], c);
  }
}

template <typename T>
__global__ void sgd_kernel(T* p, const T* g, T* buf, std::int64_t n, SgdCoefficients<T> c) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    sgd_step(p[i], g[i], buf[i], c);
  }
}

}  // namespace

template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, std::int64_t n, const AdamStep& s, int device) {
  if (n == 0) return;
  ringgrad::cuda::DeviceGuard guard(device);
  adam_kernel<<<ringgrad::cuda::blocks_for(n), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
      p, g, m, v, n, AdamCoefficients<T>(s));
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void sgd_update(T* p, const T* g, T* buf, std::int64_t n, double lr, double momentum, double weight_decay, int device) {
  if (n == 0) return;
  ringgrad::cuda::DeviceGuard guard(device);
  sgd_kernel<<<ringgrad::cuda::blocks_for(n), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
      p, g, buf, n, sgd_coefficients<T>(lr, momentum, weight_decay));
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

template void adam_update(float*, const float*, float*, float*, std::int64_t, const AdamStep&, int);
template void adam_update(double*, const double*, double*, double*, std::int64_t, const AdamStep&, int);
template void sgd_update(float*, const float*, float*, std::int64_t, double, double, double, int);
template void sgd_update(double*, const double*, double*, std::int64_t, double, double, double, int);

}  // namespace ringgrad::nn::cuda
