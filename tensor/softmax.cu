// CUDA twins of softmax.cc's row kernels: a warp per row. Each lane walks every 32nd element
// of the row, and the row's max or sum is shared by shuffles (cuda_warp.h), so a row of any
// length takes passes of 32 coalesced reads. The max is subtracted before exponentiating.
#include <cmath>

#include "tensor/cuda_kernels.h"
#include "tensor/cuda_launch.h"
#include "tensor/cuda_warp.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::kWarp;
using ringgrad::cuda::warp_max;
using ringgrad::cuda::warp_sum;

template <typename T>
__device__ T row_max(const T* in, std::int64_t n, int lane) {
  T m = in[0];
  for (std::int64_t j = lane; j < n; j += kWarp) m = in[j] > m ? in[j] : m;
  return warp_max(m);
}

template <typename T>
__global__ void softmax_rows_kernel(SoftmaxOp op, const T* x, const T* y, T* out, std::int64_t rows, std::int64_t n) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t warps_per_block = blockDim.x / kWarp;
  for (std::int64_t r = blockIdx.x * warps_per_block + threadIdx.x / kWarp; r < rows;
       r += std::int64_t{gridDim.x} * warps_per_block) {
    const T* in = x + r * n;  // the input, or the incoming gradient for the backward ops
    const T* saved = y == nullptr ? nullptr : y + r * n;  // the forward op's output
    T* o = out + r * n;
    T total = 0;
    switch (op) {
      case SoftmaxOp::softmax: {  // exp(x_i - max) / sum_j exp(x_j - max)
        const T mx = row_max(in, n, lane);
        for (std::int64_t j = lane; j < n; j += kWarp) total += o[j] = std::exp(in[j] - mx);
        total = warp_sum(total);
        for (std::int64_t j = lane; j < n; j += kWarp) o[j] /= total;
        break;
      }
      case SoftmaxOp::log_softmax: {  // x_i - max - log sum_j exp(x_j - max)
        const T mx = row_max(in, n, lane);
        for (std::int64_t j = lane; j < n; j += kWarp) total += std::exp(in[j] - mx);
        const T log_total = mx + std::log(warp_sum(total));
        for (std::int64_t j = lane; j < n; j += kWarp) o[j] = in[j] - log_total;
        break;
      }
      case SoftmaxOp::softmax_backward: {  // y * (g - sum(g * y))
        for (std::int64_t j = lane; j < n; j += kWarp) total += in[j] * saved[j];
        const T dot = warp_sum(total);
        for (std::int64_t j = lane; j < n; j += kWarp) o[j] = saved[j] * (in[j] - dot);
        break;
      }
      case SoftmaxOp::log_softmax_backward: {  // g - exp(y) * sum(g)
        for (std::int64_t j = lane; j < n; j += kWarp) total += in[j];
        total = warp_sum(total);
        for (std::int64_t j = lane; j < n; j += kWarp) o[j] = in[j] - std::exp(saved[j]) * total;
        break;
      }
    }
  }
}

}  // namespace

void softmax_rows(SoftmaxOp op, const Tensor& x, const Tensor& y, const Tensor& out, const char* name) {
  if (y.defined()) check_same_device(name, x, y);
  const std::int64_t n = x.dim() == 0 ? 1 : x.size(-1);
  const std::int64_t rows = n == 0 ? 0 : x.numel() / n;
  const int device = x.device().index;
  dispatch_floating(x.dtype(), name, [&]<typename T>() {
    if (rows == 0) return;
    ringgrad::cuda::DeviceGuard guard(device);
    constexpr std::int64_t kRowsPerBlock = ringgrad::cuda::kThreads / kWarp;
    const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((rows + kRowsPerBlock - 1) / kRowsPerBlock, 65535));
    softmax_rows_kernel<<<blocks, ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
        op, x.data<T>(), y.defined() ? y.data<T>() : nullptr, out.data<T>(), rows, n);
    RINGGRAD_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace ringgrad::kernels::cuda
