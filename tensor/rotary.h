// Rotary position embeddings (Su et al. 2021, "RoFormer"): instead of adding a position vector
// to the input, rotate each head's query and key. Pair i of a head of size d (dims i and
// i + d/2, the half-split layout of GPT-NeoX and Llama) at position t is turned by the angle
// t * base^(-2i/d), so q_t . k_s depends on t - s only: attention sees relative positions.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// qkv [B, T, 3C] (the fused projection: q, k, v of n_head heads of C / n_head each) with q
/// and k rotated by their positions offset .. offset+T-1 (offset: where this slice of the
/// sequence starts, as under context parallelism), v unchanged; with `inverse` the rotation
/// back (its transpose: what backward applies to the gradient). float32 or float64 on the CPU.
/// Throws std::invalid_argument naming the shape when 3C is not divisible into n_head heads of
/// even size, std::invalid_argument for a GPU tensor (not built there yet).
Tensor rotary(const Tensor& qkv, std::int64_t n_head, bool inverse = false, std::int64_t offset = 0,
              double base = 10000.0);

}  // namespace ringgrad::kernels
