// Ring attention (Liu, Zaharia & Abbeel 2023): causal self-attention over a sequence cut into c
// contiguous blocks, one per rank of a context-parallel group. Rank r keeps its queries (block
// r) and passes the key/value blocks around the ring, r -> r+1, c - 1 times; each rank sees
// every block once and merges the partial attention of each with the online-softmax rule:
//
//   for a block with scores s_j (j over its keys) and values v_j, per query row:
//     m' = max(m, max_j s_j);   l' = l e^(m - m') + sum_j e^(s_j - m');
//     o' = o e^(m - m') + sum_j e^(s_j - m') v_j;    at the end y = o / l, lse = m + log l
//
// Causal: block src < r is attended whole, block r under the lower triangle, blocks src > r
// not at all (skipped: later ranks do more work, the load imbalance that zig-zag layouts fix).
// Backward passes (k, v, dk, dv) around the ring c times, so each block's gradients come back
// to its owner: dV += P^T dY, dP = dY V^T, dS = P (dP - D) with D = rowsum(dY Y),
// dQ += dS K / sqrt(hs), dK += dS^T Q / sqrt(hs), P = exp(S / sqrt(hs) - lse).
// Communication per layer: forward (c - 1) messages of 2 B (T/c) C elements, backward c of 4.
//
// The arithmetic is written as plain loops in double precision (the naive version: clear, on
// the CPU, for the small models this project trains); the ring is the point.
#pragma once

#include <cstdint>

#include "collectives/communicator.h"
#include "tensor/tensor.h"

namespace ringgrad::nn::parallel {

/// qkv: [B, T/c, 3C] (float32/float64, CPU), this rank's positions [r T/c, (r+1) T/c) of the
/// fused projection (q, k, v side by side, head h at channels h hs .. (h+1) hs of each, as
/// causal_self_attention) -> [B, T/c, C], equal to those rows of causal_self_attention on the
/// whole sequence. Every rank of `group` calls it with the same shape. Throws
/// std::invalid_argument when the last dim is not 3C with C divisible by n_head.
Tensor ring_attention(const Tensor& qkv, std::int64_t n_head, collectives::Communicator& group);

}  // namespace ringgrad::nn::parallel
