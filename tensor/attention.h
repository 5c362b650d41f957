// Causal multi-head scaled dot-product attention (Vaswani et al. 2017), forward and backward,
// reading q, k and v straight out of the fused [B, T, 3C] projection (no split, no transpose
// copies). Per (batch, head): S = Q K^T / sqrt(hs) and Y = P V as GEMMs on strided rows,
// P = softmax(S) over the causal prefix j <= t only. Cost 4 B T^2 C flops forward, twice that
// backward, of which the CPU kernels skip the masked triangle: (n + 1) / 2n of it for n blocks
// of 32 rows. The saved probabilities take B H T^2 elements.
//
// On the CPU, float32 calls with hs a multiple of 16 run tensor/attention_tiles.h's register
// tiles where the CPU has AVX2 and FMA (RINGGRAD_ATTENTION_TILES=0 keeps the GEMM path); every
// other call (float64, other head sizes, bf16 matmul precision) takes the GEMM path.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

struct AttentionOutput {
  Tensor y;    // [B, T, C], heads side by side along C
  Tensor att;  // [B, H, T, T] softmax probabilities, zero above the diagonal (saved for backward)
};

/// Letters: B batch, T time, C channels, H heads, hs = C / H head size.
/// qkv: [B, T, 3C] float32/float64, q = qkv[..., 0:C], k = [..., C:2C], v = [..., 2C:3C];
/// head h uses channels h*hs .. (h+1)*hs of each. Row t attends to rows 0..t (causal mask).
/// On a GPU: attention.cu, its GEMMs on cuBLAS. float32 GEMMs follow the matmul precision
/// (tensor/precision.h); the softmax stays float32.
/// Throws std::invalid_argument when qkv is not [B, T, 3C] with C divisible by n_head.
AttentionOutput causal_attention(const Tensor& qkv, std::int64_t n_head);

/// d qkv [B, T, 3C] from dy [B, T, C], the forward input and its saved probabilities:
/// dV = P^T dY, dP = dY V^T, dS = P (dP - rowsum(dP P)), dQ = dS K / sqrt(hs), dK = dS^T Q / sqrt(hs).
Tensor causal_attention_backward(const Tensor& dy, const Tensor& qkv, const Tensor& att, std::int64_t n_head);

}  // namespace ringgrad::kernels
