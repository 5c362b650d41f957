// Matrix product with batch broadcasting, as torch.matmul for inputs of 2 or more dims.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// a: [..., M, K], b: [..., K, N] -> [..., M, N]; batch dims broadcast. Transposed views are
/// passed to GEMM as transposes, not copied. Both inputs float32 or both float64.
/// Throws std::invalid_argument naming both shapes when K differs or a rank is below 2.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace ringgrad::kernels
