// The heads layout, in which every product of causal attention is one strided-batched GEMM over
// all B H heads (tensor/attention.cu). The fused projection's layout, qkv [B, T, 3C], puts head
// h of batch element b at column h hs of rows b T .. b T + T - 1: a two-level stride (hs between
// heads, T 3C between batch elements) that one strided-batched call cannot step through. The
// heads layout [P, B, H, T, hs] (P = 3 for q, k, v; 1 for y or dy) gives each (part, batch, head)
// its own contiguous T x hs block, as PyTorch's q.view(B, T, H, hs).transpose(1, 2).contiguous()
// does, so head pair i = b H + h of every operand starts i blocks after pair 0's:
//
//   token layout  [B, T, P C]      element (b, t, p, h, e) at ((b T + t) P + p) C + h hs + e
//   heads layout  [P, B, H, T, hs] element (p, b, h, t, e) at (((p B + b) H + h) T + t) hs + e
//   scores        [B, H, T, T]     one T x T block per pair, T^2 apart
//
// Plain C++ (host and device), so the CPU tests run the same plan.
#pragma once

#include <cstdint>

#include "tensor/attention_tiles.h"  // AttentionDims
#include "tensor/gemm.h"
#include "tensor/host_device.h"

namespace ringgrad::kernels {

/// Where block `block` = (p B + b) H + h of the heads layout (part p, batch element b, head h)
/// starts in the token layout [B, T, P C]: its row t is t P C elements further on.
RINGGRAD_HOST_DEVICE inline std::int64_t token_block_start(const AttentionDims& d, std::int64_t parts,
                                                           std::int64_t block) {
  const std::int64_t h = block % d.h, b = block / d.h % d.b, p = block / (d.h * d.b);
  return (b * d.t * parts + p) * d.c + h * d.hs;
}

/// The three shapes attention's six products take, per head pair. "Rows" are a [T, hs] block
/// of the heads layout (q, k, v, dy or their gradients), "scores" a [T, T] block (P or dS).
enum class HeadsProduct {
  kRowsRowsT,    // rows x rows^T -> scores: S = Q K^T, dP = dY V^T
  kScoresRows,   // scores x rows -> rows:   Y = P V, dQ = dS K
  kScoresTRows,  // scores^T x rows -> rows: dV = P^T dY, dK = dS^T Q
};

/// One GEMM per head pair, all B H of them in one batch.
template <typename T>
struct HeadsGemm {
  GemmArgs<T> args;  // pair 0's product: c = alpha op(a) op(b)
  GemmBatch batch;   // B H entries, each operand one block further on
};

/// The batched GEMM of `product` on operands starting at a, b (pair 0's blocks) into c.
template <typename T>
HeadsGemm<T> heads_gemm(const AttentionDims& d, HeadsProduct product, T alpha, const T* a, const T* b, T* c) {
  const std::int64_t rows = d.t * d.hs, scores = d.t * d.t;  // elements of one block of each kind
  HeadsGemm<T> g;
  g.args.alpha = alpha, g.args.a = a, g.args.b = b, g.args.c = c;
  g.batch.count = d.b * d.h;
  if (product == HeadsProduct::kRowsRowsT) {
    g.args.trans_b = true;
    g.args.m = d.t, g.args.n = d.t, g.args.k = d.hs;
    g.args.lda = d.hs, g.args.ldb = d.hs, g.args.ldc = d.t;
    g.batch.stride_a = rows, g.batch.stride_b = rows, g.batch.stride_c = scores;
  } else {
    g.args.trans_a = product == HeadsProduct::kScoresTRows;
    g.args.m = d.t, g.args.n = d.hs, g.args.k = d.t;
    g.args.lda = d.t, g.args.ldb = d.hs, g.args.ldc = d.hs;
    g.batch.stride_a = scores, g.batch.stride_b = rows, g.batch.stride_c = rows;
  }
  return g;
}

}  // namespace ringgrad::kernels
