// CUDA twin of attention.cc: the same GEMMs on the same strided rows of qkv, through cuBLAS
// (per batch element b, one strided-batched call covers all H heads), and the causal softmax and
// its backward as row kernels, one warp per row of T scores (cuda_rows.h).
#include <cmath>

#include "tensor/cuda_common.h"
#include "tensor/cuda_kernels.h"
#include "tensor/cuda_rows.h"
#include "tensor/gemm.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::first_row;
using ringgrad::cuda::kWarp;
using ringgrad::cuda::row_step;
using ringgrad::cuda::warp_max;
using ringgrad::cuda::warp_sum;

// In place on rows of [B, H, T, T] scores: row r is time step t = r % T; softmax over j <= t,
// zero beyond.
template <typename T>
__global__ void causal_softmax_kernel(T* att, std::int64_t rows, std::int64_t t_len) {
  const int lane = ringgrad::cuda::lane();
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    T* p = att + r * t_len;
    const std::int64_t t = r % t_len;
    T mx = p[0];
    for (std::int64_t j = lane; j <= t; j += kWarp) mx = p[j] > mx ? p[j] : mx;
    mx = warp_max(mx);
    T s = 0;
    for (std::int64_t j = lane; j <= t; j += kWarp) {
      p[j] = std::exp(p[j] - mx);
      s += p[j];
    }
    const T inv = 1 / warp_sum(s);
    for (std::int64_t j = lane; j <= t; j += kWarp) p[j] *= inv;
    for (std::int64_t j = t + 1 + lane; j < t_len; j += kWarp) p[j] = 0;
  }
}

// In place on rows of dP: dS = P (dP - rowsum(dP P)) over j <= t, zero beyond.
template <typename T>
__global__ void causal_softmax_backward_kernel(T* ds, const T* att, std::int64_t rows, std::int64_t t_len) {
  const int lane = ringgrad::cuda::lane();
  for (std::int64_t r = first_row(); r < rows; r += row_step()) {
    T* g = ds + r * t_len;
    const T* p = att + r * t_len;
    const std::int64_t t = r % t_len;
    T dot = 0;
    for (std::int64_t j = lane; j <= t; j += kWarp) dot += g[j] * p[j];
    dot = warp_sum(dot);
    for (std::int64_t j = lane; j <= t; j += kWarp) g[j] = p[j] * (g[j] - dot);
    for (std::int64_t j = t + 1 + lane; j < t_len; j += kWarp) g[j] = 0;
  }
}

struct Dims {
  std::int64_t b, t, c, h, hs;
};

// C = alpha op(A) op(B) for the H heads of one batch element at once: head h's operands start
// a_step, b_step, c_step elements after head 0's.
template <typename T>
void heads_gemm(Device device, const Dims& d, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                T alpha, const T* a, std::int64_t lda, std::int64_t a_step, const T* b, std::int64_t ldb,
                std::int64_t b_step, T* c, std::int64_t ldc, std::int64_t c_step) {
  GemmArgs<T> g;
  g.trans_a = ta, g.trans_b = tb, g.m = m, g.n = n, g.k = k, g.alpha = alpha;
  g.a = a, g.lda = lda, g.b = b, g.ldb = ldb, g.beta = 0, g.c = c, g.ldc = ldc;
  gemm_batched(device, g, {d.h, a_step, b_step, c_step});
}

Dims dims_of(const Tensor& qkv, std::int64_t n_head) {
  const std::int64_t c = qkv.size(2) / 3;
  return {qkv.size(0), qkv.size(1), c, n_head, c / n_head};
}

