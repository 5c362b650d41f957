// Ring attention (Liu, Zaharia & Abbeel 2023): causal self-attention over a sequence cut into c
// contiguous blocks, one per rank of a context-parallel group. Layout: rank r holds positions
// [r T/c, (r+1) T/c) of q, k and v ([B, T/c, 3C]) and every weight; it keeps its queries and
// passes the key/value blocks around the ring, r -> r+1, c - 1 times, so each rank sees every
// block once and merges the partial attention of each with the online-softmax rule:
//
//   for a block with scores s_j (j over its keys) and values v_j, per query row:
//     m' = max(m, max_j s_j);   l' = l e^(m - m') + sum_j e^(s_j - m');
//     o' = o e^(m - m') + sum_j e^(s_j - m') v_j;    at the end y = o / l, lse = m + log l
//
// Causal: block src < r is attended whole, block r under the lower triangle, blocks src > r
// not at all (skipped: later ranks do more work, the load imbalance that zig-zag layouts fix).
// Backward passes the k, v blocks around the ring the same way, and each block's gradient
// (dk, dv) one step behind them, summed rank by rank until, after c passes, it is home:
// dV += P^T dY, dP = dY V^T, dS = P (dP - D) with D = rowsum(dY Y),
// dQ += dS K / sqrt(hs), dK += dS^T Q / sqrt(hs), P = exp(S / sqrt(hs) - lse).
// Traffic per layer, each rank sending and receiving messages of 2 B (T/c) C elements:
// forward c - 1 (k, v), backward c - 1 (k, v) and c (dk, dv).
//
// Overlap, the point of the ring: each step posts the transfer of the block in hand to r+1
// (batch_isend_irecv, run by the communicator's worker thread) before computing with it, and
// waits only after the compute; the gradient sum goes on to r+1 while the next block computes.
// With compute longer than transfer, only backward's last gradient pass is exposed. A timeline
// (timeline.h) shows each block's compute (category "ring_attention") and, on a row of their
// own, the transfers from posted to arrived (category "transfer").
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
