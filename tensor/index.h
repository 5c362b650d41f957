// Indexing by int64 tensors: the row lookups behind embeddings and the per-class picks behind
// cross-entropy, with their scatter-add inverses for backward. Every index is bounds-checked.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// Rows of `table` ([N, ...]) picked by `index` (int64, any shape) -> [*index.shape, ...].
/// Throws std::out_of_range naming the bad index and N.
Tensor index_select(const Tensor& table, const Tensor& index);
/// dst[index[i]] += src[i] row by row: the inverse of index_select (repeated rows add up).
void index_add_(const Tensor& dst, const Tensor& index, const Tensor& src);

/// out[..., j, ...] = input[..., index[..., j, ...], ...] along `dim` (torch.gather):
/// `index` has input's rank and the result has index's shape.
Tensor gather(const Tensor& input, std::int64_t dim, const Tensor& index);
/// dst[..., index[..., j, ...], ...] += src[..., j, ...] along `dim`: the inverse of gather.
void scatter_add_(const Tensor& dst, std::int64_t dim, const Tensor& index, const Tensor& src);

}  // namespace ringgrad::kernels
