// The CPU causal attention kernels: per (batch, head) GEMMs for the scores on strided rows of
// qkv, a masked softmax of each row up to the diagonal, GEMMs for the output, all taken a block
// of rows at a time so the masked triangle is skipped; the backward retraces the same steps
// from the saved probabilities.
#include "tensor/attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "tensor/attention_tiles.h"
#include "tensor/cpu_clones.h"
#include "tensor/cuda_kernels.h"
#include "tensor/exp_poly.h"
#include "tensor/gemm.h"
#include "tensor/lanes.h"
#include "tensor/precision.h"
#include "tensor/view.h"

namespace ringgrad::kernels {
namespace {

using Dims = AttentionDims;

Dims check_qkv(const Tensor& qkv, std::int64_t n_head) {
  if (qkv.dim() != 3 || n_head < 1 || qkv.size(2) % (3 * n_head) != 0) {
    throw std::invalid_argument(fmt::format("causal_attention: need qkv [B, T, 3C] with C divisible by {} heads, got {}",
                                            n_head, shape_str(qkv.shape())));
  }
  const std::int64_t c = qkv.size(2) / 3;
  return {qkv.size(0), qkv.size(1), c, n_head, c / n_head};
}

// exp of the softmax: exp_poly for float (std::exp was a tenth of the attention time), std::exp
// for double.
template <typename T>
T softmax_exp(T x) {
  if constexpr (std::is_same_v<T, float>) {
    return exp_poly(x);
  } else {
    return std::exp(x);
  }
}

// Rows [r0, r1) of P (T x T) become the softmax of their first t+1 entries, zero beyond: the
// causal mask.
template <typename T>
RINGGRAD_CPU_CLONES void causal_softmax_rows(T* p, std::int64_t r0, std::int64_t r1, std::int64_t t_len) {
  for (std::int64_t t = r0; t < r1; ++t) {
    T* pr = p + t * t_len;
    const T mx = max_lanes(pr, t + 1);
    for (std::int64_t j = 0; j <= t; ++j) pr[j] = softmax_exp(pr[j] - mx);
    const T inv = 1 / sum_lanes<T>(t + 1, [&](std::int64_t j) { return pr[j]; });
    for (std::int64_t j = 0; j <= t; ++j) pr[j] *= inv;
    std::fill(pr + t + 1, pr + t_len, T(0));
  }
}

// Rows [r0, r1) of dP (T x T, in ds) become dS = P * (dP - rowsum(dP * P)) on the causal
// prefix, zero beyond.
template <typename T>
RINGGRAD_CPU_CLONES void causal_softmax_backward_rows(const T* p, T* ds, std::int64_t r0, std::int64_t r1,
                                                      std::int64_t t_len) {
  for (std::int64_t t = r0; t < r1; ++t) {
    const T* pr = p + t * t_len;
    T* sr = ds + t * t_len;
    const T dot = sum_lanes<T>(t + 1, [&](std::int64_t j) { return sr[j] * pr[j]; });
    for (std::int64_t j = 0; j <= t; ++j) sr[j] = pr[j] * (sr[j] - dot);
    std::fill(sr + t + 1, sr + t_len, T(0));
  }
}

// C = alpha op(A) op(B): the one GEMM shape every step below uses.
template <typename T>
void gemm_strided(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a,
                  std::int64_t lda, const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  GemmArgs<T> g;
  g.trans_a = ta, g.trans_b = tb, g.m = m, g.n = n, g.k = k, g.alpha = alpha;
  g.a = a, g.lda = lda, g.b = b, g.ldb = ldb, g.beta = 0, g.c = c, g.ldc = ldc;
  gemm(g);
}

// The causal mask leaves the upper triangle of each T x T block zero, so the GEMMs skip it:
// rows are taken kRowBlock at a time, and rows [r0, r1) meet only keys [0, r1). S, P V, dP and
// dQ then cost (n + 1) / 2n of the full products for n = T / kRowBlock blocks (3/4 at T = 64),
// and dV and dK, which sum over rows, start their sums at the key block's first row (the same
// share; exactly so when kRowBlock divides T). The skipped terms are exact zeros, so the results
// are the full products' up to rounding: OpenBLAS may pick other kernels for the smaller shapes.
constexpr std::int64_t kRowBlock = 32;

// Whether attention_tiles.h's kernels take this call: a float32 CPU call at float32 matmul
// precision (bf16 GEMMs round their inputs, which the tiles do not).
bool tiles_take(const Tensor& qkv, const Dims& d) {
  return !qkv.is_cuda() && matmul_precision() == MatmulPrecision::kFloat32 && attention_tiles_run(qkv.dtype(), d.hs);
}

// The forward pass of contiguous qkv into `out`.
void causal_attention_into(const Tensor& qkv, const Dims& d, const AttentionOutput& out) {
  RINGGRAD_ON_CUDA(qkv, cuda::causal_attention(qkv, d.h, out.y, out.att));
  if (tiles_take(qkv, d)) return attention_tiles_forward(qkv.data<float>(), d, out.y.data<float>(), out.att.data<float>());
  dispatch_floating(qkv.dtype(), "causal_attention", [&]<typename T>() {
    const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(d.hs)));
    const std::int64_t row = 3 * d.c;  // stride between time steps in qkv
    for (std::int64_t b = 0; b < d.b; ++b) {
      for (std::int64_t h = 0; h < d.h; ++h) {
        const T* q = qkv.data<T>() + b * d.t * row + h * d.hs;
        const T* k = q + d.c;
        const T* v = q + 2 * d.c;
        T* p = out.att.data<T>() + (b * d.h + h) * d.t * d.t;
        T* y = out.y.data<T>() + b * d.t * d.c + h * d.hs;
        for (std::int64_t r0 = 0; r0 < d.t; r0 += kRowBlock) {
          const std::int64_t r1 = std::min(r0 + kRowBlock, d.t), rows = r1 - r0;
          T* pr = p + r0 * d.t;
          gemm_strided<T>(false, true, rows, r1, d.hs, scale, q + r0 * row, row, k, row, pr, d.t);  // S = Q K^T / sqrt(hs)
          causal_softmax_rows(p, r0, r1, d.t);
          gemm_strided<T>(false, false, rows, d.hs, r1, 1, pr, d.t, v, row, y + r0 * d.c, d.c);  // Y = P V
        }
      }
    }
  });
}

