// Matrix product with batch broadcasting, as torch.matmul for inputs of 2 or more dims.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// a: [..., M, K], b: [..., K, N] -> [..., M, N]; batch dims broadcast. Transposed views are
/// passed to GEMM as transposes, not copied. Both inputs float32 or both float64, on one device
/// (on a GPU: one strided-batched cuBLAS call). float32 follows the matmul precision
/// (tensor/precision.h). Throws std::invalid_argument naming both shapes when K differs or a
/// rank is below 2, or naming both devices when they differ.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace ringgrad::kernels