template <typename Kernel, typename... Args>
void launch_rows(const Device& device, std::int64_t rows, Kernel kernel, Args... args) {
  kernel<<<ringgrad::cuda::blocks_for_rows(rows), ringgrad::cuda::kThreads, 0, ringgrad::cuda::stream(device.index)>>>(
      args...);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void causal_attention(const Tensor& qkv, std::int64_t n_head, const Tensor& y, const Tensor& att) {
  const Dims d = dims_of(qkv, n_head);
  const Device device = qkv.device();
  if (d.b * d.t * d.c == 0) return;
  ringgrad::cuda::DeviceGuard guard(device.index);
  dispatch_floating(qkv.dtype(), "causal_attention", [&]<typename T>() {
    const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(d.hs)));
    const std::int64_t row = 3 * d.c, tt = d.t * d.t;  // stride between time steps in qkv; one head's scores
    for (std::int64_t b = 0; b < d.b; ++b) {  // S = Q K^T / sqrt(hs)
      const T* q = qkv.data<T>() + b * d.t * row;
      heads_gemm<T>(device, d, false, true, d.t, d.t, d.hs, scale, q, row, d.hs, q + d.c, row, d.hs,
                    att.data<T>() + b * d.h * tt, d.t, tt);
    }
    launch_rows(device, d.b * d.h * d.t, causal_softmax_kernel<T>, att.data<T>(), d.b * d.h * d.t, d.t);
    for (std::int64_t b = 0; b < d.b; ++b) {  // Y = P V
      const T* v = qkv.data<T>() + b * d.t * row + 2 * d.c;
      heads_gemm<T>(device, d, false, false, d.t, d.hs, d.t, T(1), att.data<T>() + b * d.h * tt, d.t, tt, v, row,
                    d.hs, y.data<T>() + b * d.t * d.c, d.c, d.hs);
    }
  });
}

void causal_attention_backward(const Tensor& dy, const Tensor& qkv, const Tensor& att, std::int64_t n_head,
                               const Tensor& dqkv) {
  const Dims d = dims_of(qkv, n_head);
  const Device device = qkv.device();
  if (d.b * d.t * d.c == 0) return;
  ringgrad::cuda::DeviceGuard guard(device.index);
  const Tensor scratch = Tensor::empty(att.shape(), att.dtype(), device);  // dP, then dS, of every head
  dispatch_floating(qkv.dtype(), "causal_attention_backward", [&]<typename T>() {
    const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(d.hs)));
    const std::int64_t row = 3 * d.c, tt = d.t * d.t;
    for (std::int64_t b = 0; b < d.b; ++b) {
      const T* q = qkv.data<T>() + b * d.t * row;
      T* dq = dqkv.data<T>() + b * d.t * row;
      const T* p = att.data<T>() + b * d.h * tt;
      const T* g = dy.data<T>() + b * d.t * d.c;
      T* ds = scratch.data<T>() + b * d.h * tt;
      heads_gemm<T>(device, d, true, false, d.t, d.hs, d.t, T(1), p, d.t, tt, g, d.c, d.hs, dq + 2 * d.c, row,
                    d.hs);  // dV = P^T dY
      heads_gemm<T>(device, d, false, true, d.t, d.t, d.hs, T(1), g, d.c, d.hs, q + 2 * d.c, row, d.hs, ds, d.t,
                    tt);  // dP = dY V^T
    }
    launch_rows(device, d.b * d.h * d.t, causal_softmax_backward_kernel<T>, scratch.data<T>(),
                static_cast<const T*>(att.data<T>()), d.b * d.h * d.t, d.t);
    for (std::int64_t b = 0; b < d.b; ++b) {
      const T* q = qkv.data<T>() + b * d.t * row;
      T* dq = dqkv.data<T>() + b * d.t * row;
      const T* ds = scratch.data<T>() + b * d.h * tt;
      heads_gemm<T>(device, d, false, false, d.t, d.hs, d.t, scale, ds, d.t, tt, q + d.c, row, d.hs, dq, row,
                    d.hs);  // dQ = dS K / sqrt(hs)
      heads_gemm<T>(device, d, true, false, d.t, d.hs, d.t, scale, ds, d.t, tt, q, row, d.hs, dq + d.c, row,
                    d.hs);  // dK = dS^T Q / sqrt(hs)
    }
  });
}

}  // namespace ringgrad::kernels::cuda
