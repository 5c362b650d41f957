// CUDA twin of attention.cc, in the steps of PyTorch's (and nanoGPT's) unfused attention: q, k
// and v are copied out of the fused projection qkv [B, T, 3C] into the heads layout
// [3, B, H, T, hs] (attention_heads.h), where each product is one strided-batched cuBLAS call
// over all B H heads; the causal softmax and its backward are row kernels, one warp per row of T
// scores (cuda_rows.h); the output is copied back to [B, T, C]. In memory:
//
//   qkv    [B, T, 3C]        q, k, v side by side in a row; head h at channels [h hs, h hs + hs)
//   heads  [3, B, H, T, hs]  q, k or v of pair i = b H + h: one contiguous T x hs block
//   att    [B, H, T, T]      P of pair i at i T^2, zero above the diagonal; saved for backward
//   y      [B, T, C]         the heads side by side, as in qkv
//
// Per layer: forward 2 GEMM calls and 3 other kernels (4 in bf16), backward 4 GEMM calls and 4
// other kernels (6 in bf16), whatever B. The copies read and write qkv once forward, qkv, dy and dqkv once
// backward, less than the [B, H, T, T] scores cost: written by a GEMM, read and written by the
// softmax, read by a GEMM, forward and backward (100 MB a layer in float32 for shakespeare-char,
// B 64, H 6, T 256). At bf16 matmul precision the copy into the heads layout is also the
// conversion to bf16, and P (forward), P and dS (backward) are converted once each, so every
// operand is converted once per layer, not per call.
//
// Why not fused: FlashAttention (Dao et al. 2022) tiles the scores in shared memory and never
// writes them, saving that traffic and the B H T^2 saved probabilities, at the price of a few
// hundred lines of hand-written kernel with an online softmax and a backward that recomputes
// the scores; here every step is a library GEMM or a row kernel of ten lines that a reader can
// check against attention.cc, and P is saved as the CPU twin saves it.
#include <cmath>
#include <optional>
#include <type_traits>

#include "tensor/attention_heads.h"
#include "tensor/cublas.h"
#include "tensor/cuda_buffer.h"
#include "tensor/cuda_common.h"
#include "tensor/cuda_kernels.h"
#include "tensor/cuda_rows.h"
#include "tensor/gemm.h"
#include "tensor/precision.h"

namespace ringgrad::kernels::cuda {
namespace {

using ringgrad::cuda::DeviceArray;
using ringgrad::cuda::first_row;
using ringgrad::cuda::kThreads;
using ringgrad::cuda::kWarp;
using ringgrad::cuda::row_step;
using ringgrad::cuda::stream;
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

template <typename Kernel, typename... Args>
void launch_rows(int device, std::int64_t rows, Kernel kernel, Args... args) {
  kernel<<<ringgrad::cuda::blocks_for_rows(rows), kThreads, 0, stream(device)>>>(args...);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

// The element type the GEMMs read: T, or at bf16 matmul precision a float's bf16 bits.
using BFloat16Bits = std::uint16_t;
template <typename In, typename T>
__device__ In to_operand(T x) {
  if constexpr (std::is_same_v<In, BFloat16Bits>) {
    return bfloat16_bits(x);
  } else {
    return x;
  }
}

// Between the token layout [B, T, P C] and the heads layout [P, B, H, T, hs]: one thread block
// per head block, its threads over the block's T x hs elements (runs of hs consecutive
// elements on both sides). Into the heads layout the elements become the GEMMs' type In.
template <typename In, typename T>
__global__ void to_heads_kernel(const T* tokens, In* heads, AttentionDims d, std::int64_t parts) {
  const T* from = tokens + token_block_start(d, parts, blockIdx.x);
  In* to = heads + blockIdx.x * d.t * d.hs;
  const int n = static_cast<int>(d.t * d.hs), hs = static_cast<int>(d.hs), row = static_cast<int>(parts * d.c);
  for (int j = static_cast<int>(threadIdx.x); j < n; j += static_cast<int>(blockDim.x)) {
    to[j] = to_operand<In>(from[j / hs * row + j % hs]);
  }
}
template <typename T>
__global__ void from_heads_kernel(const T* heads, T* tokens, AttentionDims d, std::int64_t parts) {
  const T* from = heads + blockIdx.x * d.t * d.hs;
  T* to = tokens + token_block_start(d, parts, blockIdx.x);
  const int n = static_cast<int>(d.t * d.hs), hs = static_cast<int>(d.hs), row = static_cast<int>(parts * d.c);
  for (int j = static_cast<int>(threadIdx.x); j < n; j += static_cast<int>(blockDim.x)) {
    to[j / hs * row + j % hs] = from[j];
  }
}

// [B, T, parts C] -> a new [parts, B, H, T, hs] in the GEMMs' type.
template <typename In, typename T>
DeviceArray<In> to_heads(int device, const AttentionDims& d, std::int64_t parts, const T* tokens) {
  const std::int64_t blocks = parts * d.b * d.h;
  DeviceArray<In> heads(blocks * d.t * d.hs, device);
  const auto grid = static_cast<unsigned>(blocks);
  to_heads_kernel<In, T><<<grid, kThreads, 0, stream(device)>>>(tokens, heads.data(), d, parts);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
  return heads;
}
template <typename T>
void from_heads(int device, const AttentionDims& d, std::int64_t parts, const T* heads, T* tokens) {
  const std::int64_t blocks = parts * d.b * d.h;
  const auto grid = static_cast<unsigned>(blocks);
  from_heads_kernel<T><<<grid, kThreads, 0, stream(device)>>>(heads, tokens, d, parts);
  RINGGRAD_CUDA_CHECK(cudaGetLastError());
}

// n elements of x as the GEMMs read them: x itself, or a bf16 copy made once.
template <typename In, typename T>
class Operand {
 public:
  Operand(int device, const T* x, std::int64_t n) {
    if constexpr (std::is_same_v<In, T>) {
      data_ = x;
    } else {
      copy_.emplace(n, device);
      ringgrad::cuda::to_bfloat16(x, copy_->data(), n, device);
      data_ = copy_->data();
    }
  }
  const In* data() const { return data_; }

 private:
  std::optional<DeviceArray<In>> copy_;
  const In* data_ = nullptr;
};

// attention_heads.h's batched GEMM on operands of type In, output T: one cuBLAS call.
template <typename In, typename T>
void batched_gemm(int device, const AttentionDims& d, HeadsProduct product, T alpha, const In* a, const In* b, T* c) {
  if constexpr (std::is_same_v<In, T>) {
    const HeadsGemm<T> g = heads_gemm<T>(d, product, alpha, a, b, c);
    kernels::gemm_batched(cuda_device(device), g.args, g.batch);
  } else {
    const HeadsGemm<float> g = heads_gemm<float>(d, product, alpha, nullptr, nullptr, c);
    ringgrad::cuda::gemm_batched_bfloat16(device, g.args, a, b, g.batch);
  }
}

// fn.template operator()<T, In>() for qkv's element type T and the GEMMs' type In.
template <typename Fn>
void dispatch_operands(DType dtype, const char* op, Fn&& fn) {
  dispatch_floating(dtype, op, [&]<typename T>() {
    if constexpr (std::is_same_v<T, float>) {
      if (matmul_precision() == MatmulPrecision::kBFloat16) return fn.template operator()<T, BFloat16Bits>();
    }
    fn.template operator()<T, T>();
  });
}

AttentionDims dims_of(const Tensor& qkv, std::int64_t n_head) {
  const std::int64_t c = qkv.size(2) / 3;
  return {qkv.size(0), qkv.size(1), c, n_head, c / n_head};
}

}  // namespace

void causal_attention(const Tensor& qkv, std::int64_t n_head, const Tensor& y, const Tensor& att) {
  const AttentionDims d = dims_of(qkv, n_head);
  const int device = qkv.device().index;
  if (d.b * d.t * d.c == 0) return;
  ringgrad::cuda::DeviceGuard guard(device);
  dispatch_operands(qkv.dtype(), "causal_attention", [&]<typename T, typename In>() {
    const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(d.hs)));
    const std::int64_t n = d.b * d.h * d.t * d.hs, rows = d.b * d.h * d.t;  // elements of q in heads; score rows
    const DeviceArray<In> heads = to_heads<In>(device, d, 3, qkv.data<T>());
    const In *q = heads.data(), *k = q + n, *v = k + n;
    batched_gemm<In, T>(device, d, HeadsProduct::kRowsRowsT, scale, q, k, att.data<T>());  // S = Q K^T / sqrt(hs)
    launch_rows(device, rows, causal_softmax_kernel<T>, att.data<T>(), rows, d.t);
    const Operand<In, T> p(device, att.data<T>(), rows * d.t);
    const DeviceArray<T> yh(n, device);
    batched_gemm<In, T>(device, d, HeadsProduct::kScoresRows, T(1), p.data(), v, yh.data());  // Y = P V
    from_heads(device, d, 1, yh.data(), y.data<T>());
  });
}

