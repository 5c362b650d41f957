// CUDA twin of linear.cc's bias gradient (its GEMMs run on cuBLAS through gemm_batched):
// the column sums of dy, 32 columns and a slice of rows per block (cuda_column_sums.h).
#include "tensor/cuda_column_sums.h"
#include "tensor/cuda_kernels.h"

namespace ringgrad::kernels::cuda {

void linear_bias_backward(const Tensor& dy, std::int64_t rows, std::int64_t out_features, const Tensor& db) {
  dispatch_floating(dy.dtype(), "linear_backward", [&]<typename T>() {
    ringgrad::cuda::column_sums(dy.device().index, ringgrad::cuda::MatrixElement<T>{dy.data<T>(), out_features}, rows,
                                out_features, db.data<T>());
  });
}

}  // namespace ringgrad::kernels::cuda
