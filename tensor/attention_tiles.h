// Causal attention's float32 CPU kernels in register tiles, for x86 CPUs with AVX2 and FMA: the
// same steps as attention.cc's GEMM path (scores, a masked softmax, the weighted sum of values,
// and the backward's five products), each product computed by a 4 x 16 tile kernel whose eight
// accumulators stay in vector registers. At a baby GPT's sizes (T = 64, hs = 32) a library GEMM
// gets 2^15 to 2^16 multiply-adds a call and pays its checks and packing every time; here nothing
// is packed but the one operand read across (K^T or V^T, a head's hs x T copy), and the softmax
// runs on whole 16-column tiles, its masked lanes selected to zero rather than looped around.
//
// Results differ from the GEMM path's in rounding only: FMA instead of a multiply and an add,
// sums in another order (tests/transformer/test_ops.cc bounds the difference).
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace ringgrad::kernels {

/// B batch, T time, C channels, H heads, hs = C / H head size (tensor/attention.h's letters).
struct AttentionDims {
  std::int64_t b, t, c, h, hs;
};

/// Whether the tile kernels take a CPU attention call: float32, hs a multiple of 16, a CPU with
/// AVX2 and FMA, and RINGGRAD_ATTENTION_TILES not "0" (read once; "0" keeps the GEMM path, for
/// comparing the two). The caller checks the rest (a CPU tensor, float32 matmul precision).
/// Throws std::invalid_argument when RINGGRAD_ATTENTION_TILES is set to anything but "0" or "1".
bool attention_tiles_run(DType dtype, std::int64_t hs);

/// y [B, T, C] and att [B, H, T, T] from contiguous qkv [B, T, 3C]; writes every element.
void attention_tiles_forward(const float* qkv, const AttentionDims& d, float* y, float* att);

/// dqkv [B, T, 3C] from contiguous dy [B, T, C], qkv and att; writes every element.
void attention_tiles_backward(const float* dy, const float* qkv, const float* att, const AttentionDims& d,
                              float* dqkv);

}  // namespace ringgrad::kernels