void causal_attention_backward(const Tensor& dy, const Tensor& qkv, const Tensor& att, std::int64_t n_head,
                               const Tensor& dqkv) {
  const AttentionDims d = dims_of(qkv, n_head);
  const int device = qkv.device().index;
  if (d.b * d.t * d.c == 0) return;
  ringgrad::cuda::DeviceGuard guard(device);
  dispatch_operands(qkv.dtype(), "causal_attention_backward", [&]<typename T, typename In>() {
    const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(d.hs)));
    const std::int64_t n = d.b * d.h * d.t * d.hs, rows = d.b * d.h * d.t;
    const DeviceArray<In> heads = to_heads<In>(device, d, 3, qkv.data<T>());
    const DeviceArray<In> g = to_heads<In>(device, d, 1, dy.data<T>());
    const In *q = heads.data(), *k = q + n, *v = k + n;
    const DeviceArray<T> grads(3 * n, device);  // dq, dk, dv in the heads layout
    T *dq = grads.data(), *dk = dq + n, *dv = dk + n;
    const DeviceArray<T> ds(rows * d.t, device);  // dP, then dS
    batched_gemm<In, T>(device, d, HeadsProduct::kRowsRowsT, T(1), g.data(), v, ds.data());  // dP = dY V^T
    {  // P's bf16 copy is returned before dS's is made
      const Operand<In, T> p(device, att.data<T>(), rows * d.t);
      batched_gemm<In, T>(device, d, HeadsProduct::kScoresTRows, T(1), p.data(), g.data(), dv);  // dV = P^T dY
    }
    launch_rows(device, rows, causal_softmax_backward_kernel<T>, ds.data(), static_cast<const T*>(att.data<T>()), rows,
                d.t);
    const Operand<In, T> s(device, static_cast<const T*>(ds.data()), rows * d.t);
    batched_gemm<In, T>(device, d, HeadsProduct::kScoresRows, scale, s.data(), k, dq);   // dQ = dS K / sqrt(hs)
    batched_gemm<In, T>(device, d, HeadsProduct::kScoresTRows, scale, s.data(), q, dk);  // dK = dS^T Q / sqrt(hs)
    from_heads(device, d, 3, static_cast<const T*>(grads.data()), dqkv.data<T>());
  });
}

}  // namespace ringgrad::kernels::cuda