// The backward pass into dqkv; dy, qkv and att contiguous.
void causal_attention_backward_into(const Tensor& dy, const Tensor& qkv, const Tensor& att, const Dims& d,
                                    const Tensor& dqkv) {
  RINGGRAD_ON_CUDA(qkv, cuda::causal_attention_backward(dy, qkv, att, d.h, dqkv));
  if (tiles_take(qkv, d)) {
    return attention_tiles_backward(dy.data<float>(), qkv.data<float>(), att.data<float>(), d, dqkv.data<float>());
  }
  Tensor scratch = Tensor::empty({d.t, d.t}, qkv.dtype());  // dP, then dS, of one head
  dispatch_floating(qkv.dtype(), "causal_attention_backward", [&]<typename T>() {
    const T scale = static_cast<T>(1 / std::sqrt(static_cast<double>(d.hs)));
    const std::int64_t row = 3 * d.c;
    T* ds = scratch.data<T>();
    for (std::int64_t b = 0; b < d.b; ++b) {
      for (std::int64_t h = 0; h < d.h; ++h) {
        const std::int64_t base = b * d.t * row + h * d.hs;
        const T* q = qkv.data<T>() + base;
        const T* k = q + d.c;
        const T* v = q + 2 * d.c;
        T* dq = dqkv.data<T>() + base;
        T* dk = dq + d.c;
        T* dv = dq + 2 * d.c;
        const T* p = att.data<T>() + (b * d.h + h) * d.t * d.t;
        const T* g = dy.data<T>() + b * d.t * d.c + h * d.hs;
        for (std::int64_t r0 = 0; r0 < d.t; r0 += kRowBlock) {  // rows [r0, r1) see keys [0, r1)
          const std::int64_t r1 = std::min(r0 + kRowBlock, d.t), rows = r1 - r0;
          gemm_strided<T>(false, true, rows, r1, d.hs, 1, g + r0 * d.c, d.c, v, row, ds + r0 * d.t, d.t);  // dP = dY V^T
          causal_softmax_backward_rows(p, ds, r0, r1, d.t);
          gemm_strided<T>(false, false, rows, d.hs, r1, scale, ds + r0 * d.t, d.t, k, row, dq + r0 * row, row);  // dQ = dS K
        }
        for (std::int64_t k0 = 0; k0 < d.t; k0 += kRowBlock) {  // keys [k0, k1) are seen by rows [k0, T)
          const std::int64_t k1 = std::min(k0 + kRowBlock, d.t), rows = d.t - k0;
          const T* pk = p + k0 * d.t + k0;
          const T* sk = ds + k0 * d.t + k0;
          gemm_strided<T>(true, false, k1 - k0, d.hs, rows, 1, pk, d.t, g + k0 * d.c, d.c, dv + k0 * row, row);  // dV = P^T dY
          gemm_strided<T>(true, false, k1 - k0, d.hs, rows, scale, sk, d.t, q + k0 * row, row, dk + k0 * row, row);  // dK = dS^T Q
        }
      }
    }
  });
}

}  // namespace

AttentionOutput causal_attention(const Tensor& qkv_in, std::int64_t n_head) {
  const Dims d = check_qkv(qkv_in, n_head);
  const Tensor qkv = contiguous(qkv_in);
  // Written in full: each head's GEMMs fill its channels of y and its T x T block of att.
  AttentionOutput out{Tensor::empty({d.b, d.t, d.c}, qkv.dtype(), qkv.device()),
                      Tensor::empty({d.b, d.h, d.t, d.t}, qkv.dtype(), qkv.device())};
  causal_attention_into(qkv, d, out);
  return out;
}

Tensor causal_attention_backward(const Tensor& dy, const Tensor& qkv, const Tensor& att, std::int64_t n_head) {
  const Dims d = check_qkv(qkv, n_head);
#if RINGGRAD_HAVE_CUDA
  cuda::check_same_device("causal_attention_backward", qkv, dy);
  cuda::check_same_device("causal_attention_backward", qkv, att);
#endif
  Tensor dqkv = Tensor::empty(qkv.shape(), qkv.dtype(), qkv.device());  // every head writes its q, k, v slices
  causal_attention_backward_into(contiguous(dy), contiguous(qkv), contiguous(att), d, dqkv);
  return dqkv;
}

}  // namespace ringgrad::kernels
