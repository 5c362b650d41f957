// QK-norm: each head's query and key scaled to unit root-mean-square before attention, so the
// scores q . k / sqrt(d) stay in a fixed range however the weights grow (Henry et al. 2020,
// "Query-Key Normalization for Transformers"; Dehghani et al. 2023 for its use at scale; the
// weightless RMS form of the modded-nanogpt speedruns). For a head vector x of size d:
//
//   r = sqrt(mean(x^2) + eps),  y = x / r;   backward  dx = (dy - y mean(dy * y)) / r.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// qkv [B, T, 3C] (the fused projection, n_head heads of C / n_head in each of q, k and v) with
/// every q and k head vector divided by its root-mean-square; v unchanged. float32 or float64 on
/// the CPU. Throws std::invalid_argument naming the shape when 3C does not split into n_head
/// heads, std::invalid_argument for a GPU tensor (not built there yet).
Tensor qk_norm(const Tensor& qkv, std::int64_t n_head, double eps = 1e-6);

/// The gradient of qk_norm at input `qkv` for the output gradient `grad` (both [B, T, 3C]): the
/// formula above on q and k, grad passed through on v. Throws as qk_norm.
Tensor qk_norm_backward(const Tensor& grad, const Tensor& qkv, std::int64_t n_head, double eps = 1e-6);

}  // namespace ringgrad::kernels
