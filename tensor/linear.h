// The affine map of a Linear layer, forward and backward, as three GEMMs on the layouts the
// tensors already have (the weight is read transposed, never copied): the bias is copied into
// y's rows and the GEMM accumulates onto it (beta = 1); its gradient is a column sum.
// Cost 2 N in out flops forward, twice that backward.
#pragma once

#include "tensor/tensor.h"

namespace ringgrad::kernels {

/// y = x W^T + b. x: [..., in], weight W: [out, in], bias b: [out] or undefined -> y: [..., out].
/// All float32 or all float64, all on one device (a GPU's GEMMs run on cuBLAS); float32 GEMMs
/// follow the matmul precision (tensor/precision.h). Throws std::invalid_argument naming the
/// shapes when they differ, or the devices.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

struct LinearGrads {
  Tensor dx;       // [..., in]; undefined unless need_dx
  Tensor dweight;  // [out, in] = dy^T x, summed over all leading dims; undefined unless need_dweight
  Tensor dbias;    // [out] = column sums of dy; undefined unless has_bias
};

/// Gradients of linear given dy: [..., out]. dx = dy W. A zero-bubble pipeline asks for dx
/// (and db) first and for dW later, in two calls.
LinearGrads linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, bool has_bias, bool need_dx,
                            bool need_dweight = true);

}  // namespace ringgrad::kernels
