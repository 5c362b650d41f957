// CUDA twin of layer_norm.cc: one warp per row of C channels (cuda_rows.h); the 32 lanes
// stride over the row and warp shuffles give the row sums (two passes for the
// variance, as on the CPU). Backward: dx the same way, then dweight and dbias as column sums
// over the rows (cuda_column_sums.h).
#include <cmath>

#include "tensor/cuda_column_sums.h"
#include "tensor/cuda_common.h"
#include "tensor/cuda_kernels.h"
#include "tensor/cuda_rows.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::blocks_for_rows;
using ringgrad::cuda::first_row;
using ringgrad::cuda::kWarp;
using ringgrad::cuda::row_step;
using ringgrad::cuda::warp_sum;

template <typename T>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, std::int64_t rows,
                                  std::int64_t c, T eps) {
  const int lane = ringgrad::cuda::lane();
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    const T* xr = x + r * c;
    T* yr = y + r * c;
    T s = 0;
    for (std::int64_t i = lane; i < c; i += kWarp) s += xr[i];
    const T mu = warp_sum(s) / static_cast<T>(c);
    T sq = 0;
    for (std::int64_t i = lane; i < c; i += kWarp) sq += (xr[i] - mu) * (xr[i] - mu);
    const T rs = 1 / std::sqrt(warp_sum(sq) / static_cast<T>(c) + eps);
    for (std::int64_t i = lane; i < c; i += kWarp) yr[i] = (xr[i] - mu) * rs * w[i] + (b ? b[i] : T(0));
    if (lane == 0) {
      mean[r] = mu;
      rstd[r] = rs;
    }
  }
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)) per row, g = dy w.
template <typename T>
__global__ void layer_norm_dx_kernel(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx,
                                     std::int64_t rows, std::int64_t c) {
  const int lane = ringgrad::cuda::lane();
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    const T* xr = x + r * c;
    const T* dyr = dy + r * c;
    T* dxr = dx + r * c;
    const T mu = mean[r], rs = rstd[r];
    T sum_g = 0, sum_gx = 0;
    for (std::int64_t i = lane; i < c; i += kWarp) {
      sum_g += dyr[i] * w[i];
      sum_gx += dyr[i] * w[i] * (xr[i] - mu) * rs;
    }
    const T mean_g = warp_sum(sum_g) / static_cast<T>(c), mean_gx = warp_sum(sum_gx) / static_cast<T>(c);
    for (std::int64_t i = lane; i < c; i += kWarp) {
      const T xhat = (xr[i] - mu) * rs;
      dxr[i] = rs * (dyr[i] * w[i] - mean_g - xhat * mean_gx);
    }
  }
}

// dweight's term: dy xhat at row r, channel j.
template <typename T>
struct DyXhat {
  const T *dy, *x, *mean, *rstd;
  std::int64_t c;
  __device__ T operator()(std::int64_t r, std::int64_t j) const {
    return dy[r * c + j] * (x[r * c + j] - mean[r]) * rstd[r];
  }
};

}  // namespace

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const Tensor& y,
                const Tensor& mean, const Tensor& rstd) {
  const std::int64_t c = x.size(-1), rows = mean.numel();
  if (rows == 0) return;
  const int device = x.device().index;
  ringgrad::cuda::DeviceGuard guard(device);
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    layer_norm_kernel<<<blocks_for_rows(rows), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
        x.data<T>(), weight.data<T>(), bias.defined() ? bias.data<T>() : nullptr, y.data<T>(), mean.data<T>(),
        rstd.data<T>(), rows, c, static_cast<T>(eps));
  });
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

void layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                         const Tensor& rstd, const Tensor& dx, const Tensor& dweight, const Tensor& dbias) {
  const std::int64_t c = x.size(-1), rows = mean.numel();
  if (rows == 0) return;
  const int device = x.device().index;
  ringgrad::cuda::DeviceGuard guard(device);
  dispatch_floating(x.dtype(), "layer_norm_backward", [&]<typename T>() {
    layer_norm_dx_kernel<<<blocks_for_rows(rows), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device)>>>(
        dy.data<T>(), x.data<T>(), weight.data<T>(), mean.data<T>(), rstd.data<T>(), dx.data<T>(), rows, c);
    RINGGRAD_CUDA_CHECK(cudaGetLastError());
    ringgrad::cuda::column_sums(device, DyXhat<T>{dy.data<T>(), x.data<T>(), mean.data<T>(), rstd.data<T>(), c}, rows,
                                c, dweight.data<T>());
    if (dbias.defined()) {
      ringgrad::cuda::column_sums(device, ringgrad::cuda::MatrixElement<T>{dy.data<T>(), c}, rows, c, dbias.data<T>());
    }
  });
}

}  // namespace ringgrad::kernels::cuda
